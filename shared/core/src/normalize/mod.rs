//! Normalisation: a valid request becomes the [`CallDocument`] we store, the same shape for
//! both operations. Timestamps in epoch milliseconds, segment times filled in and rounded
//! up to whole milliseconds, the plain-text transcript derived when absent, metadata
//! merged, sentiment lower-cased.
//!
//! These functions expect a request that passed [`crate::validate`]; on anything else they
//! still never panic, they just leave what they cannot normalise out.

pub mod metadata;
pub mod timestamps;
pub mod transcript;

use serde_json::{Map, Value};

use crate::api::create_call::Segment;
use crate::api::send_call_data::{SimpleMetadata, TranscriptItem};
use crate::api::{CreateCall, Number, SendCallData};
use crate::call::document::{CallDocument, Operation, Summary};

/// Normalises a validated operation B body.
pub fn create_call(mut call: CreateCall) -> CallDocument {
    let start = call.start_timestamp.and_then(|n| timestamps::epoch_millis(n).ok());
    let end = call.end_timestamp.and_then(|n| timestamps::epoch_millis(n).ok());
    call.start_timestamp = start.map(int);
    call.end_timestamp = end.map(int);
    let duration = match call.duration_ms {
        Some(d) => u64::try_from(d).ok(),
        None => start.zip(end).map(|(s, e)| e.saturating_sub(s)),
    };
    call.duration_ms = duration.and_then(|d| i64::try_from(d).ok());
    if let Some(segments) = &mut call.transcript_with_tool_calls {
        segments.iter_mut().for_each(segment);
    }
    if call.transcript.is_none() {
        call.transcript = Some(transcript::derive(call.transcript_with_tool_calls.as_deref().unwrap_or_default()));
    }
    if let Some(sentiment) = &mut call.user_sentiment {
        sentiment.make_ascii_lowercase();
    }
    if let Some(metadata) = call.metadata.take() {
        call.general_meta_data_raw = Some(metadata::merge(metadata, call.general_meta_data_raw.take()));
    }
    CallDocument::new(Operation::CreateCall, call, Summary { start_ms: start, end_ms: end, duration_ms: duration })
}

/// Normalises a validated operation A body into the same shape: transcript items become
/// segments, ISO times milliseconds, the metadata object `general_meta_data_raw`.
pub fn send_call_data(request: SendCallData) -> CallDocument {
    let start =
        request.started_at.as_deref().and_then(timestamps::rfc3339_millis).and_then(|ms| u64::try_from(ms).ok());
    let end = request.ended_at.as_deref().and_then(timestamps::rfc3339_millis).and_then(|ms| u64::try_from(ms).ok());
    let metadata = request.metadata.unwrap_or_default();
    let duration = match metadata.duration_seconds {
        Some(secs) => timestamps::seconds_to_millis(secs.as_f64()),
        None => start.zip(end).map(|(s, e)| e.saturating_sub(s)),
    };
    let segments: Vec<Segment> = request.transcript.unwrap_or_default().into_iter().map(item_segment).collect();
    let call = CreateCall {
        call_id: request.call_id,
        transcript: Some(transcript::derive(&segments)),
        transcript_with_tool_calls: Some(segments),
        start_timestamp: start.map(int),
        end_timestamp: end.map(int),
        duration_ms: duration.and_then(|d| i64::try_from(d).ok()),
        caller_phone_number: metadata.caller_phone.clone(),
        general_meta_data_raw: Some(simple_metadata(metadata)),
        extra: unknown_fields(request.extra),
        ..CreateCall::default()
    };
    CallDocument::new(Operation::SendCallData, call, Summary { start_ms: start, end_ms: end, duration_ms: duration })
}

fn int(ms: u64) -> Number {
    Number::Int(ms as i64)
}

/// Rounds a segment's times up to whole milliseconds and fills in the missing ones (see
/// [`segment_bounds`]).
fn segment(s: &mut Segment) {
    let (start, end) = segment_bounds(s);
    s.start_ms = start.map(Number::Int);
    s.end_ms = end.map(Number::Int);
    round_up(&mut s.duration_ms);
    if let Some(words) = &mut s.words {
        for w in words.iter_mut() {
            round_up(&mut w.start_ms);
            round_up(&mut w.end_ms);
        }
    }
    if let Some(tool) = &mut s.tool {
        round_up(&mut tool.start_ms);
        round_up(&mut tool.end_ms);
    }
}

/// A segment's start and end as stored, in whole milliseconds: as sent (rounded up), else
/// the start of its first word and the end of its last, else start + duration. Validation
/// checks these same values, so what is stored is what was checked.
pub fn segment_bounds(s: &Segment) -> (Option<i64>, Option<i64>) {
    let ms = |n: Option<Number>| n.and_then(Number::ceil_non_negative);
    let words = s.words.as_deref().unwrap_or_default();
    let start = ms(s.start_ms).or_else(|| words.first().and_then(|w| ms(w.start_ms)));
    let end = ms(s.end_ms)
        .or_else(|| words.last().and_then(|w| ms(w.end_ms)))
        .or_else(|| start?.checked_add(ms(s.duration_ms)?));
    (start, end)
}

fn round_up(value: &mut Option<Number>) {
    if let Some(Number::Float(_)) = value {
        *value = value.and_then(Number::ceil_non_negative).map(Number::Int);
    }
}

/// An operation A transcript item as a segment: `content` is its text, `timestamp` is
/// kept as sent beside `timestamp_ms` when it is RFC 3339, unknown fields are nested.
fn item_segment(item: TranscriptItem) -> Segment {
    let mut extra = unknown_fields(item.extra);
    if let Some(ts) = item.timestamp {
        if let Some(ms) = timestamps::rfc3339_millis(&ts) {
            extra.insert("timestamp_ms".to_owned(), Value::from(ms));
        }
        extra.insert("timestamp".to_owned(), Value::String(ts));
    }
    Segment { role: item.role, text: item.content, extra, ..Segment::default() }
}

/// Operation A's unknown fields, nested under `unknown_fields`: they belong to A's shape,
/// and flattened into B's they could pose as B's fields (`call_id`, `start_ms`, ...).
fn unknown_fields(extra: Map<String, Value>) -> Map<String, Value> {
    if extra.is_empty() {
        return extra;
    }
    Map::from_iter([("unknown_fields".to_owned(), Value::Object(extra))])
}

fn simple_metadata(metadata: SimpleMetadata) -> Map<String, Value> {
    match serde_json::to_value(metadata) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}
