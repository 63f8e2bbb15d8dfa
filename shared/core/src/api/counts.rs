//! Count limits on a request body: segments, words, keys per object, nesting and values.
//!
//! Bytes alone do not bound what a body costs: `{}` is 2 bytes of JSON and a whole segment
//! (hundreds of bytes) once parsed, so a 2 KB gzip body can expand to a tree larger than
//! the function's memory. One pass over the bytes, allocating nothing, checks the counts
//! before the typed parse builds anything, and stops at the first element past a limit.
//!
//! The limits are set from real calls (a 60-minute call has about 1,000 turns and 9,000
//! words) and from the 32 MiB a body may expand to: a realistic call at that cap fits with
//! room to spare; a body of empty objects or tiny values at that cap does not.

use std::borrow::Cow;

use super::problem::{Code, Violation};

/// Most segments (operation B's `transcript_with_tool_calls`, operation A's `transcript`).
pub const MAX_SEGMENTS: usize = 50_000;
/// Most words in one segment.
pub const MAX_WORDS_PER_SEGMENT: usize = 20_000;
/// Most words in one call.
pub const MAX_WORDS: usize = 400_000;
/// Most members of one object.
pub const MAX_KEYS: usize = 10_000;
/// Deepest nesting of arrays and objects (the body itself is level 1).
pub const MAX_DEPTH: usize = 64;
/// Most JSON values in one body, at any depth, words aside (each has its own limit): every
/// value counts 1, each array and object [`CONTAINER_WEIGHT`] more, and each member of an
/// object [`MEMBER_WEIGHT`] more. Once read, a value in an array takes 32 bytes, a member of
/// a free-form object about 130, and an array or object holding anything at least 128.
pub const MAX_VALUES: usize = 1_500_000;
/// What a member of an object adds to the count of values, besides its value.
pub const MEMBER_WEIGHT: usize = 2;
/// What an array or object adds to the count of values, besides itself.
pub const CONTAINER_WEIGHT: usize = 3;
/// A word's own fields: read into a word, counted by the words limits, not as values,
/// when each comes once and holds what it should (`word` a string, the others a
/// non-negative number). Anything else a word holds counts like any member: a repeated or
/// wrong-typed field costs a note once read, and is what a body would repeat to cost more.
const WORD_FIELDS: [(&str, FieldKind); 4] = [
    ("word", FieldKind::Text),
    ("start_ms", FieldKind::Number),
    ("end_ms", FieldKind::Number),
    ("confidence", FieldKind::Number),
];
/// Longest key quoted in a limit's pointer, in characters.
const MAX_POINTER_KEY: usize = 64;

#[derive(Debug, Clone, Copy)]
enum FieldKind {
    Text,
    Number,
}

/// Where a body keeps its segments, and whether they carry words.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub segments: &'static str,
    pub words: bool,
}

impl Layout {
    pub const CREATE_CALL: Layout = Layout { segments: "transcript_with_tool_calls", words: true };
    pub const SEND_CALL_DATA: Layout = Layout { segments: "transcript", words: false };
    /// A provider's webhook payload, before it is mapped: no list is B's segments (an empty
    /// name names none, not a root member named ""), so the limits on values, keys and
    /// nesting apply, which bound the JSON tree the mapping reads.
    pub const PROVIDER_PAYLOAD: Layout = Layout { segments: "", words: false };
}

/// What a container is to the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Root,
    Segments,
    Segment,
    Words,
    Word,
    Other,
}

/// What kind of value is starting, as far as the limits care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    /// A number with no minus sign.
    NonNegative,
    /// A negative number, true, false or null.
    Other,
    Array,
    Object,
}

/// An open array or object; `'k`: the body its keys are borrowed from.
struct Frame<'k> {
    array: bool,
    role: Role,
    /// Elements or members so far.
    count: usize,
    /// The current member's key, kept only by a tally that names places (the byte scan):
    /// borrowed from the body when it has no escapes, so that counting a member copies
    /// nothing.
    key: Cow<'k, str>,
    /// The current member's key names the segments (at the root) or the words (in a
    /// segment): a list opened now has that role.
    names_list: bool,
    /// A word's own fields seen so far (bit i: `WORD_FIELDS[i]`).
    seen: u8,
}

/// Which limit a violation is of (its message is written only then, out of the hot path).
#[derive(Debug, Clone, Copy)]
enum Limit {
    Segments,
    WordsPerSegment,
    Words,
    Keys,
    Depth,
    Values,
}

/// A limit's violation, boxed: the counts run for every value, and their `Ok` stays one
/// register wide.
pub(crate) type Over = Box<Violation>;

/// The counts so far, fed one event at a time by whoever reads the body: the byte scan of
/// [`check`], or the typed parse itself (`api::counted`). Each event is refused when it
/// takes a count past its limit, naming where.
pub(crate) struct Tally<'k> {
    layout: Layout,
    stack: Vec<Frame<'k>>,
    values: usize,
    words: usize,
    /// The next value is a word: counted by the words limits.
    uncounted: bool,
    /// The next value is this word field's first: counted by the words limits if it holds
    /// what it should.
    field: Option<usize>,
    /// Whether members' keys are kept, so that a violation's pointer names them. The typed
    /// parse keeps none (storing each key was an eighth of its time): past a limit it
    /// stops, and the byte scan, which keeps them, names the place.
    keep_keys: bool,
}

impl<'k> Tally<'k> {
    /// A tally whose violations point at the element or member past the limit.
    pub(crate) fn naming(layout: Layout) -> Tally<'k> {
        Tally { layout, stack: Vec::new(), values: 0, words: 0, uncounted: false, field: None, keep_keys: true }
    }

    /// A tally that only stops: its violations' pointers have the right indexes but empty
    /// keys (the byte scan of the same body names them).
    pub(crate) fn stopping(layout: Layout) -> Tally<'k> {
        Tally { keep_keys: false, ..Tally::naming(layout) }
    }

    /// A value of `kind` starts; a container is opened (closed by [`Tally::close`]).
    #[inline]
    pub(crate) fn value(&mut self, kind: Kind) -> Result<(), Over> {
        let counted = match self.field.take() {
            Some(i) => {
                let fits = match WORD_FIELDS[i].1 {
                    FieldKind::Text => kind == Kind::Text,
                    FieldKind::Number => kind == Kind::NonNegative,
                };
                if !fits {
                    self.count_values(MEMBER_WEIGHT)?;
                }
                !fits
            }
            None => !std::mem::take(&mut self.uncounted),
        };
        if counted {
            self.count_values(1)?;
        }
        if let Kind::Array | Kind::Object = kind {
            let array = kind == Kind::Array;
            if counted {
                self.count_values(CONTAINER_WEIGHT)?;
            }
            if self.stack.len() + 1 > MAX_DEPTH {
                return Err(self.over(Limit::Depth));
            }
            let role = self.role_of_new(array);
            self.stack.push(Frame { array, role, count: 0, key: Cow::Borrowed(""), names_list: false, seen: 0 });
        }
        Ok(())
    }

    /// The values counted so far (words aside).
    pub(crate) fn values(&self) -> usize {
        self.values
    }

    /// The container on top ends. (A word the counted parse read unwrapped leaves the next
    /// value marked as a word's until the next element, or until its list ends here.)
    pub(crate) fn close(&mut self) {
        self.uncounted = false;
        self.stack.pop();
    }

    /// What a container about to be opened is, from where it stands.
    fn role_of_new(&self, array: bool) -> Role {
        let Some(parent) = self.stack.last() else { return Role::Root };
        match (parent.role, array) {
            (Role::Root, true) if parent.names_list => Role::Segments,
            (Role::Segments, false) => Role::Segment,
            (Role::Segment, true) if parent.names_list => Role::Words,
            (Role::Words, false) => Role::Word,
            _ => Role::Other,
        }
    }

    /// The next element of the array on top starts: a word, when it answers true (the
    /// value that follows is counted by the words limits).
    #[inline]
    pub(crate) fn element(&mut self) -> Result<bool, Over> {
        let Some(top) = self.stack.last_mut() else { return Ok(false) };
        top.count += 1;
        let (role, count) = (top.role, top.count);
        match role {
            Role::Segments if count > MAX_SEGMENTS => Err(self.over(Limit::Segments)),
            Role::Words if count > MAX_WORDS_PER_SEGMENT => Err(self.over(Limit::WordsPerSegment)),
            Role::Words => {
                self.words += 1;
                if self.words > MAX_WORDS {
                    return Err(self.over(Limit::Words));
                }
                self.uncounted = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The next member of the object on top starts, with `key` (decoded).
    #[inline]
    pub(crate) fn member(&mut self, key: Cow<'k, str>) -> Result<(), Over> {
        let Some(top) = self.stack.last_mut() else { return Ok(()) };
        top.count += 1;
        let field = match top.role {
            Role::Word => word_field(&key),
            Role::Root => {
                top.names_list = !self.layout.segments.is_empty() && *key == *self.layout.segments;
                None
            }
            Role::Segment => {
                top.names_list = self.layout.words && key == "words";
                None
            }
            _ => None,
        };
        if self.keep_keys {
            top.key = key;
        }
        if top.count > MAX_KEYS {
            return Err(self.over(Limit::Keys));
        }
        if let Some(i) = field {
            let first = top.seen & (1 << i) == 0;
            top.seen |= 1 << i;
            if first {
                self.field = Some(i);
                return Ok(());
            }
        }
        self.count_values(MEMBER_WEIGHT)
    }

    #[inline]
    fn count_values(&mut self, n: usize) -> Result<(), Over> {
        self.values += n;
        if self.values > MAX_VALUES {
            return Err(self.over(Limit::Values));
        }
        Ok(())
    }

    /// The violation of a limit at the element or member being read.
    #[cold]
    #[inline(never)]
    fn over(&self, limit: Limit) -> Over {
        let message = match limit {
            Limit::Segments => format!("more than {MAX_SEGMENTS} segments in one call"),
            Limit::WordsPerSegment => format!("more than {MAX_WORDS_PER_SEGMENT} words in one segment"),
            Limit::Words => format!("more than {MAX_WORDS} words in one call"),
            Limit::Keys => format!("more than {MAX_KEYS} members in one object"),
            Limit::Depth => format!("nested more than {MAX_DEPTH} levels deep"),
            Limit::Values => format!(
                "more than {MAX_VALUES} values in one body, words aside (an array or object counts {}, a member of an object {} more)",
                CONTAINER_WEIGHT + 1,
                MEMBER_WEIGHT
            ),
        };
        let mut pointer = String::new();
        for frame in &self.stack {
            pointer.push('/');
            if frame.array {
                pointer.push_str(&frame.count.saturating_sub(1).to_string());
            } else {
                let mut chars = frame.key.chars();
                for c in chars.by_ref().take(MAX_POINTER_KEY) {
                    match c {
                        '~' => pointer.push_str("~0"),
                        '/' => pointer.push_str("~1"),
                        c => pointer.push(c),
                    }
                }
                if chars.next().is_some() {
                    // The answer quotes the pointer: a key of megabytes would not fit it.
                    pointer.push('…');
                }
            }
        }
        Box::new(Violation::new(pointer, Code::Limit, message))
    }
}

/// Which of [`WORD_FIELDS`] `key` is: a match the compiler turns into a switch on length,
/// not a loop of string compares (a test keeps it in step with the list).
#[inline]
fn word_field(key: &str) -> Option<usize> {
    match key {
        "word" => Some(0),
        "start_ms" => Some(1),
        "end_ms" => Some(2),
        "confidence" => Some(3),
        _ => None,
    }
}

/// Checks `body` against the count limits, in a pass of its own over the bytes, and
/// answers the values it counted. A body that is not well-formed JSON passes: the parser
/// that follows refuses it with its own, better, message. (The typed parse counts as it
/// reads, `api::counted`; this pass decides when that parse fails, and for a provider's
/// tool arguments.)
pub fn check(body: &[u8], layout: Layout) -> Result<usize, Violation> {
    let mut scan = Scan { body, at: 0, tally: Tally::naming(layout) };
    match scan.values_until_end() {
        Ok(()) | Err(Stop::Malformed) => Ok(scan.tally.values),
        Err(Stop::Over(v)) => Err(v),
    }
}

struct Scan<'a> {
    body: &'a [u8],
    at: usize,
    tally: Tally<'a>,
}

/// Why the scan stopped: past a limit, or at something that is not JSON (left to the
/// parser).
enum Stop {
    Over(Violation),
    Malformed,
}

impl From<Over> for Stop {
    fn from(v: Over) -> Stop {
        Stop::Over(*v)
    }
}

impl Scan<'_> {
    fn values_until_end(&mut self) -> Result<(), Stop> {
        loop {
            self.value()?;
            // After a value: close containers, or move to the next element or member.
            loop {
                let Some(top) = self.tally.stack.last() else { return Ok(()) };
                let array = top.array;
                match self.next_byte()? {
                    b',' if array => {
                        self.tally.element()?;
                        break;
                    }
                    b',' => {
                        self.member()?;
                        break;
                    }
                    b']' if array => self.tally.close(),
                    b'}' if !array => self.tally.close(),
                    _ => return Err(Stop::Malformed),
                }
            }
        }
    }

    /// One value: a scalar is skipped; a container is opened, and its first element or
    /// member started (an empty one is closed at once).
    fn value(&mut self) -> Result<(), Stop> {
        let kind = match self.peek_byte() {
            Some(b'"') => Kind::Text,
            Some(b'[') => Kind::Array,
            Some(b'{') => Kind::Object,
            Some(b) if b.is_ascii_digit() => Kind::NonNegative,
            Some(_) => Kind::Other,
            None => return Err(Stop::Malformed),
        };
        self.tally.value(kind)?;
        self.at += 1;
        match kind {
            Kind::Text => self.string().map(|_| ()),
            Kind::Array | Kind::Object => {
                let close = if kind == Kind::Array { b']' } else { b'}' };
                if self.peek_byte() == Some(close) {
                    self.at += 1;
                    // An empty container is a whole value: back to the caller's loop,
                    // which looks for what follows it.
                    self.tally.close();
                    return Ok(());
                }
                if kind == Kind::Array {
                    self.tally.element()?;
                } else {
                    self.member()?;
                }
                self.value()
            }
            _ => {
                // A number, true, false or null: up to the next delimiter.
                while let Some(&b) = self.body.get(self.at) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.at += 1;
                }
                Ok(())
            }
        }
    }

    /// Reads the next member's key and colon, of the object on top.
    fn member(&mut self) -> Result<(), Stop> {
        if self.next_byte()? != b'"' {
            return Err(Stop::Malformed);
        }
        let span = self.string()?;
        self.tally.member(span_text(self.body, span))?;
        match self.next_byte()? {
            b':' => Ok(()),
            _ => Err(Stop::Malformed),
        }
    }

    /// Skips a string whose opening quote was just read; answers the span of its content.
    /// Most of a call's bytes are in strings: `memchr2` finds the next quote or backslash a
    /// word at a time.
    fn string(&mut self) -> Result<(usize, usize), Stop> {
        let start = self.at;
        loop {
            let rest = self.body.get(self.at..).ok_or(Stop::Malformed)?;
            let found = memchr::memchr2(b'"', b'\\', rest).ok_or(Stop::Malformed)?;
            self.at += found;
            match self.body[self.at] {
                b'"' => {
                    self.at += 1;
                    return Ok((start, self.at - 1));
                }
                _ => self.at += 2,
            }
        }
    }

    fn next_byte(&mut self) -> Result<u8, Stop> {
        self.skip_space();
        let b = *self.body.get(self.at).ok_or(Stop::Malformed)?;
        self.at += 1;
        Ok(b)
    }

    fn peek_byte(&mut self) -> Option<u8> {
        self.skip_space();
        self.body.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.body.get(self.at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }
}

/// The string at `span` of `body` (between its quotes), decoded.
fn span_text(body: &[u8], span: (usize, usize)) -> Cow<'_, str> {
    let raw = &body[span.0..span.1];
    if raw.contains(&b'\\') {
        // Escapes: let the JSON parser decode them (quotes included in the span).
        let quoted = &body[span.0 - 1..span.1 + 1];
        serde_json::from_slice::<String>(quoted).unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned()).into()
    } else {
        String::from_utf8_lossy(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(n: usize, each: &str) -> String {
        format!("{{\"transcript_with_tool_calls\":[{}]}}", vec![each; n].join(","))
    }

    /// The plain path (`api::counted::plain_words`) takes a word record's fields for the
    /// words limits' own: they must be the same, of the same kinds.
    #[test]
    fn the_word_record_holds_exactly_the_word_fields() {
        use crate::api::create_call::Word;
        let names: Vec<&str> = Word::FIELD_NAMES.iter().map(|(_, json)| *json).collect();
        assert_eq!(names, WORD_FIELDS.iter().map(|(name, _)| *name).collect::<Vec<_>>());
        let texts: Vec<&str> =
            WORD_FIELDS.iter().filter(|(_, kind)| matches!(kind, FieldKind::Text)).map(|(name, _)| *name).collect();
        assert_eq!(texts, ["word"], "the one text field is the CompactString one; the others are Numbers");
        let w = Word::default();
        let _: (Option<compact_str::CompactString>, [Option<crate::api::number::Number>; 3]) =
            (w.word, [w.start_ms, w.end_ms, w.confidence]);
    }

    #[test]
    fn word_field_is_the_index_in_word_fields() {
        for (i, (name, _)) in WORD_FIELDS.iter().enumerate() {
            assert_eq!(word_field(name), Some(i), "{name}");
        }
        assert_eq!(word_field("words"), None);
        assert_eq!(word_field(""), None);
    }

    #[test]
    fn a_body_within_the_limits_passes() {
        assert!(check(segments(MAX_SEGMENTS, "{}").as_bytes(), Layout::CREATE_CALL).is_ok());
        assert!(check(br#"{"a":[1,"x\"]",{"b":null}],"c":{}}"#, Layout::CREATE_CALL).is_ok());
    }

    #[test]
    fn the_first_segment_past_the_limit_is_named() {
        let v = check(segments(MAX_SEGMENTS + 5, "{}").as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert_eq!(v.pointer, format!("/transcript_with_tool_calls/{MAX_SEGMENTS}"));
        assert_eq!(v.code, Code::Limit);
        assert!(v.message.contains(&MAX_SEGMENTS.to_string()), "{}", v.message);
    }

    #[test]
    fn words_are_limited_per_segment_and_per_call() {
        let words = |n: usize| format!("{{\"words\":[{}]}}", vec!["{}"; n].join(","));
        let one = segments(1, &words(MAX_WORDS_PER_SEGMENT + 1));
        let v = check(one.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert_eq!(v.pointer, format!("/transcript_with_tool_calls/0/words/{MAX_WORDS_PER_SEGMENT}"));
        let per = MAX_WORDS_PER_SEGMENT;
        let many = segments(MAX_WORDS / per + 1, &words(per));
        let v = check(many.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert_eq!(v.pointer, format!("/transcript_with_tool_calls/{}/words/0", MAX_WORDS / per));
        // Operation A has no words: the same shape is only values there.
        assert!(check(one.as_bytes(), Layout::SEND_CALL_DATA).is_ok());
    }

    #[test]
    fn escaped_keys_are_the_keys_they_spell() {
        let body = format!("{{\"transcript\\u005fwith_tool_calls\":[{}]}}", vec!["1"; MAX_SEGMENTS + 1].join(","));
        let v = check(body.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert_eq!(v.pointer, format!("/transcript_with_tool_calls/{MAX_SEGMENTS}"));
    }

    #[test]
    fn nesting_keys_and_values_are_limited() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let v = check(deep.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert!(v.pointer.starts_with("/a/0/0"), "{}", v.pointer);
        assert_eq!(v.pointer.matches('/').count(), MAX_DEPTH);

        let keys: Vec<String> = (0..=MAX_KEYS).map(|i| format!("\"k/{i}\":0")).collect();
        let wide = format!("{{\"metadata\":{{{}}}}}", keys.join(","));
        let v = check(wide.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert_eq!(v.pointer, format!("/metadata/k~1{MAX_KEYS}"));

        // The body and the array (1 + CONTAINER_WEIGHT each) and the member "a" come first.
        let flat = format!("{{\"a\":[{}]}}", vec!["0"; MAX_VALUES].join(","));
        let v = check(flat.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert_eq!(v.pointer, format!("/a/{}", MAX_VALUES - 2 * (1 + CONTAINER_WEIGHT) - MEMBER_WEIGHT));
        let members: Vec<String> = (0..MAX_VALUES / 3).map(|i| format!("\"k{}\":0", i % MAX_KEYS)).collect();
        let objects: Vec<String> = members.chunks(MAX_KEYS).map(|c| format!("{{{}}}", c.join(","))).collect();
        let wide = format!("{{\"a\":[{}]}}", objects.join(","));
        assert!(check(wide.as_bytes(), Layout::CREATE_CALL).is_err(), "members count {}", MEMBER_WEIGHT + 1);
    }

    #[test]
    fn repeated_or_wrong_typed_word_fields_count_as_values() {
        // Found in review: 10,000 wrong-typed `word` keys in each word were not counted,
        // and each became a note and a violation once read.
        let repeated = format!("{{{}}}", vec![r#""word":0"#; MAX_KEYS].join(","));
        let segment = format!("{{\"words\":[{}]}}", vec![repeated.as_str(); 200].join(","));
        let v = check(segments(1, &segment).as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert!(v.pointer.contains("/words/") && v.pointer.ends_with("/word"), "{}", v.pointer);
        let wrong = r#"{"word":1,"start_ms":"x","end_ms":-1,"confidence":null}"#;
        let segment = format!("{{\"words\":[{}]}}", vec![wrong; MAX_WORDS_PER_SEGMENT].join(","));
        assert!(check(segments(10, &segment).as_bytes(), Layout::CREATE_CALL).is_err());
    }

    #[test]
    fn a_limits_pointer_quotes_a_long_key_in_part() {
        let key = "k".repeat(100_000);
        let body = format!("{{\"{key}\":{}{}}}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let v = check(body.as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert!(v.pointer.starts_with(&format!("/{}…/0", "k".repeat(MAX_POINTER_KEY))), "{}", &v.pointer[..80]);
        assert!(v.pointer.len() < 1024);
    }

    #[test]
    fn a_words_own_fields_are_counted_as_words_not_values() {
        let word = r#"{"word":"a","start_ms":1,"end_ms":2,"confidence":1}"#;
        let segment = format!("{{\"words\":[{}]}}", vec![word; MAX_WORDS_PER_SEGMENT].join(","));
        let body = segments(10, &segment);
        assert!(check(body.as_bytes(), Layout::CREATE_CALL).is_ok());
        // Other members of a word are values like any other.
        let word = r#"{"word":"a","x":1,"y":2,"z":3,"w":4}"#;
        let segment = format!("{{\"words\":[{}]}}", vec![word; MAX_WORDS_PER_SEGMENT].join(","));
        let v = check(segments(10, &segment).as_bytes(), Layout::CREATE_CALL).unwrap_err();
        assert!(v.pointer.contains("/words/"), "{}", v.pointer);
    }

    #[test]
    fn malformed_bodies_are_left_to_the_parser() {
        for body in [&b"{\"a\":[1,2"[..], b"{\"a\" 1}", b"[1]]", b"{\"a\":\"\\", b"", b"}"] {
            assert!(check(body, Layout::CREATE_CALL).is_ok(), "{:?}", String::from_utf8_lossy(body));
        }
    }
}
