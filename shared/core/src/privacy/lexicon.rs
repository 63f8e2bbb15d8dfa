//! Tokens of a text and what each may mean to the rules: written digits, spoken number
//! words, months, ordinals, cue words ("born", "phone", "order") and the connectors of a
//! spoken e-mail address ("at", "dot").

/// A token: a run of non-space characters, its surrounding punctuation trimmed, in one
/// string (`piece`) of a stream.
#[derive(Debug, Clone, Copy)]
pub struct Token<'a> {
    pub text: &'a str,
    pub piece: usize,
    /// Byte range of `text` in its piece.
    pub start: usize,
    pub end: usize,
    /// Punctuation followed it (`,` `;` `.`): a pause between groups of a number.
    pub pause: bool,
}

/// Adds the tokens of `text` (string `piece` of a stream) to `out`.
pub fn tokenize<'a>(text: &'a str, piece: usize, out: &mut Vec<Token<'a>>) {
    // Runs of non-space characters, by their byte offsets: a separator may be several bytes
    // (a no-break space is two, a narrow one three).
    let mut start = None;
    for (at, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(at),
            (true, Some(from)) => {
                push_token(text, from, at, piece, out);
                start = None;
            }
            _ => {}
        }
    }
}

/// Adds the token of `text[from..to]` (a run of non-space characters), its surrounding
/// punctuation trimmed, unless nothing is left.
fn push_token<'a>(text: &'a str, from: usize, to: usize, piece: usize, out: &mut Vec<Token<'a>>) {
    let raw = &text[from..to];
    let lead = raw.len() - raw.trim_start_matches(is_lead_trim).len();
    let core = raw[lead..].trim_end_matches(is_tail_trim);
    if core.is_empty() {
        return;
    }
    let pause = raw[lead + core.len()..].contains([',', ';', '.', ':']);
    out.push(Token { text: core, piece, start: from + lead, end: from + lead + core.len(), pause });
}

fn is_lead_trim(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '!' | '?' | '"' | '\'' | '“' | '”' | '‘' | '’' | '[' | '{' | '<' | '*' | '…')
}

fn is_tail_trim(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '!' | '?' | '"' | '\'' | '“' | '”' | '‘' | '’' | ']' | '}' | '>' | '*' | '.' | '…')
}

/// Words that say what a nearby number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cue {
    /// number, phone, call, reach, cell, mobile, text, contact, dial, fax
    Phone,
    /// order, confirmation, reference, tracking, invoice, ticket, case, booking, account…
    NotPhone,
    /// social, security, ssn
    Ssn,
    /// born, birth, birthday, dob
    Birth,
}

/// What a token may mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lex {
    /// Written digits, with `-`, `.`, `(`, `)`, `/` between them: its digits (at most 19
    /// kept; `count` says how many there were), whether it began with `+`, and its groups'
    /// lengths when it had separators (`123-45-6789`: 3, 2, 4).
    Digits {
        digits: [u8; 19],
        count: u8,
        plus: bool,
        groups: [u8; 3],
        grouped: u8,
    },
    /// A written date: day, month and year in any order of `/`, `-` or `.` (`03/14/1985`).
    Date {
        year: u16,
    },
    /// zero, oh, one … nine.
    Unit(u8),
    /// ten … nineteen.
    Teen(u8),
    /// twenty … ninety (the tens).
    Ten(u8),
    Hundred,
    Thousand,
    /// double (2), triple (3).
    Repeat(u8),
    /// uh, um, er, and: inside a spoken number.
    Filler,
    /// dash, hyphen, `-`.
    Dash,
    /// plus, `+`.
    Plus,
    /// "at" (a spoken e-mail address's).
    At,
    /// "dot", "period", "point".
    Dot,
    /// "underscore".
    Underscore,
    Month(u8),
    /// first … thirty-first, or `14th`.
    Ordinal(u8),
    /// An e-mail address as written.
    Email,
    Cue(Cue),
    /// Letters and digits only (a label of a spoken address).
    Word,
    Other,
}

impl Lex {
    /// The digits a token gives a number spoken or written, if it is part of one.
    pub fn in_number(self) -> bool {
        matches!(
            self,
            Lex::Digits { .. }
                | Lex::Unit(_)
                | Lex::Teen(_)
                | Lex::Ten(_)
                | Lex::Hundred
                | Lex::Repeat(_)
                | Lex::Filler
                | Lex::Dash
        )
    }
}

/// What `token` may mean.
pub fn lex(token: &str) -> Lex {
    if let Some(lex) = written(token) {
        return lex;
    }
    if let Some(year) = named_month_date(token) {
        return Lex::Date { year };
    }
    if token.len() > 16 {
        return word_or_other(token);
    }
    let mut buf = [0u8; 16];
    let lower = &mut buf[..token.len()];
    lower.copy_from_slice(token.as_bytes());
    lower.make_ascii_lowercase();
    let spoken = match &*lower {
        b"zero" | b"oh" | b"o" | b"nought" => Lex::Unit(0),
        b"one" => Lex::Unit(1),
        b"two" => Lex::Unit(2),
        b"three" => Lex::Unit(3),
        b"four" => Lex::Unit(4),
        b"five" => Lex::Unit(5),
        b"six" => Lex::Unit(6),
        b"seven" => Lex::Unit(7),
        b"eight" => Lex::Unit(8),
        b"nine" => Lex::Unit(9),
        b"ten" => Lex::Teen(10),
        b"eleven" => Lex::Teen(11),
        b"twelve" => Lex::Teen(12),
        b"thirteen" => Lex::Teen(13),
        b"fourteen" => Lex::Teen(14),
        b"fifteen" => Lex::Teen(15),
        b"sixteen" => Lex::Teen(16),
        b"seventeen" => Lex::Teen(17),
        b"eighteen" => Lex::Teen(18),
        b"nineteen" => Lex::Teen(19),
        b"twenty" => Lex::Ten(2),
        b"thirty" => Lex::Ten(3),
        b"forty" => Lex::Ten(4),
        b"fifty" => Lex::Ten(5),
        b"sixty" => Lex::Ten(6),
        b"seventy" => Lex::Ten(7),
        b"eighty" => Lex::Ten(8),
        b"ninety" => Lex::Ten(9),
        b"hundred" => Lex::Hundred,
        b"thousand" => Lex::Thousand,
        b"double" => Lex::Repeat(2),
        b"triple" => Lex::Repeat(3),
        b"uh" | b"um" | b"er" | b"umm" | b"uhh" | b"and" => Lex::Filler,
        b"dash" | b"hyphen" | b"-" => Lex::Dash,
        b"plus" | b"+" => Lex::Plus,
        b"at" | b"@" => Lex::At,
        b"dot" | b"period" | b"point" => Lex::Dot,
        b"underscore" => Lex::Underscore,
        _ => Lex::Other,
    };
    if spoken != Lex::Other {
        return spoken;
    }
    if let Some(m) = month(lower) {
        return Lex::Month(m);
    }
    if let Some(o) = ordinal(lower) {
        return Lex::Ordinal(o);
    }
    if let Some(cue) = cue(lower) {
        return Lex::Cue(cue);
    }
    word_or_other(token)
}

fn word_or_other(token: &str) -> Lex {
    match token.chars().all(char::is_alphanumeric) {
        true => Lex::Word,
        false => Lex::Other,
    }
}

fn month(lower: &[u8]) -> Option<u8> {
    const MONTHS: [&[u8]; 12] = [
        b"january",
        b"february",
        b"march",
        b"april",
        b"may",
        b"june",
        b"july",
        b"august",
        b"september",
        b"october",
        b"november",
        b"december",
    ];
    let position = MONTHS.iter().position(|m| *m == lower);
    // Three-letter forms too ("jan"), but not "may" twice nor "mar" … as words they are rare.
    let short = || match lower.len() {
        3 | 4 => {
            MONTHS.iter().position(|m| m.starts_with(lower.strip_suffix(b".").unwrap_or(lower)) && lower.len() >= 3)
        }
        _ => None,
    };
    position.or_else(short).map(|i| i as u8 + 1)
}

fn ordinal(lower: &[u8]) -> Option<u8> {
    const WORDS: [(&[u8], u8); 19] = [
        (b"first", 1),
        (b"second", 2),
        (b"third", 3),
        (b"fourth", 4),
        (b"fifth", 5),
        (b"sixth", 6),
        (b"seventh", 7),
        (b"eighth", 8),
        (b"ninth", 9),
        (b"tenth", 10),
        (b"eleventh", 11),
        (b"twelfth", 12),
        (b"thirteenth", 13),
        (b"fourteenth", 14),
        (b"fifteenth", 15),
        (b"sixteenth", 16),
        (b"seventeenth", 17),
        (b"eighteenth", 18),
        (b"nineteenth", 19),
    ];
    if let Some((_, n)) = WORDS.iter().find(|(w, _)| *w == lower) {
        return Some(*n);
    }
    match lower {
        b"twentieth" => return Some(20),
        b"thirtieth" => return Some(30),
        _ => {}
    }
    // 1st, 2nd, 3rd, 14th
    let digits = lower.iter().take_while(|b| b.is_ascii_digit()).count();
    let suffix = &lower[digits..];
    let n: u8 = std::str::from_utf8(&lower[..digits]).ok()?.parse().ok()?;
    (matches!(suffix, b"st" | b"nd" | b"rd" | b"th") && (1..=31).contains(&n)).then_some(n)
}

fn cue(lower: &[u8]) -> Option<Cue> {
    Some(match lower {
        b"number" | b"area" | b"phone" | b"call" | b"reach" | b"cell" | b"mobile" | b"text" | b"contact" | b"dial"
        | b"fax" | b"landline" | b"callback" | b"telephone" => Cue::Phone,
        b"order" | b"confirmation" | b"reference" | b"ref" | b"tracking" | b"invoice" | b"ticket" | b"case"
        | b"booking" | b"reservation" | b"account" | b"policy" | b"member" | b"claim" | b"serial" | b"model"
        | b"sku" | b"part" | b"id" | b"code" | b"po" | b"p.o" | b"zip" | b"room" | b"flight" => Cue::NotPhone,
        b"social" | b"security" | b"ssn" | b"ss#" => Cue::Ssn,
        b"born" | b"birth" | b"birthday" | b"birthday's" | b"dob" | b"d.o.b" | b"birthdate" => Cue::Birth,
        _ => return None,
    })
}

/// A written number, date or e-mail address.
fn written(token: &str) -> Option<Lex> {
    let bytes = token.as_bytes();
    if bytes.contains(&b'@') {
        return is_email(token).then_some(Lex::Email);
    }
    let (plus, body) = match bytes.first() {
        Some(b'+') => (true, &bytes[1..]),
        _ => (false, bytes),
    };
    if body.is_empty() || !body.iter().any(u8::is_ascii_digit) {
        return None;
    }
    if !body.iter().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'(' | b')' | b'/')) {
        return None;
    }
    if let Some(year) = date(body) {
        return Some(Lex::Date { year });
    }
    let mut digits = [0u8; 19];
    let mut count = 0usize;
    let mut groups = [0u8; 3];
    let mut grouped = 0usize;
    let mut run = 0u8;
    for &b in body {
        if b.is_ascii_digit() {
            if count < 19 {
                digits[count] = b - b'0';
            }
            count += 1;
            run = run.saturating_add(1);
        } else if run > 0 {
            if grouped < 3 {
                groups[grouped] = run;
            }
            grouped += 1;
            run = 0;
        }
    }
    if run > 0 && grouped > 0 {
        if grouped < 3 {
            groups[grouped] = run;
        }
        grouped += 1;
    }
    Some(Lex::Digits { digits, count: count.min(255) as u8, plus, groups, grouped: grouped.min(255) as u8 })
}

/// The year of a written date (`03/14/1985`, `1985-03-14`, `14.03.1985`, `3/14/85`).
fn date(body: &[u8]) -> Option<u16> {
    let sep = *body.iter().find(|b| matches!(b, b'/' | b'-' | b'.'))?;
    let parts: Vec<&[u8]> = body.split(|b| *b == sep).collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty() || !p.iter().all(u8::is_ascii_digit)) {
        return None;
    }
    let num = |p: &[u8]| std::str::from_utf8(p).ok()?.parse::<u16>().ok();
    let (a, b, c) = (num(parts[0])?, num(parts[1])?, num(parts[2])?);
    let day_month = |x: u16, y: u16| {
        (1..=31).contains(&x) && (1..=12).contains(&y) || (1..=12).contains(&x) && (1..=31).contains(&y)
    };
    match (parts[0].len(), parts[1].len(), parts[2].len()) {
        (4, 1..=2, 1..=2) if (1900..=2099).contains(&a) && (1..=12).contains(&b) && (1..=31).contains(&c) => Some(a),
        (1..=2, 1..=2, 4) if (1900..=2099).contains(&c) && day_month(a, b) => Some(c),
        (1..=2, 1..=2, 2) if day_month(a, b) => Some(two_digit_year(c)),
        _ => None,
    }
}

/// A year written or spoken with two digits: up to 29 is this century's.
pub fn two_digit_year(y: u16) -> u16 {
    if y < 30 {
        2000 + y
    } else {
        1900 + y
    }
}

/// A date written with its month's name between `-`, `/` or `.`: `12-Apr-1979`.
fn named_month_date(token: &str) -> Option<u16> {
    let sep = token.chars().find(|c| matches!(c, '-' | '/' | '.'))?;
    let parts: Vec<&str> = token.split(sep).collect();
    let [day, month_name, year] = parts.as_slice() else { return None };
    let lower = month_name.to_ascii_lowercase();
    month(lower.as_bytes())?;
    let day: u16 = day.parse().ok()?;
    let year: u16 = year.parse().ok()?;
    let year = match year {
        0..=99 => two_digit_year(year),
        y => y,
    };
    ((1..=31).contains(&day) && (1900..=2099).contains(&year)).then_some(year)
}

/// `local@domain.tld` as written.
pub fn is_email(token: &str) -> bool {
    let Some((local, domain)) = token.split_once('@') else { return false };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-'));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        && labels.last().is_some_and(|t| t.len() >= 2 && t.bytes().all(|b| b.is_ascii_alphabetic()));
    local_ok && domain_ok
}

/// Top-level domains a spoken address ends with.
pub fn is_tld(word: &str) -> bool {
    const TLDS: [&str; 24] = [
        "com", "org", "net", "edu", "gov", "io", "co", "uk", "us", "ca", "de", "fr", "es", "it", "nl", "au", "in",
        "ai", "info", "biz", "me", "mx", "br", "ie",
    ];
    TLDS.iter().any(|t| t.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_their_place_without_punctuation() {
        let mut out = Vec::new();
        tokenize("Call me at (212) 555-0123, okay?", 3, &mut out);
        let texts: Vec<&str> = out.iter().map(|t| t.text).collect();
        assert_eq!(texts, ["Call", "me", "at", "(212)", "555-0123", "okay"]);
        let t = out[4];
        assert_eq!(&"Call me at (212) 555-0123, okay?"[t.start..t.end], "555-0123");
        assert_eq!(t.piece, 3);
        // Separators of several bytes (no-break spaces) keep every place right.
        let text = "Card:\u{A0}4111\u{202F}1111 x";
        let mut out = Vec::new();
        tokenize(text, 0, &mut out);
        assert_eq!(out.iter().map(|t| &text[t.start..t.end]).collect::<Vec<_>>(), ["Card", "4111", "1111", "x"]);
    }

    #[test]
    fn written_forms_are_read() {
        assert!(matches!(lex("555-0123"), Lex::Digits { count: 7, grouped: 2, .. }));
        assert!(matches!(lex("+442079460958"), Lex::Digits { plus: true, count: 12, .. }));
        assert_eq!(lex("03/14/1985"), Lex::Date { year: 1985 });
        assert_eq!(lex("1985-03-14"), Lex::Date { year: 1985 });
        assert!(matches!(lex("123-45-6789"), Lex::Digits { groups: [3, 2, 4], .. }));
        assert_eq!(lex("john.smith@gmail.com"), Lex::Email);
        assert_eq!(lex("$12.99"), Lex::Other);
        assert_eq!(lex("3:45"), Lex::Other);
        assert_eq!(lex("14th"), Lex::Ordinal(14));
        assert_eq!(lex("Fourteenth"), Lex::Ordinal(14));
        assert_eq!(lex("Oh"), Lex::Unit(0));
        assert_eq!(lex("March"), Lex::Month(3));
        assert_eq!(lex("born"), Lex::Cue(Cue::Birth));
    }
}
