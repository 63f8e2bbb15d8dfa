//! The rules that span fields, which garde's per-field rules cannot express: an end
//! before its start, timing on messages, a node on transitions, timestamps in range.

use serde_json::Value;

use crate::api::create_call::{Segment, Word};
use crate::api::number::MAX_SAFE_INTEGER;
use crate::api::pointer::Pointer;
use crate::api::problem::preview;
use crate::api::{messages, rules};
use crate::api::{Code, CreateCall, Number, SendCallData, Violation};
use crate::normalize::{self, timestamps};

/// Most violations reported for words in one call. A call may hold 400,000 words, each
/// with up to three violations: past this, one `limit` violation says the other words were
/// not checked, and the answer (and the memory it takes) stays small.
pub const MAX_WORD_VIOLATIONS: usize = 1_000;

/// Cross-field rules of operation B.
pub fn create_call(call: &CreateCall, out: &mut Vec<Violation>) {
    let root = Pointer::Root;
    let start = epoch(call.start_timestamp, &root.key("start_timestamp"), out);
    let end = epoch(call.end_timestamp, &root.key("end_timestamp"), out);
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            out.push(Violation::new(
                "/end_timestamp",
                Code::Range,
                format!("must be >= start_timestamp ({s} ms once both are in milliseconds)"),
            ));
        }
    }
    if let Some(segments) = &call.transcript_with_tool_calls {
        let list = root.key("transcript_with_tool_calls");
        let mut words_left = Some(MAX_WORD_VIOLATIONS);
        for (i, segment) in segments.iter().enumerate() {
            self::segment(segment, &list.index(i), &mut words_left, out);
        }
    }
    if let Some(metadata) = &call.metadata {
        call_metadata(metadata, &root.key("metadata"), out);
    }
}

/// Cross-field rules of operation A.
pub fn send_call_data(call: &SendCallData, out: &mut Vec<Violation>) {
    let started = rfc3339(call.started_at.as_deref(), "/startedAt", out);
    let ended = rfc3339(call.ended_at.as_deref(), "/endedAt", out);
    if let (Some(s), Some(e)) = (started, ended) {
        if e < s {
            out.push(Violation::new("/endedAt", Code::Range, "must not be before startedAt"));
        }
    }
}

fn epoch(value: Option<Number>, at: &Pointer<'_>, out: &mut Vec<Violation>) -> Option<u64> {
    match timestamps::epoch_millis(value?) {
        Ok(ms) => Some(ms),
        Err(message) => {
            out.push(Violation::new(at.render(), Code::Range, message));
            None
        }
    }
}

fn rfc3339(value: Option<&str>, pointer: &str, out: &mut Vec<Violation>) -> Option<i64> {
    let value = value?;
    match timestamps::rfc3339_millis(value) {
        Some(ms) if ms < 0 => {
            out.push(Violation::new(pointer, Code::Range, "must not be before 1970-01-01T00:00:00Z"));
            None
        }
        Some(ms) => Some(ms),
        None => {
            out.push(Violation::new(
                pointer,
                Code::Format,
                format!("must be an RFC 3339 time such as 2026-11-21T10:00:00Z, got {}", preview(value)),
            ));
            None
        }
    }
}

/// `words_left`: how many more violations words may report; `None` once they stopped.
fn segment(segment: &Segment, at: &Pointer<'_>, words_left: &mut Option<usize>, out: &mut Vec<Violation>) {
    match segment.role.as_deref() {
        Some("user" | "agent") if !has_timing(segment) => out.push(Violation::new(
            at.render(),
            Code::Required,
            "a user or agent segment needs timing: a non-empty words list, start_ms with end_ms, or start_ms with duration_ms",
        )),
        Some("node_transition") => match &segment.node {
            None => out.push(Violation::new(
                at.key("node").render(),
                Code::Required,
                "a node_transition needs node with from and to",
            )),
            Some(node) => {
                let node_at = at.key("node");
                if node.from.is_none() {
                    out.push(Violation::new(node_at.key("from").render(), Code::Required, "is required"));
                }
                if node.to.is_none() {
                    out.push(Violation::new(node_at.key("to").render(), Code::Required, "is required"));
                }
            }
        },
        _ => {}
    }
    bounds(segment, at, out);
    if let Some(words) = &segment.words {
        let list = at.key("words");
        for (j, word) in words.iter().enumerate() {
            let Some(left) = *words_left else { break };
            let before = out.len();
            self::word(word, &list.index(j), out);
            match left.checked_sub(out.len() - before) {
                Some(left) => *words_left = Some(left),
                None => {
                    out.truncate(before);
                    out.push(Violation::new(
                        list.index(j).render(),
                        Code::Limit,
                        format!("more than {MAX_WORD_VIOLATIONS} violations in words; the words from here on were not checked"),
                    ));
                    *words_left = None;
                }
            }
        }
    }
    if let Some(tool) = &segment.tool {
        ordered(tool.start_ms, tool.end_ms, &at.key("tool"), out);
    }
}

/// The segment's stored start and end (sent, or from its words, or start + duration) are
/// in order and in range.
fn bounds(segment: &Segment, at: &Pointer<'_>, out: &mut Vec<Violation>) {
    let (Some(start), Some(end)) = normalize::segment_bounds(segment) else {
        return;
    };
    let sent_end = segment.end_ms.is_some();
    if end > MAX_SAFE_INTEGER {
        let field = if sent_end { "end_ms" } else { "duration_ms" };
        out.push(Violation::new(at.key(field).render(), Code::Range, format!("must end by {MAX_SAFE_INTEGER} ms")));
    } else if end < start {
        let (pointer, message) = if sent_end {
            (at.key("end_ms").render(), format!("must be >= start_ms ({start})"))
        } else {
            (at.render(), format!("ends ({end} ms, from its words) before it starts ({start} ms)"))
        };
        out.push(Violation::new(pointer, Code::Range, message));
    }
}

fn has_timing(s: &Segment) -> bool {
    s.words.as_ref().is_some_and(|w| !w.is_empty())
        || (s.start_ms.is_some() && (s.end_ms.is_some() || s.duration_ms.is_some()))
}

/// A word's times: each in range, the end not before the start.
fn word(word: &Word, at: &Pointer<'_>, out: &mut Vec<Violation>) {
    for (field, value) in [("start_ms", &word.start_ms), ("end_ms", &word.end_ms)] {
        if let Err(e) = rules::millis(value, &()) {
            let (code, message) = messages::decode(e.message());
            out.push(Violation::new(at.key(field).render(), code, message));
        }
    }
    ordered(word.start_ms, word.end_ms, at, out);
}

/// `end_ms >= start_ms` where both are sent, compared as the whole milliseconds we store.
fn ordered(start: Option<Number>, end: Option<Number>, at: &Pointer<'_>, out: &mut Vec<Violation>) {
    let (Some(start), Some(end)) = (start.and_then(Number::ceil_non_negative), end.and_then(Number::ceil_non_negative))
    else {
        return;
    };
    if end < start {
        out.push(Violation::new(at.key("end_ms").render(), Code::Range, format!("must be >= start_ms ({start})")));
    }
}

/// A group of typed members: its key, their keys, the check and what it expects.
type Members = (&'static str, &'static [&'static str], fn(&Value) -> bool, &'static str);

/// The typed members of the call metadata object (any other key is accepted).
fn call_metadata(metadata: &serde_json::Map<String, Value>, at: &Pointer<'_>, out: &mut Vec<Violation>) {
    const MEMBERS: [Members; 2] = [
        ("ai_models", &["asr_model", "llm_model", "tts_model"], Value::is_string, "a string"),
        ("usage_token", &["stt_duration_seconds", "llm_token", "tts_characters_count"], Value::is_number, "a number"),
    ];
    for (group, keys, is_ok, expected) in MEMBERS {
        let group_at = at.key(group);
        match metadata.get(group) {
            None | Some(Value::Null) => {}
            Some(Value::Object(members)) => {
                for key in keys {
                    match members.get(*key) {
                        None | Some(Value::Null) => {}
                        Some(v) if is_ok(v) => {}
                        Some(_) => out.push(Violation::new(
                            group_at.key(key).render(),
                            Code::Type,
                            format!("must be {expected}"),
                        )),
                    }
                }
            }
            Some(_) => out.push(Violation::new(group_at.render(), Code::Type, "must be an object")),
        }
    }
}
