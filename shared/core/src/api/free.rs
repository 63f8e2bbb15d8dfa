//! Free-form JSON values read from a request: what serde_json's `Value` reads, every key
//! kept as a key.
//!
//! The workspace enables serde_json's `raw_value` feature (Lambda's events are read as
//! `RawValue`), and with it `Value` treats an object whose first key is
//! `$serde_json::private::RawValue` as a raw value: it parses that member's string as JSON
//! a second time. The count limits see a string; the second parse builds whatever tree the
//! string spells, unbounded (a 9 MB body of `[{},{},…]` in such a string held 116 MB once
//! read). Here such a key is data like any other.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// One JSON value, read without serde_json's private keys.
#[derive(Debug)]
pub struct Free(pub Value);

impl<'de> serde::Deserialize<'de> for Free {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FreeVisitor).map(Free)
    }
}

/// The members of an object whose `{` was read, each value read as [`Free`]; a repeated
/// key keeps its last value, as `Value` does.
pub fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Map<String, Value>, A::Error> {
    let mut members = Map::new();
    while let Some(key) = map.next_key::<String>()? {
        let Free(value) = map.next_value()?;
        members.insert(key, value);
    }
    Ok(members)
}

/// The elements of an array whose `[` was read, each read as [`Free`].
pub fn array<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<Value>, A::Error> {
    // Never more than the body's own claim of room: the hint is bounded by what was read.
    let mut elements = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
    while let Some(Free(value)) = seq.next_element()? {
        elements.push(value);
    }
    Ok(elements)
}

struct FreeVisitor;

impl<'de> Visitor<'de> for FreeVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        object(map).map(Value::Object)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        array(seq).map(Value::Array)
    }
}

#[cfg(test)]
mod tests {
    use super::Free;
    use serde_json::json;

    #[test]
    fn serde_jsons_private_keys_are_data() {
        let body =
            r#"{"a":{"$serde_json::private::RawValue":"[{},{}]","b":1},"c":[{"$serde_json::private::Number":"1"}]}"#;
        let Free(value) = serde_json::from_str(body).unwrap();
        assert_eq!(
            value,
            json!({"a": {"$serde_json::private::RawValue": "[{},{}]", "b": 1}, "c": [{"$serde_json::private::Number": "1"}]})
        );
        // serde_json's own `Value` parses the string instead (why this module exists).
        let parsed: serde_json::Value =
            serde_json::from_str(r#"{"a":{"$serde_json::private::RawValue":"[{},{}]"}}"#).unwrap();
        assert_eq!(parsed["a"], json!([{}, {}]));
    }

    #[test]
    fn repeated_keys_keep_the_last_value_as_value_does() {
        let Free(value) = serde_json::from_str(r#"{"a":1,"a":{"b":null}}"#).unwrap();
        assert_eq!(value, json!({"a": {"b": null}}));
    }
}
