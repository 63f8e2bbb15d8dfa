//! The counted parse's JSON reader: a serde `Deserializer` over a `&str` that reads what
//! serde_json reads, value for value, and refuses the rest.
//!
//! Why not serde_json's own: a call is mostly words, and a word read through serde is a
//! visitor, a key match and a lenient read per field. This reader hands a word of the usual
//! shape to [`plain_word`](super::plain_word), which reads it straight from the bytes in one
//! pass ([`PLAIN_WORD`]); anything else is read as serde_json reads it.
//!
//! **The same values.** Every value it answers is the one serde_json gives for the same
//! text: the same visitor call (`visit_u64` for a non-negative integer, `visit_i64` for a
//! negative one, `visit_f64` for a decimal and for `-0`), the same number (a decimal of up to
//! 18 digits and no exponent is its digits divided by a power of ten, as serde_json computes
//! it without `float_roundtrip`), the same string (escapes decoded as serde_json decodes them).
//!
//! **Refused, not guessed.** What it does not read exactly as serde_json would (a number with
//! an exponent or of more than 18 digits (`json_number`), a lone surrogate escape, nesting deeper than 100)
//! is an error, as is anything that is not JSON. The counted parse then answers
//! `Counted::Unsure`, and the body is judged by the count scan and serde_json, as before:
//! slower, never different. `tests/it/counted.rs` compares both readings on every shape it
//! makes.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::json_number::{self, JsonNumber};
use super::plain_word;

use super::lenient::PLAIN_WORD;

/// Deeper than this is refused (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 100;

/// Why the reader stopped: not JSON, or not read here (the caller decides again).
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

fn refused<T>(what: &str) -> Result<T, Error> {
    Err(Error(what.to_owned()))
}

/// Reads one JSON value from `text`.
pub struct Reader<'de> {
    text: &'de str,
    at: usize,
    depth: u32,
    /// A string with escapes, decoded.
    scratch: String,
}

/// A string as read: borrowed from the input when it has no escapes.
enum Text<'de, 's> {
    Borrowed(&'de str),
    Decoded(&'s str),
}

impl<'de> Reader<'de> {
    pub fn new(text: &'de str) -> Self {
        Reader { text, at: 0, depth: 0, scratch: String::new() }
    }

    /// Checks that only whitespace follows the value.
    pub fn end(&mut self) -> Result<(), Error> {
        self.whitespace();
        match self.at == self.text.len() {
            true => Ok(()),
            false => refused("trailing characters"),
        }
    }

    fn bytes(&self) -> &'de [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// The next byte past whitespace, not taken.
    fn next_token(&mut self) -> Result<u8, Error> {
        self.whitespace();
        self.peek().map_or_else(|| refused("unexpected end"), Ok)
    }

    fn literal(&mut self, word: &str) -> Result<(), Error> {
        match self.bytes()[self.at..].starts_with(word.as_bytes()) {
            true => {
                self.at += word.len();
                Ok(())
            }
            false => refused("not a literal"),
        }
    }

    /// A string, its opening quote next.
    fn string<'s>(&'s mut self) -> Result<Text<'de, 's>, Error> {
        self.at += 1;
        let start = self.at;
        let bytes = self.bytes();
        let Some(stop) = memchr::memchr2(b'"', b'\\', &bytes[start..]) else { return refused("unterminated string") };
        let end = start + stop;
        if has_control(&bytes[start..end]) {
            return refused("a control character in a string");
        }
        if bytes[end] == b'"' {
            self.at = end + 1;
            return Ok(Text::Borrowed(&self.text[start..end]));
        }
        self.scratch.clear();
        self.scratch.push_str(&self.text[start..end]);
        self.at = end;
        loop {
            let bytes = self.bytes();
            match bytes.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(Text::Decoded(&self.scratch));
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape()?;
                }
                Some(_) => {
                    let from = self.at;
                    let stop = memchr::memchr2(b'"', b'\\', &bytes[from..]).map_or(bytes.len(), |i| from + i);
                    if has_control(&bytes[from..stop]) {
                        return refused("a control character in a string");
                    }
                    self.scratch.push_str(&self.text[from..stop]);
                    self.at = stop;
                }
                None => return refused("unterminated string"),
            }
        }
    }

    /// One escape, its backslash taken, decoded onto `scratch`.
    fn escape(&mut self) -> Result<(), Error> {
        let Some(b) = self.peek() else { return refused("unterminated escape") };
        self.at += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A leading surrogate: its trailing one must follow at once.
                        if !self.bytes()[self.at..].starts_with(b"\\u") {
                            return refused("a lone surrogate");
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return refused("a lone surrogate");
                        }
                        let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                        char::from_u32(code).map_or_else(|| refused("not a character"), Ok)?
                    }
                    0xDC00..=0xDFFF => return refused("a lone surrogate"),
                    _ => char::from_u32(u32::from(unit)).map_or_else(|| refused("not a character"), Ok)?,
                }
            }
            _ => return refused("an invalid escape"),
        };
        self.scratch.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let digits = self.bytes().get(self.at..self.at + 4).map_or_else(|| refused("a short escape"), Ok)?;
        let mut unit = 0u16;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return refused("an invalid escape"),
            };
            unit = unit << 4 | u16::from(v);
        }
        self.at += 4;
        Ok(unit)
    }

    /// A number, visited as serde_json visits it.
    fn number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        let Some((number, end)) = json_number::read(self.bytes(), self.at) else {
            return refused("a number not read here");
        };
        self.at = end;
        match number {
            JsonNumber::U64(v) => visitor.visit_u64(v),
            JsonNumber::I64(v) => visitor.visit_i64(v),
            JsonNumber::F64(v) => visitor.visit_f64(v),
        }
    }

    /// Whether another element or member follows (its comma taken, whitespace skipped), or
    /// `close` is next (not taken). Only the first may come without a comma; a comma before
    /// `close` is refused.
    fn more(&mut self, close: u8, first: &mut bool) -> Result<bool, Error> {
        match self.next_token()? {
            b if b == close => return Ok(false),
            b',' if !*first => {
                self.at += 1;
                if self.next_token()? == close {
                    return refused("a trailing comma");
                }
            }
            _ if *first => {}
            _ => return refused("expected a comma or the end"),
        }
        *first = false;
        Ok(true)
    }

    fn descend(&mut self) -> Result<(), Error> {
        self.depth += 1;
        match self.depth > MAX_DEPTH {
            true => refused("nested too deep"),
            false => Ok(()),
        }
    }

    /// Takes `close` past whitespace (the end of an array or object the visitor read whole).
    fn close(&mut self, close: u8) -> Result<(), Error> {
        self.depth -= 1;
        match self.next_token()? == close {
            true => {
                self.at += 1;
                Ok(())
            }
            false => refused("an array or object not read whole"),
        }
    }
}

/// Whether `bytes` hold a control character (not allowed in a JSON string).
fn has_control(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |found, &b| found | (b < 0x20))
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.next_token()? {
            b'n' => {
                self.literal("null")?;
                visitor.visit_unit()
            }
            b't' => {
                self.literal("true")?;
                visitor.visit_bool(true)
            }
            b'f' => {
                self.literal("false")?;
                visitor.visit_bool(false)
            }
            b'-' | b'0'..=b'9' => self.number(visitor),
            b'"' => match self.string()? {
                Text::Borrowed(s) => visitor.visit_borrowed_str(s),
                Text::Decoded(s) => visitor.visit_str(s),
            },
            b'[' => {
                self.descend()?;
                self.at += 1;
                let value = visitor.visit_seq(Seq { reader: &mut *self, first: true })?;
                self.close(b']')?;
                Ok(value)
            }
            b'{' => {
                self.descend()?;
                self.at += 1;
                let value = visitor.visit_map(Map { reader: &mut *self, first: true })?;
                self.close(b'}')?;
                Ok(value)
            }
            _ => refused("not a JSON value"),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.next_token()? {
            b'n' => {
                self.literal("null")?;
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    /// A word asking to be read straight from the bytes ([`PLAIN_WORD`]); any other name
    /// is read as what it holds.
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        if name == PLAIN_WORD {
            self.whitespace();
            if let Some(end) = plain_word::read_at(self.text, self.at) {
                self.at = end;
                return visitor.visit_unit();
            }
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Error> {
        refused("an enum")
    }

    /// serde_json reads an ignored value without visiting it, then visits a unit.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(de::IgnoredAny)?;
        visitor.visit_unit()
    }

    // A typed read is serde_json's only where the value is of that type (serde_json refuses
    // the others as "invalid type"): checked by the value's first byte, then read as any.
    typed! {
        deserialize_bool(b't' | b'f'),
        deserialize_i8(b'-' | b'0'..=b'9'), deserialize_i16(b'-' | b'0'..=b'9'),
        deserialize_i32(b'-' | b'0'..=b'9'), deserialize_i64(b'-' | b'0'..=b'9'),
        deserialize_u8(b'-' | b'0'..=b'9'), deserialize_u16(b'-' | b'0'..=b'9'),
        deserialize_u32(b'-' | b'0'..=b'9'), deserialize_u64(b'-' | b'0'..=b'9'),
        deserialize_f64(b'-' | b'0'..=b'9'),
        deserialize_char(b'"'), deserialize_str(b'"'), deserialize_string(b'"'), deserialize_identifier(b'"'),
        deserialize_unit(b'n'), deserialize_seq(b'['), deserialize_map(b'{'),
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.next_token()? {
            b'[' | b'{' => self.deserialize_any(visitor),
            _ => refused("not a struct"),
        }
    }

    // Read otherwise by serde_json (single precision, bytes, 128-bit visits): not here.
    refuse! { deserialize_f32 deserialize_i128 deserialize_u128 deserialize_bytes deserialize_byte_buf }
}

/// Typed reads that check the value's first byte, then read it as any value.
macro_rules! typed {
    ($($method:ident($first:pat)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                match self.next_token()? {
                    $first => self.deserialize_any(visitor),
                    _ => refused("invalid type"),
                }
            }
        )*
    };
}
use typed;

/// Reads this reader leaves to serde_json.
macro_rules! refuse {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
                refused("not read here")
            }
        )*
    };
}
use refuse;

struct Seq<'r, 'de> {
    reader: &'r mut Reader<'de>,
    first: bool,
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        match self.reader.more(b']', &mut self.first)? {
            true => seed.deserialize(&mut *self.reader).map(Some),
            false => Ok(None),
        }
    }
}

struct Map<'r, 'de> {
    reader: &'r mut Reader<'de>,
    first: bool,
}

impl<'de> MapAccess<'de> for Map<'_, 'de> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        if !self.reader.more(b'}', &mut self.first)? {
            return Ok(None);
        }
        match self.reader.peek() {
            // Read by the reader itself: a string, visited as serde_json visits a key (a typed
            // read of another type is refused).
            Some(b'"') => seed.deserialize(&mut *self.reader).map(Some),
            _ => refused("a key that is not a string"),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.reader.next_token()? {
            b':' => {
                self.reader.at += 1;
                seed.deserialize(&mut *self.reader)
            }
            _ => refused("expected :"),
        }
    }
}
