//! How many elements an export holds, counted on its bytes before it is decoded: a decoded
//! span takes about 300 bytes however few it was sent in (an empty span is 2 bytes of
//! protobuf, `{}` in JSON), so a body within the size caps could expand to gigabytes. An
//! export past [`MAX_ELEMENTS`] is refused (413) before anything is decoded.
//!
//! Protobuf: the spans, and the attributes, events and links of spans, resources and scopes,
//! found at their field numbers (opentelemetry/proto/trace/v1), reading only tags and
//! lengths (prost's own varint and key decoders). JSON: every object (`{`), a bound on all
//! of them (spans, attributes and their values).

use prost::encoding::{decode_key, decode_varint, WireType};

/// The most elements an export may hold: a pipecat or LiveKit export holds at most 512
/// spans (the BatchSpanProcessor's batch) with a few dozen attributes each.
pub const MAX_ELEMENTS: usize = 200_000;

/// Whether the protobuf `body` holds more than `limit` elements (or is not protobuf the
/// decoder would take: then the decoder says why).
pub fn protobuf_over(body: &[u8], limit: usize) -> bool {
    let mut count = 0usize;
    // ExportTraceServiceRequest.resource_spans = 1
    walk(body, &mut count, limit, &|field| match field {
        1 => Some(Level::ResourceSpans),
        _ => None,
    });
    count > limit
}

/// JSON: more than `limit` objects.
pub fn json_over(body: &[u8], limit: usize) -> bool {
    memchr::memchr_iter(b'{', body).nth(limit).is_some()
}

#[derive(Clone, Copy)]
enum Level {
    ResourceSpans,
    Resource,
    ScopeSpans,
    Scope,
    Span,
    Event,
    Link,
    KeyValue,
}

/// The nested messages of `level` that are counted or walked into, by field number.
fn children(level: Level, field: u32) -> Option<Level> {
    use Level::*;
    match (level, field) {
        (ResourceSpans, 1) => Some(Resource),
        (ResourceSpans, 2) => Some(ScopeSpans),
        (Resource, 1) => Some(KeyValue),
        (ScopeSpans, 1) => Some(Scope),
        (ScopeSpans, 2) => Some(Span),
        (Scope, 3) => Some(KeyValue),
        (Span, 9) => Some(KeyValue),
        (Span, 11) => Some(Event),
        (Span, 13) => Some(Link),
        (Event, 3) | (Link, 4) => Some(KeyValue),
        _ => None,
    }
}

/// Counts the messages under `bytes` that `child` names, walking into each; stops once
/// `count` passes `limit` or the bytes are not protobuf.
fn walk(mut bytes: &[u8], count: &mut usize, limit: usize, child: &dyn Fn(u32) -> Option<Level>) {
    while !bytes.is_empty() && *count <= limit {
        let Ok((field, wire)) = decode_key(&mut bytes) else { return };
        let len = match wire {
            WireType::LengthDelimited => match decode_varint(&mut bytes) {
                Ok(len) if len as usize <= bytes.len() => len as usize,
                _ => return,
            },
            WireType::Varint => {
                if decode_varint(&mut bytes).is_err() {
                    return;
                }
                continue;
            }
            WireType::SixtyFourBit if bytes.len() >= 8 => 8,
            WireType::ThirtyTwoBit if bytes.len() >= 4 => 4,
            _ => return,
        };
        let (inner, rest) = bytes.split_at(len);
        if wire == WireType::LengthDelimited {
            if let Some(level) = child(field) {
                *count += 1;
                // A KeyValue's value may nest arrays and lists: each counted as one, with
                // its size bounded by the body (their elements are decoded as they come).
                if !matches!(level, Level::KeyValue) {
                    walk(inner, count, limit, &|f| children(level, f));
                }
            }
        }
        bytes = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExportTraceServiceRequest, Message, ResourceSpans, ScopeSpans, Span};

    fn export(spans: usize, attributes: usize) -> Vec<u8> {
        let span = Span {
            attributes: (0..attributes).map(|i| crate::text_attribute(&i.to_string(), "v")).collect(),
            ..Default::default()
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans { spans: vec![span; spans], ..Default::default() }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    }

    #[test]
    fn spans_and_their_attributes_are_counted_before_decoding() {
        // 1 resource spans + 1 scope spans + 10 spans × (1 + 3 attributes).
        assert!(!protobuf_over(&export(10, 3), 42));
        assert!(protobuf_over(&export(10, 3), 41));
        // Empty spans, 2 bytes each: a few MB of them is over the bound.
        let mut body = vec![0x0a]; // resource_spans
        let scope: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], 300_000).flatten().collect();
        let mut inner = vec![0x12]; // scope_spans
        prost::encoding::encode_varint(scope.len() as u64, &mut inner);
        inner.extend(&scope);
        prost::encoding::encode_varint(inner.len() as u64, &mut body);
        body.extend(&inner);
        assert!(protobuf_over(&body, MAX_ELEMENTS));
    }

    #[test]
    fn json_objects_are_counted() {
        assert!(!json_over(b"{\"resourceSpans\":[{}]}", 2));
        assert!(json_over(b"{\"resourceSpans\":[{},{}]}", 2));
    }
}
