//! Fuzzes the whole pure pipeline, `providers::ingest_any` (parse → validate → normalise;
//! a provider's webhook mapped first), on the request bytes of both operations and of the
//! three providers' webhooks.
//!
//! Every input goes through all five. Beyond "never panics", it checks what the
//! handlers rely on:
//! - a body is refused as unreadable (400) only when it is not a JSON object, and a JSON
//!   object is refused only as invalid (422) or past a count limit (422, one violation);
//! - an invalid body (422) lists at least one violation, each with a JSON pointer,
//!   sorted and without repeats;
//! - an accepted body's stored form (`to_json`) is JSON that parses back into an object
//!   with the operation, schema version and a non-empty call id, the same bytes every
//!   time, and hashes (`digest_of`) to 64 hex digits;
//! - the counted parse's reader (`api::reader`) never reads a value serde_json does not, nor
//!   a different one (compared as written back, so `-0.0` is not `0`).

#![no_main]

use call_ingest_core::api::counts::{self, Layout};
use call_ingest_core::api::free::Free;
use call_ingest_core::api::reader::Reader;
use call_ingest_core::api::{BodyError, CreateCall, SendCallData};
use call_ingest_core::call::{parse_create_call, parse_send_call_data};
use call_ingest_core::call::{CallDocument, Operation, Rejection, SCHEMA_VERSION};
use call_ingest_core::providers::{ingest_any, Provider};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // `Free`, as the pipeline reads: serde_json's `Value` parses a string again behind a
    // private key (`api::free`).
    let is_object = matches!(serde_json::from_slice::<Free>(data), Ok(Free(Value::Object(_))));
    same_as_scan_then_parse(data);
    reads_as_serde_json(data);
    let webhooks = Provider::ALL.map(Operation::ProviderWebhook);
    for operation in [Operation::CreateCall, Operation::SendCallData].into_iter().chain(webhooks) {
        check(operation, data, is_object);
    }
});

fn check(operation: Operation, data: &[u8], is_object: bool) {
    match ingest_any(operation, data) {
        Err(Rejection::Unreadable(_)) => {
            assert!(!is_object, "{operation:?}: a JSON object refused as unreadable");
        }
        // Past a count limit: found before parsing, so the body may be any bytes whose
        // start is JSON; the one violation names where.
        Err(Rejection::OverLimit(v)) => {
            assert!(v.pointer.is_empty() || v.pointer.starts_with('/'), "{operation:?}: {:?}", v.pointer);
            assert_eq!(v.code.as_str(), "limit", "{operation:?}");
        }
        Err(Rejection::Invalid(violations)) => {
            assert!(is_object, "{operation:?}: read a body that is not a JSON object");
            assert!(!violations.is_empty(), "{operation:?}: invalid without a violation");
            for v in &violations {
                assert!(
                    v.pointer.is_empty() || v.pointer.starts_with('/'),
                    "{operation:?}: not a JSON pointer: {:?}",
                    v.pointer
                );
            }
            assert!(
                violations.windows(2).all(|w| w[0] < w[1]),
                "{operation:?}: violations not sorted and unique: {violations:?}"
            );
        }
        Ok(doc) => {
            assert!(is_object, "{operation:?}: accepted a body that is not a JSON object");
            assert!(!doc.call_id().is_empty(), "{operation:?}: accepted without a call id");
            let json = doc.to_json();
            assert!(!json.is_empty(), "{operation:?}: to_json gave nothing");
            assert_eq!(json, doc.to_json(), "{operation:?}: to_json not deterministic");
            let stored: Value = match serde_json::from_slice(&json) {
                Ok(Free(v)) => v,
                Err(e) => panic!("{operation:?}: stored form is not JSON ({e}): {}", String::from_utf8_lossy(&json)),
            };
            assert_eq!(stored["operation"], operation.as_str(), "{operation:?}: operation");
            assert_eq!(stored["schema_version"], SCHEMA_VERSION, "{operation:?}: schema_version");
            assert!(stored["call"].is_object(), "{operation:?}: call is not an object");
            let digest = CallDocument::digest_of("agt_fuzz", &json);
            assert!(
                digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
                "{operation:?}: digest {digest:?}"
            );
        }
    }
}

/// The pipeline counts limits while it parses (`api::counted`); the answer is the one the
/// count scan and then the plain parse gave, for every input.
fn same_as_scan_then_parse(data: &[u8]) {
    macro_rules! scan_then_parse {
        ($t:ty, $layout:expr) => {
            counts::check(data, $layout).map_err(Rejection::OverLimit).and_then(|_values| {
                serde_json::from_slice::<$t>(data).map_err(|e| Rejection::Unreadable(BodyError::from_json(&e)))
            })
        };
    }
    assert_eq!(parse_create_call(data), scan_then_parse!(CreateCall, Layout::CREATE_CALL));
    assert_eq!(parse_send_call_data(data), scan_then_parse!(SendCallData, Layout::SEND_CALL_DATA));
}

/// What the reader reads is what serde_json reads; where serde_json refuses, so does it.
fn reads_as_serde_json(data: &[u8]) {
    use serde::Deserialize;
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut reader = Reader::new(text);
    let Ok(ours) = Value::deserialize(&mut reader).and_then(|v| reader.end().map(|()| v)) else { return };
    match serde_json::from_str::<Value>(text) {
        Ok(theirs) => assert_eq!(ours.to_string(), theirs.to_string(), "the reader read otherwise"),
        Err(e) => panic!("the reader read {ours} where serde_json refuses ({e})"),
    }
}
