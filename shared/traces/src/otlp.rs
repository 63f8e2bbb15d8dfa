//! OTLP/HTTP's two encodings of a trace export (<https://opentelemetry.io/docs/specs/otlp/>):
//! binary protobuf (`application/x-protobuf`) and OTLP's JSON mapping (`application/json`:
//! lowerCamelCase fields, trace and span ids in hex, 64-bit integers as strings or numbers,
//! enums as integers, unknown fields ignored), and its answers in the request's encoding.

use opentelemetry_proto::tonic::collector::trace::v1::{ExportTracePartialSuccess, ExportTraceServiceResponse};
use prost::Message;
use serde_json::json;

use crate::ExportTraceServiceRequest;

/// How a request's body (and so its answer) is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Protobuf,
    Json,
}

impl Format {
    /// The format of a `Content-Type` (its media type, in any case; parameters such as
    /// `charset` ignored); `None` for any other type (415).
    pub fn of(content_type: &str) -> Option<Format> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Format::Protobuf)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Format::Json)
        } else {
            None
        }
    }

    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Protobuf => "application/x-protobuf",
            Format::Json => "application/json",
        }
    }
}

/// A body that is not an export request in its format: what was wrong, for the 400's
/// `google.rpc.Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Whether `body` holds more elements than an export may ([`crate::bounds`]): 413, before
/// it is decoded.
pub fn too_many_elements(format: Format, body: &[u8]) -> bool {
    match format {
        Format::Protobuf => crate::bounds::protobuf_over(body, crate::bounds::MAX_ELEMENTS),
        Format::Json => crate::bounds::json_over(body, crate::bounds::MAX_ELEMENTS),
    }
}

/// Reads an export request. An empty body is an empty request (OTLP: "an empty request is
/// 200"). Time and memory grow linearly with the body; nesting is bounded by the decoders
/// (prost's recursion limit of 100, serde_json's of 128).
pub fn read(format: Format, body: &[u8]) -> Result<ExportTraceServiceRequest, Malformed> {
    match format {
        Format::Protobuf => ExportTraceServiceRequest::decode(body)
            .map_err(|e| Malformed(format!("the body is not an ExportTraceServiceRequest in protobuf: {e}"))),
        Format::Json if body.iter().all(u8::is_ascii_whitespace) => Ok(ExportTraceServiceRequest::default()),
        Format::Json => serde_json::from_slice(body)
            .map_err(|e| Malformed(format!("the body is not an ExportTraceServiceRequest in OTLP JSON: {e}"))),
    }
}

/// The answer to an export: `ExportTraceServiceResponse`, with `partial_success` when spans
/// were refused (`rejected` of them, and why); in JSON `{}` when none were.
pub fn response(format: Format, rejected: u64, message: &str) -> Vec<u8> {
    let partial = (rejected > 0 || !message.is_empty()).then(|| ExportTracePartialSuccess {
        rejected_spans: i64::try_from(rejected).unwrap_or(i64::MAX),
        error_message: message.to_owned(),
    });
    match format {
        Format::Protobuf => ExportTraceServiceResponse { partial_success: partial }.encode_to_vec(),
        Format::Json => {
            let body = match partial {
                // Proto3's JSON mapping writes an int64 as a string.
                Some(p) => json!({"partialSuccess": {
                    "rejectedSpans": p.rejected_spans.to_string(), "errorMessage": p.error_message}}),
                None => json!({}),
            };
            body.to_string().into_bytes()
        }
    }
}

/// The answer to an export of a signal that is not kept (logs, metrics): a partial success
/// that says so. Their responses have the trace response's shape on the wire (field 1 the
/// count refused, field 2 the message); in JSON only the message is written, as the count's
/// name differs by signal and it is 0.
pub fn not_kept(format: Format, message: &str) -> Vec<u8> {
    match format {
        Format::Protobuf => response(Format::Protobuf, 0, message),
        Format::Json => json!({"partialSuccess": {"errorMessage": message}}).to_string().into_bytes(),
    }
}

/// `google.rpc.Status` (google/rpc/status.proto), the body of OTLP/HTTP's failures: its
/// `details` (field 3) are never sent.
#[derive(Clone, PartialEq, Message)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// The gRPC code that goes with an HTTP status in a `google.rpc.Status` (the mapping of
/// google/rpc/code.proto).
fn grpc_code(http_status: u16) -> i32 {
    match http_status {
        400 | 413 | 415 => 3, // INVALID_ARGUMENT
        401 => 16,            // UNAUTHENTICATED
        403 => 7,             // PERMISSION_DENIED
        404 => 5,             // NOT_FOUND
        429 => 8,             // RESOURCE_EXHAUSTED
        503 => 14,            // UNAVAILABLE
        _ => 13,              // INTERNAL
    }
}

/// A failure's body: `google.rpc.Status` with the code for `http_status` and `message`.
pub fn status(format: Format, http_status: u16, message: &str) -> Vec<u8> {
    let code = grpc_code(http_status);
    match format {
        Format::Protobuf => Status { code, message: message.to_owned() }.encode_to_vec(),
        Format::Json => json!({"code": code, "message": message}).to_string().into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_media_type_decides_the_format() {
        assert_eq!(Format::of("application/x-protobuf"), Some(Format::Protobuf));
        assert_eq!(Format::of("Application/JSON; charset=utf-8"), Some(Format::Json));
        for other in ["", "text/plain", "application/protobuf", "application/jsonx", "application/grpc"] {
            assert_eq!(Format::of(other), None, "{other}");
        }
    }

    #[test]
    fn answers_are_otlp_messages_in_the_requests_encoding() {
        assert_eq!(response(Format::Json, 0, ""), b"{}");
        assert!(response(Format::Protobuf, 0, "").is_empty());
        let json: serde_json::Value = serde_json::from_slice(&response(Format::Json, 2, "bad ids")).unwrap();
        assert_eq!(json, json!({"partialSuccess": {"rejectedSpans": "2", "errorMessage": "bad ids"}}));
        let proto = ExportTraceServiceResponse::decode(&response(Format::Protobuf, 2, "bad ids")[..]).unwrap();
        assert_eq!(proto.partial_success.map(|p| (p.rejected_spans, p.error_message)), Some((2, "bad ids".into())));
        let s = Status::decode(&status(Format::Protobuf, 400, "no")[..]).unwrap();
        assert_eq!((s.code, s.message.as_str()), (3, "no"));
        assert_eq!(status(Format::Json, 429, "slow down"), br#"{"code":8,"message":"slow down"}"#);
    }

    #[test]
    fn an_empty_body_is_an_empty_request_and_garbage_is_malformed() {
        assert_eq!(read(Format::Protobuf, b"").unwrap(), ExportTraceServiceRequest::default());
        assert_eq!(read(Format::Json, b" ").unwrap(), ExportTraceServiceRequest::default());
        assert_eq!(read(Format::Json, b"{}").unwrap(), ExportTraceServiceRequest::default());
        assert!(read(Format::Protobuf, &[0x0a, 0xff, 0xff]).is_err());
        assert!(read(Format::Json, b"{\"resourceSpans\": 3}").is_err());
        assert!(read(Format::Json, b"[").is_err());
    }
}
