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
use crate::call::{CallDocument, Operation, Summary};

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
    let start = request.started_at.as_deref().and_then(timestamps::rfc3339_millis).and_then(|ms| u64::try_from(ms).ok());
    let end = request.ended_at.as_deref().and_then(timestamps::rfc3339_millis).and_then(|ms| u64::try_from(ms).ok());
    let metadata = request.metadata.unwrap_or_default();
    let duration = match metadata.duration_seconds {
        Some(secs) => Number::Float(secs.as_f64() * 1000.0).ceil_non_negative().map(|ms| ms as u64),
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
        extra: request.extra,
        ..CreateCall::default()
    };
    CallDocument::new(Operation::SendCallData, call, Summary { start_ms: start, end_ms: end, duration_ms: duration })
}

fn int(ms: u64) -> Number {
    Number::Int(ms as i64)
}

/// Rounds a segment's times up to whole milliseconds and fills in the missing ones from
/// its words, or from start + duration.
fn segment(s: &mut Segment) {
    round_up(&mut s.start_ms);
    round_up(&mut s.end_ms);
    round_up(&mut s.duration_ms);
    if let Some(words) = &mut s.words {
        for w in words.iter_mut() {
            round_up(&mut w.start_ms);
            round_up(&mut w.end_ms);
        }
        if s.start_ms.is_none() {
            s.start_ms = words.first().and_then(|w| w.start_ms);
        }
        if s.end_ms.is_none() {
            s.end_ms = words.last().and_then(|w| w.end_ms);
        }
    }
    if let (None, Some(Number::Int(start)), Some(Number::Int(duration))) = (s.end_ms, s.start_ms, s.duration_ms) {
        s.end_ms = Some(Number::Int(start.saturating_add(duration)));
    }
    if let Some(tool) = &mut s.tool {
        round_up(&mut tool.start_ms);
        round_up(&mut tool.end_ms);
    }
}

fn round_up(value: &mut Option<Number>) {
    if let Some(Number::Float(_)) = value {
        *value = value.and_then(Number::ceil_non_negative).map(Number::Int);
    }
}

/// An operation A transcript item as a segment: `content` is its text, and `timestamp` is
/// kept as sent beside `timestamp_ms` when it is RFC 3339.
fn item_segment(item: TranscriptItem) -> Segment {
    let mut extra = item.extra;
    if let Some(ts) = item.timestamp {
        if let Some(ms) = timestamps::rfc3339_millis(&ts) {
            extra.insert("timestamp_ms".to_owned(), Value::from(ms));
        }
        extra.insert("timestamp".to_owned(), Value::String(ts));
    }
    Segment { role: item.role, text: item.content, extra, ..Segment::default() }
}

fn simple_metadata(metadata: SimpleMetadata) -> Map<String, Value> {
    match serde_json::to_value(metadata) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}
