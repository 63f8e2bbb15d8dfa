//! Reading JSON leniently into typed records.
//!
//! serde stops at the first value of the wrong type; the contract wants every violation
//! reported at once. So each field of a request record is read with [`Accept`]: a value
//! of the wrong JSON type becomes `None` plus a [`WrongType`] note on the record, and
//! parsing goes on. Only malformed JSON (a syntax error) stops it.
//!
//! Records are declared with [`record!`](crate::record), which also keeps every field it
//! does not know in `extra`, without `#[serde(flatten)]` (which buffers every field of a
//! struct and would cost the hot types their speed).

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::number::Number;
use super::pointer::Pointer;
use super::problem::{Code, Violation};

/// A free-form JSON object, kept as sent.
pub type Object = Map<String, Value>;

/// The JSON type a value turned out to have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Found::Null => "null",
            Found::Bool => "a boolean",
            Found::Number => "a number",
            Found::String => "a string",
            Found::Array => "an array",
            Found::Object => "an object",
        })
    }
}

/// A field (or, with `field: None`, a whole array element) whose JSON type was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongType {
    pub field: Option<&'static str>,
    pub expected: &'static str,
    pub found: Found,
}

impl WrongType {
    /// The violation it stands for, at `at` (the record holding it).
    pub fn violation(&self, at: &Pointer<'_>) -> Violation {
        let pointer = match self.field {
            Some(name) => at.key(name).render(),
            None => at.render(),
        };
        let message = if self.found == Found::Number {
            format!("must be {}", self.expected)
        } else {
            format!("must be {}, found {}", self.expected, self.found)
        };
        Violation::new(pointer, Code::Type, message)
    }
}

thread_local! {
    /// Set while a counted parse on this thread reads words unwrapped ([`plain_words`]).
    static PLAIN_WORDS: Cell<bool> = const { Cell::new(false) };
}

/// Whether a counted parse on this thread reads the words of a segment unwrapped: a word
/// is most of a call's values, and the wrapper's layers around each of its keys and values
/// cost a fifth of the parse. A plain word (an object of its own fields, each once, holding
/// what it should: `counts::WORD_FIELDS`) counts nothing but itself, which the array's
/// element already counted; a word record ([`Record::PLAIN`])
/// that meets anything else stops the parse, having built nothing of it (an unknown or
/// repeated key stops before its value; a container where a field's value should be is
/// skipped through first, building nothing), and the body is judged by the byte scan and
/// the plain parse (`counted::Counted::Unsure`), exactly as before.
pub fn plain_words() -> bool {
    PLAIN_WORDS.with(Cell::get)
}

/// Words are read unwrapped while this lives; then the flag is as it was.
pub(crate) struct Unwrapped(bool);

impl Unwrapped {
    pub(crate) fn start() -> Unwrapped {
        Unwrapped(PLAIN_WORDS.with(|p| p.replace(true)))
    }
}

impl Drop for Unwrapped {
    fn drop(&mut self) {
        PLAIN_WORDS.with(|p| p.set(self.0));
    }
}

/// A type a field can hold, and which JSON values make one.
///
/// Every method but the ones a type overrides answers "wrong type", so each type says
/// only what it accepts.
pub trait Accept: Sized {
    /// What the field expects, for messages: "a string", "an integer", ...
    const EXPECTED: &'static str;

    fn from_bool(_: bool) -> Option<Self> {
        None
    }
    fn from_i64(_: i64) -> Option<Self> {
        None
    }
    fn from_u64(v: u64) -> Option<Self> {
        i64::try_from(v).ok().and_then(Self::from_i64)
    }
    fn from_f64(_: f64) -> Option<Self> {
        None
    }
    fn from_str(_: &str) -> Option<Self> {
        None
    }
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Result<Self, Found>, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Err(Found::Object))
    }
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Result<Self, Found>, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Err(Found::Array))
    }
    /// Whether the value is what a word's field should hold as the count limits see it
    /// (`counts::WORD_FIELDS`): asked only of a plain record's fields ([`Record::PLAIN`]).
    fn plain(&self) -> bool {
        true
    }
}

/// Reads past a value, checking it is well-formed JSON on the way. serde's `IgnoredAny`
/// is not enough: serde_json skips it without checking its strings (invalid UTF-8, lone
/// surrogate escapes), so a body that is not JSON would be judged as a wrong type (422)
/// instead of refused (400). Allocates nothing for strings without escapes.
pub struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// Reads one value of type `T`, answering `Err(found)` instead of failing on a wrong type.
pub struct Lenient<T>(PhantomData<T>);

impl<T> Lenient<T> {
    pub fn new() -> Self {
        Lenient(PhantomData)
    }
}

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, T: Accept> DeserializeSeed<'de> for Lenient<T> {
    type Value = Result<T, Found>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Accept> Visitor<'de> for Lenient<T> {
    type Value = Result<T, Found>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(T::from_bool(v).ok_or(Found::Bool))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(T::from_i64(v).ok_or(Found::Number))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(T::from_u64(v).ok_or(Found::Number))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(T::from_f64(v).ok_or(Found::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(T::from_str(v).ok_or(Found::String))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(Found::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(Found::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::from_map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::from_seq(seq)
    }
}

/// Reads the value of a known field into `Some`, or `None` for null and for a wrong type
/// (which is noted in `wrong`).
#[inline]
pub fn read_field<'de, A: MapAccess<'de>, T: Accept>(
    map: &mut A,
    name: &'static str,
    wrong: &mut Vec<WrongType>,
) -> Result<Option<T>, A::Error> {
    match map.next_value_seed(Lenient::<T>::new())? {
        Ok(v) => Ok(Some(v)),
        Err(Found::Null) => Ok(None),
        Err(found) => {
            wrong.push(WrongType { field: Some(name), expected: T::EXPECTED, found });
            Ok(None)
        }
    }
}

/// An object key, borrowed from the input when it has no escapes.
pub enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
    pub fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        d.deserialize_str(V)
    }
}

/// A record type: reads itself from a JSON object and can stand in for an array element
/// that was not an object.
pub trait Record: Default {
    /// Whether the counted parse reads this record unwrapped, as a plain word
    /// ([`plain_words`]): then anything but an object of its own fields,
    /// each once and holding what it should, stops the parse, and the body is judged by
    /// the count scan and the plain parse instead.
    const PLAIN: bool;
    /// A placeholder for an array element of the wrong type.
    fn wrong_element(found: Found) -> Self;
    /// A plain record its reader read straight from the bytes and set aside ([`ReadPlain`]);
    /// `None` for the others.
    fn take_plain() -> Option<Self> {
        None
    }
}

/// A plain record read straight from the bytes by the counted parse's reader, set aside
/// there for the record to take ([`PLAIN_WORD`]; the word's is `api::plain_word`).
pub trait ReadPlain: Sized {
    fn take_plain() -> Option<Self>;
}

/// The name under which a plain record asks the counted parse's reader (`api::reader`) to
/// read it straight from the bytes: the reader answers `visit_unit` once it has read it and
/// set it aside ([`Record::take_plain`]), or `visit_newtype_struct` for the record to read
/// itself. Any other deserializer reads it as what it holds.
pub const PLAIN_WORD: &str = "$call_ingest::PlainWord";

/// The error that stops the counted parse at a word that is not plain ([`Record::PLAIN`]).
pub fn not_plain<E: de::Error>() -> E {
    E::custom("a word that is not plain: judged by the count scan")
}

/// Reads the elements of an array of records; an element that is not an object becomes
/// a placeholder that remembers what it was, so the indexes of the others stay right.
struct Element<T>(PhantomData<T>);

impl<'de, T: Record + Accept> DeserializeSeed<'de> for Element<T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        if T::PLAIN && plain_words() {
            return d.deserialize_newtype_struct(PLAIN_WORD, PlainRead::<T>(PhantomData));
        }
        Ok(match Lenient::<T>::new().deserialize(d)? {
            Ok(v) => v,
            Err(found) => T::wrong_element(found),
        })
    }
}

/// A plain record read unwrapped ([`plain_words`]): read straight from the bytes when the
/// reader can ([`PLAIN_WORD`]), else by the record, which stops the parse where it is not
/// plain.
struct PlainRead<T>(PhantomData<T>);

impl<'de, T: Record + Accept> Visitor<'de> for PlainRead<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        T::take_plain().ok_or_else(not_plain)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        match Lenient::<T>::new().deserialize(d)? {
            Ok(v) => Ok(v),
            Err(_) => Err(not_plain()),
        }
    }
}

impl<T: Record + Accept> Accept for Vec<T> {
    const EXPECTED: &'static str = "an array";
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Result<Self, Found>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(Element::<T>(PhantomData))? {
            out.push(item);
        }
        Ok(Ok(out))
    }
}

impl Accept for String {
    const EXPECTED: &'static str = "a string";
    fn from_str(v: &str) -> Option<Self> {
        Some(v.to_owned())
    }
}

impl Accept for compact_str::CompactString {
    const EXPECTED: &'static str = "a string";
    fn from_str(v: &str) -> Option<Self> {
        Some(compact_str::CompactString::new(v))
    }
}

impl Accept for bool {
    const EXPECTED: &'static str = "a boolean";
    fn from_bool(v: bool) -> Option<Self> {
        Some(v)
    }
}

impl Accept for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_i64(v: i64) -> Option<Self> {
        Some(v)
    }
    fn from_f64(v: f64) -> Option<Self> {
        // 3.0 is an integer written as a decimal; 3.5 is not.
        (v.fract() == 0.0 && v.abs() < 9.2e18).then_some(v as i64)
    }
}

impl Accept for Number {
    const EXPECTED: &'static str = "a number";
    fn from_i64(v: i64) -> Option<Self> {
        Some(Number::Int(v))
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(i64::try_from(v).map_or(Number::Float(v as f64), Number::Int))
    }
    fn from_f64(v: f64) -> Option<Self> {
        Some(Number::Float(v))
    }
    /// Non-negative, as the count limits read it: no minus sign (`-0` is read as `-0.0`).
    fn plain(&self) -> bool {
        match *self {
            Number::Int(i) => i >= 0,
            Number::Float(f) => f.is_sign_positive(),
        }
    }
}

impl Accept for Object {
    const EXPECTED: &'static str = "an object";
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Result<Self, Found>, A::Error> {
        // Not `Map::deserialize`: its values are `Value`s, which parse a string a second
        // time behind serde_json's private keys (`super::free`).
        super::free::object(map).map(Ok)
    }
}

/// Any JSON value (for free-form fields such as a tool's params and result).
impl Accept for Value {
    const EXPECTED: &'static str = "any JSON value";
    fn from_bool(v: bool) -> Option<Self> {
        Some(Value::Bool(v))
    }
    fn from_i64(v: i64) -> Option<Self> {
        Some(Value::from(v))
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(Value::from(v))
    }
    fn from_f64(v: f64) -> Option<Self> {
        Some(Value::from(v))
    }
    fn from_str(v: &str) -> Option<Self> {
        Some(Value::String(v.to_owned()))
    }
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Result<Self, Found>, A::Error> {
        Object::from_map(map).map(|o| o.map(Value::Object))
    }
    fn from_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<Result<Self, Found>, A::Error> {
        super::free::array(seq).map(|v| Ok(Value::Array(v)))
    }
}

/// Collects the wrong-type notes of a record and everything below it.
pub trait WrongTypes {
    fn wrong_types(&self, at: &Pointer<'_>, out: &mut Vec<Violation>);
}

macro_rules! no_wrong_types {
    ($($t:ty),*) => {$(
        impl WrongTypes for $t {
            #[inline]
            fn wrong_types(&self, _: &Pointer<'_>, _: &mut Vec<Violation>) {}
        }
    )*};
}
no_wrong_types!(String, compact_str::CompactString, bool, i64, Number, Object, Value);

impl<T: WrongTypes> WrongTypes for Option<T> {
    #[inline]
    fn wrong_types(&self, at: &Pointer<'_>, out: &mut Vec<Violation>) {
        if let Some(v) = self {
            v.wrong_types(at, out);
        }
    }
}

impl<T: WrongTypes> WrongTypes for Vec<T> {
    fn wrong_types(&self, at: &Pointer<'_>, out: &mut Vec<Violation>) {
        for (i, v) in self.iter().enumerate() {
            v.wrong_types(&at.index(i), out);
        }
    }
}

/// Declares a request record: a struct of optional fields read leniently from a JSON
/// object, with unknown fields kept in `extra` (serialised back in place) and wrong types
/// noted in `wrong`.
///
/// ```ignore
/// record! {
///     /// A word with its timing.
///     pub struct Word {
///         #[garde(skip)] "word" word: String,
///     }
/// }
/// ```
#[macro_export]
macro_rules! record {
    // `plain`: read unwrapped by the counted parse (`Record::PLAIN`; a word).
    (plain $(#[$meta:meta])* pub struct $name:ident $body:tt) => {
        $crate::record!(@true; $(#[$meta])* pub struct $name $body);
    };
    ($(#[$meta:meta])* pub struct $name:ident $body:tt) => {
        $crate::record!(@false; $(#[$meta])* pub struct $name $body);
    };
    // A plain record can be read straight from the bytes (`ReadPlain`).
    (@take_plain true) => {
        fn take_plain() -> Option<Self> {
            <Self as $crate::api::lenient::ReadPlain>::take_plain()
        }
    };
    (@take_plain false) => {};
    (
        @$plain:tt;
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $json:literal $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, ::serde::Serialize, ::garde::Validate)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(rename = $json, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
            /// Fields this version does not know, kept as sent.
            #[serde(flatten)]
            #[garde(skip)]
            pub extra: $crate::api::lenient::Object,
            /// Fields whose JSON type was wrong (reported by validation, never stored).
            #[serde(skip)]
            #[garde(skip)]
            pub wrong: Vec<$crate::api::lenient::WrongType>,
        }

        impl $name {
            /// (Rust field, JSON name) of every field, to turn garde's paths into pointers.
            pub const FIELD_NAMES: &'static [(&'static str, &'static str)] = &[$((stringify!($field), $json)),*];
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        use $crate::api::lenient::{not_plain, Accept};
                        // Read unwrapped: each field once, holding what it should, or stop.
                        let plain = $plain && $crate::api::lenient::plain_words();
                        #[derive(Default)]
                        #[allow(dead_code)]
                        struct Seen { $( $field: bool, )* }
                        let mut seen = Seen::default();
                        let mut out = $name::default();
                        while let Some(key) = map.next_key::<$crate::api::lenient::Key<'de>>()? {
                            match key.as_str() {
                                $( $json => {
                                    if plain && ::std::mem::replace(&mut seen.$field, true) {
                                        return Err(not_plain());
                                    }
                                    out.$field = $crate::api::lenient::read_field(&mut map, $json, &mut out.wrong)?;
                                    if plain && !out.$field.as_ref().is_some_and(Accept::plain) {
                                        return Err(not_plain());
                                    }
                                } )*
                                _ if plain => return Err(not_plain()),
                                _ => {
                                    // `Free`, not `Value`: see `api::free`.
                                    let $crate::api::free::Free(value) = map.next_value()?;
                                    out.extra.insert(key.into_string(), value);
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }

        impl $crate::api::lenient::Accept for $name {
            const EXPECTED: &'static str = "an object";
            fn from_map<'de, A: ::serde::de::MapAccess<'de>>(map: A) -> Result<Result<Self, $crate::api::lenient::Found>, A::Error> {
                <$name as ::serde::Deserialize>::deserialize(::serde::de::value::MapAccessDeserializer::new(map)).map(Ok)
            }
        }

        impl $crate::api::lenient::Record for $name {
            const PLAIN: bool = $plain;
            $crate::record!(@take_plain $plain);
            fn wrong_element(found: $crate::api::lenient::Found) -> Self {
                $name {
                    wrong: vec![$crate::api::lenient::WrongType { field: None, expected: "an object", found }],
                    ..Default::default()
                }
            }
        }

        impl $crate::api::lenient::WrongTypes for $name {
            fn wrong_types(&self, at: &$crate::api::pointer::Pointer<'_>, out: &mut Vec<$crate::api::Violation>) {
                for w in &self.wrong {
                    out.push(w.violation(at));
                }
                $( $crate::api::lenient::WrongTypes::wrong_types(&self.$field, &at.key($json), out); )*
            }
        }
    };
}
