//! Reading a provider's payload: values at a path, as the types the mapping needs, never
//! failing (a value of another type is as good as missing), and building the record.

use std::cell::Cell;

use serde_json::{json, Map, Value};

use crate::api::counts::{self, MAX_SEGMENTS};
use crate::api::free::Free;
use crate::api::{Code, Violation};
use crate::call::Rejection;
use crate::normalize::timestamps::{rfc3339_millis, seconds_to_millis};

/// Most items a payload's list may hold, and most segments a mapping makes: B's limit on
/// segments. Checked while mapping, before anything grows past it (a 3-byte `{}` may become
/// a segment of a kilobyte).
pub const MAX_ITEMS: usize = MAX_SEGMENTS;

/// 422 `limit` at `pointer`: more than [`MAX_ITEMS`] items.
pub fn too_many(pointer: &str) -> Rejection {
    Rejection::OverLimit(Violation::new(pointer, Code::Limit, format!("more than {MAX_ITEMS} items")))
}

/// `list`, unless it holds more than [`MAX_ITEMS`] items.
pub fn bounded<'v>(list: &'v [Value], pointer: &str) -> Result<&'v [Value], Rejection> {
    match list.len() > MAX_ITEMS {
        true => Err(too_many(pointer)),
        false => Ok(list),
    }
}

/// Largest epoch or duration in ms a mapping takes (2^53 - 1, as B's rules): above it the
/// value is as good as missing, and sums of two never overflow.
const MAX_MS: f64 = 9_007_199_254_740_991.0;

/// The value at `path` (object keys) under `value`.
pub fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// The first non-empty string at one of `paths`.
pub fn text<'v>(value: &'v Value, paths: &[&[&str]]) -> Option<&'v str> {
    paths.iter().find_map(|p| at(value, p).and_then(Value::as_str).filter(|s| !s.is_empty()))
}

/// The first finite number at one of `paths`.
pub fn number(value: &Value, paths: &[&[&str]]) -> Option<f64> {
    paths.iter().find_map(|p| at(value, p).and_then(Value::as_f64).filter(|n| n.is_finite()))
}

/// The first object at one of `paths`, when it has members.
pub fn object<'v>(value: &'v Value, paths: &[&[&str]]) -> Option<&'v Map<String, Value>> {
    paths.iter().find_map(|p| at(value, p).and_then(Value::as_object).filter(|o| !o.is_empty()))
}

/// The array at `path`, or none.
pub fn array<'v>(value: &'v Value, path: &[&str]) -> &'v [Value] {
    at(value, path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Epoch ms of an RFC 3339 time, or of an epoch number (seconds below 10^11).
pub fn epoch_ms(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::String(s) => rfc3339_millis(s).filter(|ms| (0.0..=MAX_MS).contains(&(*ms as f64))),
        Value::Number(n) => {
            let n = n.as_f64().filter(|n| n.is_finite() && *n >= 0.0)?;
            let ms = if n < 1e11 { n * 1000.0 } else { n };
            (ms <= MAX_MS).then(|| ms.round() as i64)
        }
        _ => None,
    }
}

/// Milliseconds, rounded up (as the contract rounds), never negative, from `seconds`: B's
/// own conversion (`seconds_to_millis`, which undoes the binary fraction first).
pub fn ms_of_seconds(seconds: f64) -> Option<i64> {
    seconds_to_millis(seconds.max(0.0)).and_then(|ms| i64::try_from(ms).ok())
}

/// Milliseconds rounded up, never negative.
pub fn ms(millis: f64) -> Option<i64> {
    (millis.is_finite() && millis <= MAX_MS).then(|| millis.ceil().max(0.0) as i64)
}

/// Longest tool name a mapping keeps, in characters (OpenAI's function names are at most
/// 64). A result row without a name of its own is given its call's: unclipped, one long
/// name in a payload would be copied into every result citing it (N rows × the name).
pub const MAX_TOOL_NAME: usize = 128;

/// A tool's name as a mapping keeps it: at most [`MAX_TOOL_NAME`] characters.
pub fn tool_name(name: &str) -> String {
    clip(name, MAX_TOOL_NAME)
}

/// `text`, at most `max` characters.
pub fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// What the JSON text of one payload's tools may still parse into: the values the payload's
/// own count left of [`counts::MAX_VALUES`], as if the text had been sent as JSON. Each text
/// is counted alone, so without one budget for all, a payload of many texts each under the
/// limit would build a tree per text (27 of 1.1 MiB: about 1.7 GB).
pub struct TextBudget(Cell<usize>);

impl TextBudget {
    /// After a payload whose count was `spent`.
    pub fn after(spent: usize) -> TextBudget {
        TextBudget(Cell::new(counts::MAX_VALUES.saturating_sub(spent)))
    }

    /// Takes `values` from what is left, if that many are.
    fn take(&self, values: usize) -> bool {
        let left = self.0.get();
        left.checked_sub(values).map(|rest| self.0.set(rest)).is_some()
    }
}

/// A tool's arguments or result as the record keeps them: a JSON object as it is, JSON text
/// of an object parsed (within the payload's [`TextBudget`]), anything else under `value`.
pub fn tool_value(value: &Value, texts: &TextBudget) -> Value {
    match value {
        Value::Object(_) => value.clone(),
        // JSON text is parsed only within the count limits left to the body (its own count
        // saw a string), and read as `Free`: serde_json's private keys are data.
        Value::String(s) => match counts::check(s.as_bytes(), counts::Layout::PROVIDER_PAYLOAD)
            .ok()
            .filter(|values| texts.take(*values))
            .and_then(|_| serde_json::from_str::<Free>(s).ok())
        {
            Some(Free(parsed @ Value::Object(_))) => parsed,
            _ => json!({ "value": s }),
        },
        Value::Null => Value::Null,
        other => json!({ "value": other }),
    }
}

/// Builds a record: members set only when they have a value.
#[derive(Debug, Default)]
pub struct Record(pub Map<String, Value>);

impl Record {
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        let value = value.into();
        if !value.is_null() {
            self.0.insert(key.to_owned(), value);
        }
        self
    }

    pub fn maybe<T: Into<Value>>(&mut self, key: &str, value: Option<T>) -> &mut Self {
        if let Some(v) = value {
            self.set(key, v);
        }
        self
    }
}

/// A cost in dollars as cents, to the hundredth of a cent.
pub fn cents_of_dollars(dollars: f64) -> Option<f64> {
    (dollars.is_finite() && dollars.abs() < 1e12).then(|| (dollars * 10_000.0).round() / 100.0)
}

/// A segment's `metadata`, made an object when it is not one.
pub fn segment_meta(segment: &mut Value) -> &mut Map<String, Value> {
    if !segment["metadata"].is_object() {
        segment["metadata"] = json!({});
    }
    match &mut segment["metadata"] {
        Value::Object(meta) => meta,
        _ => unreachable!("made an object above"),
    }
}

/// Per-turn figures on the turns of `segments`: a turn is a caller's segment and the first
/// agent reply after it (the greeting, with no caller's turn before it, has none). The
/// k-th turn's reply gets `agent(k)`, its caller's segment `user(k)`.
pub fn per_turn(
    segments: &mut [Value],
    agent: impl Fn(usize) -> Vec<(&'static str, f64)>,
    user: impl Fn(usize) -> Vec<(&'static str, f64)>,
) {
    let mut trigger = None;
    let mut k = 0;
    for i in 0..segments.len() {
        match segments[i]["role"].as_str() {
            Some("user") => trigger = Some(i),
            Some("agent") => {
                let Some(caller) = trigger.take() else { continue };
                let (to_agent, to_user) = (agent(k), user(k));
                if to_agent.is_empty() && to_user.is_empty() {
                    return;
                }
                let meta = segment_meta(&mut segments[i]);
                to_agent.into_iter().for_each(|(key, v)| _ = meta.insert(key.into(), v.into()));
                let meta = segment_meta(&mut segments[caller]);
                to_user.into_iter().for_each(|(key, v)| _ = meta.insert(key.into(), v.into()));
                k += 1;
            }
            _ => {}
        }
    }
}

/// Joins a tool's result to its call's `agent_function` segment (found by the call's id):
/// the result, whether it failed and when it ended, when the provider says.
pub fn join_result(call: &mut Value, result: &Value, failed: Option<bool>, ended: Option<i64>) {
    let tool = &mut call["tool"];
    tool["result"] = result.clone();
    if let Some(failed) = failed {
        tool["is_error"] = failed.into();
    }
    if let Some(ended) = ended {
        tool["end_ms"] = ended.into();
    }
}
