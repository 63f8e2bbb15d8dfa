//! The one-way path from request bytes to a call document: parse (counting limits as it
//! reads) → validate → normalise.

use super::document::{CallDocument, Operation};
use crate::api::counted::{self, Counted};
use crate::api::{counts, BodyError, Code, CreateCall, Problem, SendCallData, Violation};
use crate::{normalize, validate};

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Not JSON, or not a JSON object: 400.
    Unreadable(BodyError),
    /// Read, but breaks rules: 422, every violation listed.
    Invalid(Vec<Violation>),
    /// Past a count limit ([`crate::api::counts`]): 422 naming that one place; not parsed.
    OverLimit(Violation),
}

impl From<Rejection> for Problem {
    fn from(r: Rejection) -> Problem {
        match r {
            Rejection::Unreadable(e) => Problem::unreadable(&e),
            Rejection::Invalid(v) => Problem::invalid(v),
            Rejection::OverLimit(v) => Problem::over_limit(v),
        }
    }
}

/// Reads an operation B body; fails when it is past a count limit or not a JSON object.
/// Its words are read unwrapped (`counted::plain_words`).
pub fn parse_create_call(body: &[u8]) -> Result<CreateCall, Rejection> {
    let layout = counts::Layout::CREATE_CALL;
    judge(counted::parse_plain_words(body, layout), body, layout).map(|(t, _)| t)
}

/// Reads an operation A body; fails when it is past a count limit or not a JSON object.
pub fn parse_send_call_data(body: &[u8]) -> Result<SendCallData, Rejection> {
    parse(body, counts::Layout::SEND_CALL_DATA)
}

/// The typed parse, counting as it reads, so nothing is built for an element past a limit.
/// A body it cannot judge alone (not JSON, not an object) is judged as before: the count
/// scan first, then the plain parse's error.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], layout: counts::Layout) -> Result<T, Rejection> {
    parse_counting(body, layout).map(|(t, _)| t)
}

/// [`parse`], answering also the values counted (words aside).
pub(crate) fn parse_counting<T: serde::de::DeserializeOwned>(
    body: &[u8],
    layout: counts::Layout,
) -> Result<(T, usize), Rejection> {
    judge(counted::parse(body, layout), body, layout)
}

/// The answer to a counted parse of `body`: its own when it read the body whole or stopped
/// past a limit, else the count scan's and the plain parse's.
fn judge<T: serde::de::DeserializeOwned>(
    counted: Counted<T>,
    body: &[u8],
    layout: counts::Layout,
) -> Result<(T, usize), Rejection> {
    match counted {
        Counted::Parsed(t, values) => Ok((t, values)),
        // The parse stopped at the first element past a limit; the scan, which keeps the
        // keys, names it (it stops at the same one: the counts are the same, event for event).
        Counted::Over(v) => Err(Rejection::OverLimit(counts::check(body, layout).err().unwrap_or(v))),
        Counted::Unsure => {
            let values = counts::check(body, layout).map_err(Rejection::OverLimit)?;
            let t = serde_json::from_slice(body).map_err(|e| Rejection::Unreadable(BodyError::from_json(&e)))?;
            Ok((t, values))
        }
    }
}

/// Validates and normalises an operation B body.
pub fn accept_create_call(call: CreateCall) -> Result<CallDocument, Vec<Violation>> {
    let violations = validate::create_call(&call);
    if violations.is_empty() {
        Ok(normalize::create_call(call))
    } else {
        Err(violations)
    }
}

/// Validates and normalises an operation A body.
pub fn accept_send_call_data(call: SendCallData) -> Result<CallDocument, Vec<Violation>> {
    let violations = validate::send_call_data(&call);
    if violations.is_empty() {
        Ok(normalize::send_call_data(call))
    } else {
        Err(violations)
    }
}

/// Validates and normalises an operation B record mapped from a provider's webhook: as
/// [`accept_create_call`], but what a provider may not send is not required (a recording
/// URL, any segment, a turn's end; see [`may_lack`]).
pub fn accept_relaxed(call: CreateCall) -> Result<CallDocument, Vec<Violation>> {
    let violations: Vec<Violation> = validate::create_call(&call).into_iter().filter(|v| !may_lack(v)).collect();
    if violations.is_empty() {
        Ok(normalize::create_call(call))
    } else {
        Err(violations)
    }
}

/// Whether `v` only says a field a provider may not send is missing: `recording_url`, the
/// timeline's items, or a turn's timing (ElevenLabs' turns have a start only, Retell's
/// turns with no words have none).
fn may_lack(v: &Violation) -> bool {
    let segment =
        |p: &str| p.strip_prefix("/transcript_with_tool_calls/").is_some_and(|i| i.bytes().all(|b| b.is_ascii_digit()));
    match (v.pointer.as_str(), v.code) {
        ("/recording_url", Code::Required) => true,
        ("/transcript_with_tool_calls", Code::Required | Code::Length) => true,
        (p, Code::Required) => segment(p),
        _ => false,
    }
}

/// Bytes to document for `operation`, the whole pure pipeline.
pub fn ingest(operation: Operation, body: &[u8]) -> Result<CallDocument, Rejection> {
    match operation {
        Operation::CreateCall => accept_create_call(parse_create_call(body)?).map_err(Rejection::Invalid),
        Operation::SendCallData => accept_send_call_data(parse_send_call_data(body)?).map_err(Rejection::Invalid),
        // Mapped first: `providers::ingest_any` reads every operation.
        Operation::ProviderWebhook(provider) => Err(Rejection::Invalid(vec![Violation::new(
            "/",
            Code::OneOf,
            format!("a {} webhook is read by providers::ingest", provider.as_str()),
        )])),
    }
}

#[cfg(test)]
mod tests {
    use super::{ingest, Rejection};
    use crate::call::Operation;

    /// Found by the fuzzer: bad bytes inside a value of the wrong type were skipped
    /// unchecked, and the body judged (422) instead of refused (400).
    #[test]
    fn malformed_strings_inside_wrong_typed_values_are_not_json() {
        let bodies: [&[u8]; 4] = [
            b"{\"transcript\":[\"\xff\"]}",
            b"{\"transcript\":[\"\\ud800\"]}",
            b"{\"call_id\":{\"a\":\"\xff\"}}",
            b"{\"agentId\":[\"\xff\"]}",
        ];
        for body in bodies {
            for op in [Operation::CreateCall, Operation::SendCallData] {
                let r = ingest(op, body);
                assert!(
                    matches!(r, Err(Rejection::Unreadable(_))),
                    "{:?} {op:?}: {r:?}",
                    String::from_utf8_lossy(body)
                );
            }
        }
    }
}
