//! The count limits, checked by the typed parse as it reads: one pass over the body, not a
//! scan and then a parse.
//!
//! [`parse`] wraps a deserializer (as `serde_ignored` and `serde_path_to_error` do): every
//! value, element and member the parse visits is told to a
//! [`Tally`](super::counts::Tally) first, which refuses the first one past a limit, before
//! anything is built for it. Values the target type would skip are visited too (a JSON
//! deserializer may skip `IgnoredAny` without visiting; here it is read as any value and
//! dropped), so the counts are the byte scan's (`counts::check`), event for event. The
//! deserializer is the reader of `api::reader`, which reads what serde_json reads, value
//! for value, refuses the rest (then [`Counted::Unsure`]), and reads a plain word straight
//! from the bytes.
//!
//! Words, most of a call's values, are read unwrapped by [`parse_plain_words`] (operation
//! B's typed parse): a plain word counts nothing beyond itself, and a word that is not plain
//! stops the parse before anything is built of what would count ([`plain_words`]): the
//! counts agree with the scan's, though words are no longer told event for event.
//!
//! When the parse fails for another reason (not JSON, not an object), meets a word that is
//! not plain, or meets a shape the wrapper does not count (an enum), the answer is
//! [`Counted::Unsure`]: the caller runs the byte scan and the plain parse, whose answers
//! (status, pointer, code) stay those of before. Only bodies that are refused, or whose
//! words are not plain, take that path: linear still, in about twice the time. A word field
//! that is null, or one the specification does not name, is valid and kept as before, only
//! slower to read; a repeated or wrong-typed one is a 422 anyway.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};

use super::counts::{Kind, Layout, Over, Tally};
use super::problem::Violation;

/// What a counted parse found.
#[derive(Debug)]
pub enum Counted<T> {
    /// Read whole, within every limit; with the values it counted (words aside).
    Parsed(T, usize),
    /// Past a limit, at the first element or member past it: the parse stopped there. The
    /// violation's pointer has that place's indexes but not its keys (the tally kept none):
    /// the byte scan of the same body names it whole.
    Over(Violation),
    /// The parse failed otherwise, or met what it does not count: decide with the byte
    /// scan and the plain parse.
    Unsure,
}

pub use super::lenient::plain_words;

/// A type whose every word (an element of a segment's `words`) is read by a plain record
/// ([`Record::PLAIN`](super::lenient::Record::PLAIN)), so that [`parse_plain_words`] may
/// read its words unwrapped. Any other type's words are counted through the wrapper.
pub trait PlainWords {
    /// The record its words are read into.
    type Word: super::lenient::Record;
}

impl PlainWords for super::CreateCall {
    type Word = super::create_call::Word;
}

const _: () = assert!(<<super::CreateCall as PlainWords>::Word as super::lenient::Record>::PLAIN);

/// [`parse`], reading the words unwrapped ([`plain_words`]).
pub fn parse_plain_words<'de, T: de::Deserialize<'de> + PlainWords>(body: &'de [u8], layout: Layout) -> Counted<T> {
    read(body, layout, layout.words)
}

/// Reads `body` as `T`, counting as it goes.
pub fn parse<'de, T: de::Deserialize<'de>>(body: &'de [u8], layout: Layout) -> Counted<T> {
    read(body, layout, false)
}

fn read<'de, T: de::Deserialize<'de>>(body: &'de [u8], layout: Layout, plain_words: bool) -> Counted<T> {
    // Checked whole, at once: the reader then takes each string as it is, where reading
    // from bytes would check every string on its own (a call is mostly short strings). A
    // body that is not UTF-8 is not JSON: judged as before.
    let Ok(text) = std::str::from_utf8(body) else { return Counted::Unsure };
    let state = State { tally: RefCell::new(Tally::stopping(layout)), stop: RefCell::new(None), plain_words };
    super::plain_word::forget();
    let mut de = super::reader::Reader::new(text);
    let unwrapped = plain_words.then(super::lenient::Unwrapped::start);
    let parsed = T::deserialize(Wrap { inner: &mut de, state: &state }).and_then(|t| de.end().map(|()| t));
    drop(unwrapped);
    match (parsed, state.stop.into_inner()) {
        (_, Some(Stop::Over(v))) => Counted::Over(v),
        (Ok(t), None) => Counted::Parsed(t, state.tally.into_inner().values()),
        _ => Counted::Unsure,
    }
}

/// Why counting stopped the parse.
enum Stop {
    Over(Violation),
    /// A shape this wrapper does not count.
    Uncounted,
}

struct State<'de> {
    tally: RefCell<Tally<'de>>,
    stop: RefCell<Option<Stop>>,
    /// Words are read unwrapped ([`plain_words`]).
    plain_words: bool,
}

impl<'de> State<'de> {
    #[inline]
    fn check<E: de::Error>(&self, counted: Result<(), Over>) -> Result<(), E> {
        counted.map_err(|v| {
            *self.stop.borrow_mut() = Some(Stop::Over(*v));
            E::custom("past a count limit")
        })
    }
    #[inline]
    fn value<E: de::Error>(&self, kind: Kind) -> Result<(), E> {
        self.check(self.tally.borrow_mut().value(kind))
    }
    /// An element starts: a word, when it answers true.
    #[inline]
    fn element<E: de::Error>(&self) -> Result<bool, E> {
        let word = self.tally.borrow_mut().element();
        match word {
            Ok(word) => Ok(word),
            Err(v) => self.check(Err(v)).map(|()| false),
        }
    }
    #[inline]
    fn member<E: de::Error>(&self, key: Cow<'de, str>) -> Result<(), E> {
        self.check(self.tally.borrow_mut().member(key))
    }
    #[inline]
    fn close(&self) {
        self.tally.borrow_mut().close();
    }
    fn uncounted<E: de::Error>(&self, what: &str) -> E {
        *self.stop.borrow_mut() = Some(Stop::Uncounted);
        E::custom(format_args!("{what} is not counted"))
    }
}

/// A deserializer whose every value is counted.
struct Wrap<'s, 'de, D> {
    inner: D,
    state: &'s State<'de>,
}

/// The deserializer of an object's key: it tells the key to the tally.
struct KeyWrap<'s, 'de, D> {
    inner: D,
    state: &'s State<'de>,
}

/// Forwards each method of `Deserializer` to the inner one, with the visitor wrapped.
macro_rules! forward {
    ($visit:ident; $($method:ident($($arg:ident: $ty:ty),*))*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.inner.$method($($arg,)* $visit { inner: visitor, state: self.state })
            }
        )*
    };
}

macro_rules! deserializer {
    ($wrap:ident, $visit:ident) => {
        impl<'de, 's, D: Deserializer<'de>> Deserializer<'de> for $wrap<'s, 'de, D> {
            type Error = D::Error;
            forward! {$visit;
                deserialize_any() deserialize_bool() deserialize_i8() deserialize_i16() deserialize_i32()
                deserialize_i64() deserialize_u8() deserialize_u16() deserialize_u32() deserialize_u64()
                deserialize_f32() deserialize_f64() deserialize_char() deserialize_str() deserialize_string()
                deserialize_bytes() deserialize_byte_buf() deserialize_option() deserialize_unit()
                deserialize_seq() deserialize_map() deserialize_identifier()
                deserialize_unit_struct(name: &'static str)
                deserialize_tuple(len: usize)
                deserialize_tuple_struct(name: &'static str, len: usize)
                deserialize_struct(name: &'static str, fields: &'static [&'static str])
                deserialize_enum(name: &'static str, variants: &'static [&'static str])
            }
            /// serde_json skips an ignored value without visiting it: read it as any value
            /// instead, so that what it holds is counted (and dropped).
            fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.inner.deserialize_any($visit { inner: visitor, state: self.state })
            }
            /// serde_json reads a raw value (`Box<RawValue>`) by skipping it unvisited: not
            /// counted here (no type read from a request holds one).
            fn deserialize_newtype_struct<V: Visitor<'de>>(
                self,
                name: &'static str,
                visitor: V,
            ) -> Result<V::Value, D::Error> {
                if name == "$serde_json::private::RawValue" {
                    return Err(self.state.uncounted("a raw value"));
                }
                self.inner.deserialize_newtype_struct(name, $visit { inner: visitor, state: self.state })
            }
            fn is_human_readable(&self) -> bool {
                self.inner.is_human_readable()
            }
        }
    };
}

deserializer!(Wrap, Visit);
deserializer!(KeyWrap, KeyVisit);

/// A visitor that counts the value it is given, then hands it on.
struct Visit<'s, 'de, V> {
    inner: V,
    state: &'s State<'de>,
}

macro_rules! scalars {
    ($($method:ident($ty:ty) => $kind:expr;)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                #[allow(clippy::redundant_closure_call)]
                self.state.value(($kind)(&v))?;
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, 's, V: Visitor<'de>> Visitor<'de> for Visit<'s, 'de, V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }
    scalars! {
        visit_bool(bool) => |_: &bool| Kind::Other;
        visit_i64(i64) => |v: &i64| if *v >= 0 { Kind::NonNegative } else { Kind::Other };
        visit_u64(u64) => |_: &u64| Kind::NonNegative;
        visit_f64(f64) => |v: &f64| if v.is_sign_positive() { Kind::NonNegative } else { Kind::Other };
        visit_str(&str) => |_: &&str| Kind::Text;
        visit_borrowed_str(&'de str) => |_: &&str| Kind::Text;
        visit_string(String) => |_: &String| Kind::Text;
        visit_bytes(&[u8]) => |_: &&[u8]| Kind::Text;
        visit_borrowed_bytes(&'de [u8]) => |_: &&[u8]| Kind::Text;
        visit_byte_buf(Vec<u8>) => |_: &Vec<u8>| Kind::Text;
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.state.value(Kind::Other)?;
        self.inner.visit_unit()
    }
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.state.value(Kind::Other)?;
        self.inner.visit_none()
    }
    /// Not a value of its own: the value inside is counted when it is read.
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Wrap { inner: d, state: self.state })
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Wrap { inner: d, state: self.state })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.state.value(Kind::Array)?;
        let read = self.inner.visit_seq(Seq { inner: seq, state: self.state });
        self.state.close();
        read
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.state.value(Kind::Object)?;
        let read = self.inner.visit_map(Map { inner: map, state: self.state });
        self.state.close();
        read
    }
    fn visit_enum<A: EnumAccess<'de>>(self, _: A) -> Result<V::Value, A::Error> {
        Err(self.state.uncounted("an enum"))
    }
}

/// Visits of a key that is not a string: left to the byte scan (`Counted::Unsure`).
macro_rules! uncounted_keys {
    ($($method:ident($ty:ty))*) => {
        $(
            fn $method<E: de::Error>(self, _: $ty) -> Result<V::Value, E> {
                Err(self.state.uncounted(concat!("a key read by ", stringify!($method))))
            }
        )*
    };
}

/// A key's visitor: tells the key to the tally, then hands it on. Keys are strings.
struct KeyVisit<'s, 'de, V> {
    inner: V,
    state: &'s State<'de>,
}

impl<'de, 's, V: Visitor<'de>> Visitor<'de> for KeyVisit<'s, 'de, V> {
    type Value = V::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.state.member(Cow::Owned(v.to_owned()))?;
        self.inner.visit_str(v)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.state.member(Cow::Borrowed(v))?;
        self.inner.visit_borrowed_str(v)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.state.member(Cow::Owned(v.clone()))?;
        self.inner.visit_string(v)
    }
    // A key read as anything else (a number, bytes) would go uncounted: not here.
    uncounted_keys! {
        visit_bool(bool) visit_i64(i64) visit_u64(u64) visit_f64(f64) visit_bytes(&[u8])
    }
}

struct Seq<'s, 'de, A> {
    inner: A,
    state: &'s State<'de>,
}

impl<'de, 's, A: SeqAccess<'de>> SeqAccess<'de> for Seq<'s, 'de, A> {
    type Error = A::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.inner.next_element_seed(Element { seed, state: self.state })
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// An element of an array: counted as one, then read as a counted value.
struct Element<'s, 'de, T> {
    seed: T,
    state: &'s State<'de>,
}

impl<'de, 's, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Element<'s, 'de, T> {
    type Value = T::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T::Value, D::Error> {
        match self.state.element()? {
            // A word, read unwrapped (see `plain_words`).
            // (Both flags: a word record checks itself only while the thread's is set.)
            true if self.state.plain_words && plain_words() => self.seed.deserialize(d),
            _ => self.seed.deserialize(Wrap { inner: d, state: self.state }),
        }
    }
}

struct Map<'s, 'de, A> {
    inner: A,
    state: &'s State<'de>,
}

impl<'de, 's, A: MapAccess<'de>> MapAccess<'de> for Map<'s, 'de, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(Seeded { seed, state: self.state, key: true })
    }
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.inner.next_value_seed(Seeded { seed, state: self.state, key: false })
    }
    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A member's key or value, read through the matching wrapper.
struct Seeded<'s, 'de, T> {
    seed: T,
    state: &'s State<'de>,
    key: bool,
}

impl<'de, 's, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Seeded<'s, 'de, T> {
    type Value = T::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T::Value, D::Error> {
        match self.key {
            true => self.seed.deserialize(KeyWrap { inner: d, state: self.state }),
            false => self.seed.deserialize(Wrap { inner: d, state: self.state }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, Counted};
    use crate::api::counts::Layout;
    use crate::api::free::Free;

    #[test]
    fn a_shape_it_does_not_count_is_left_to_the_scan() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        enum E {
            A(u8),
        }
        assert!(matches!(parse::<E>(br#"{"A":1}"#, Layout::CREATE_CALL), Counted::Unsure));
        assert!(matches!(parse::<Free>(b"{} x", Layout::CREATE_CALL), Counted::Unsure));
        let raw = parse::<Box<serde_json::value::RawValue>>(br#"{"a":[[[]]]}"#, Layout::CREATE_CALL);
        assert!(matches!(raw, Counted::Unsure), "{raw:?}");
        let numbered = parse::<std::collections::HashMap<u32, u8>>(br#"{"1":2}"#, Layout::CREATE_CALL);
        assert!(matches!(numbered, Counted::Unsure), "a key read as a number: {numbered:?}");
    }
}
