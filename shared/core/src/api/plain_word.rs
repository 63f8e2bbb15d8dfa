//! A plain word read straight from its bytes.
//!
//! Words are most of a call: in a 10-minute call, 1,668 values of its 122 segments and four
//! fifths of its bytes. Read through serde, a word costs a visitor, a key match and a lenient
//! read per field. So the counted parse's reader (`reader`) hands each word to [`read_at`],
//! which reads the usual shape directly, in one pass: an object of `word`, `start_ms`,
//! `end_ms` and `confidence`, each at most once, a string without escapes or control
//! characters, and non-negative numbers as `json_number` reads them. Anything
//! else (an escape, a null, another field, a negative number, a long one) is left to the
//! record, which reads it as before.
//!
//! The word is the one the record's own reading gives, bit for bit: an integer is
//! `Number::Int`; a decimal is its digits divided by a power of ten, which is what serde_json
//! computes for such a number (`f64_from_parts` without `float_roundtrip`).
//! `tests/it/counted.rs` checks both readings against each other on every shape it makes.

use std::cell::RefCell;

use compact_str::CompactString;

use super::create_call::Word;
use super::json_number::{self, JsonNumber};
use super::lenient::ReadPlain;
use super::number::Number;

thread_local! {
    /// The word [`read_at`] read, until the record takes it ([`take`]).
    static READ: RefCell<Option<Word>> = const { RefCell::new(None) };
}

impl ReadPlain for Word {
    fn take_plain() -> Option<Word> {
        READ.with(|w| w.borrow_mut().take())
    }
}

/// Drops a word set aside and not taken (none is, but a parse starts with nothing left).
pub fn forget() {
    READ.with(|w| w.borrow_mut().take());
}

/// Reads the word of the usual shape that starts at byte `at` of `text`, and sets it aside
/// for the record to take: the byte after it, or `None` (nothing set aside) when what
/// starts there is anything else.
pub fn read_at(text: &str, at: usize) -> Option<usize> {
    let mut word = Word::default();
    let end = read_into(text, at, &mut word)?;
    READ.with(|w| *w.borrow_mut() = Some(word));
    Some(end)
}

/// The word at `at`, into `word` (a default one): the byte after it.
fn read_into(text: &str, at: usize, word: &mut Word) -> Option<usize> {
    let mut r = Bytes { text, at };
    if !r.eat(b'{') {
        return None;
    }
    if r.eat(b'}') {
        return Some(r.at);
    }
    loop {
        r.skip_whitespace();
        // The key, by its first letter, then whole (quotes included), then its colon.
        let read = match r.peek(1) {
            Some(b'w') if word.word.is_none() && r.key(b"\"word\"") => {
                r.string().map(|w| word.word = Some(CompactString::new(w)))
            }
            Some(b's') if word.start_ms.is_none() && r.key(b"\"start_ms\"") => {
                r.number().map(|n| word.start_ms = Some(n))
            }
            Some(b'e') if word.end_ms.is_none() && r.key(b"\"end_ms\"") => r.number().map(|n| word.end_ms = Some(n)),
            Some(b'c') if word.confidence.is_none() && r.key(b"\"confidence\"") => {
                r.number().map(|n| word.confidence = Some(n))
            }
            _ => None,
        };
        read?;
        match r.next()? {
            b',' => continue,
            b'}' => return Some(r.at),
            _ => return None,
        }
    }
}

struct Bytes<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Bytes<'a> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.text.as_bytes().get(self.at + ahead).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek(0) {
            self.at += 1;
        }
    }

    /// The next byte past any whitespace, taken.
    fn next(&mut self) -> Option<u8> {
        self.skip_whitespace();
        let b = self.peek(0)?;
        self.at += 1;
        Some(b)
    }

    /// Takes `want` (past any whitespace) when it is next.
    fn eat(&mut self, want: u8) -> bool {
        self.skip_whitespace();
        let found = self.peek(0) == Some(want);
        self.at += usize::from(found);
        found
    }

    /// Takes the quoted key `quoted` and its colon when they are next.
    fn key(&mut self, quoted: &[u8]) -> bool {
        if !self.text.as_bytes()[self.at..].starts_with(quoted) {
            return false;
        }
        self.at += quoted.len();
        self.eat(b':')
    }

    /// A string without escapes or control characters: its text.
    fn string(&mut self) -> Option<&'a str> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        loop {
            match self.peek(0)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
        let text = self.text.get(start..self.at)?;
        self.at += 1;
        Some(text)
    }

    /// A non-negative number read as serde_json reads it (`json_number`).
    fn number(&mut self) -> Option<Number> {
        self.skip_whitespace();
        let (number, end) = json_number::read(self.text.as_bytes(), self.at)?;
        self.at = end;
        match number {
            // At most 18 digits: an `i64`, as the record's `Number::from_u64` makes it.
            JsonNumber::U64(v) => Some(Number::Int(v as i64)),
            JsonNumber::F64(f) if f.is_sign_positive() => Some(Number::Float(f)),
            _ => None,
        }
    }
}
