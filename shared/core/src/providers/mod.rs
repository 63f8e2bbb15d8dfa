//! Providers' own end-of-call webhooks (Vapi, Retell, ElevenLabs): which events are calls,
//! their mapping to operation B's record ([`vapi`], [`retell`], [`elevenlabs`]), and their
//! signatures ([`signature`]). A mapped record then takes B's path (count limits, parse,
//! validation, normalisation), with two differences: a provider that does not send a
//! recording URL or any turn is not refused for it (the field stays missing), and the
//! document's operation is `provider_webhook`, its `provider` the provider's name.

pub mod elevenlabs;
pub mod retell;
pub mod signature;
pub mod vapi;

mod fields;
pub use fields::MAX_TOOL_NAME;

use serde_json::{Map, Value};

use crate::api::{BodyError, Code, Violation};
pub use crate::call::Provider;
use crate::call::{self, accept_relaxed, parse_create_call, CallDocument, Operation, Rejection};

/// What a webhook's body is.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// An end-of-call event: stored.
    Call(Mapped),
    /// Any other event type (named): answered 200, nothing stored.
    Ignored(String),
}

/// A call as a provider's event describes it, in operation B's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// Operation B's record (with `provider` and `provider_event` besides).
    pub record: Map<String, Value>,
    /// The provider's id of the agent (Vapi's assistant, Retell's and ElevenLabs' agent):
    /// the workspace's agent with this remote identifier takes the call.
    pub agent: Option<String>,
    /// Where the event stands among the provider's events of one call: a later stage's
    /// content is never replaced by an earlier stage's (Retell's `call_analyzed` by a late
    /// `call_ended`).
    pub stage: u8,
}

/// Reads a webhook body of `provider`: the event, mapped when it is a call.
pub fn read(provider: Provider, body: &[u8]) -> Result<Event, Rejection> {
    // `Free`, not `Value`: the counts see strings where `Value` would parse some again.
    let (crate::api::free::Free(value), spent) =
        crate::call::pipeline::parse_counting(body, crate::api::counts::Layout::PROVIDER_PAYLOAD)?;
    let texts = fields::TextBudget::after(spent);
    let Value::Object(payload) = value else {
        return Err(Rejection::Unreadable(BodyError::NotObject));
    };
    match provider {
        Provider::Vapi => vapi::read(&payload, &texts),
        Provider::Retell => retell::read(&payload, &texts),
        Provider::ElevenLabs => elevenlabs::read(&payload, &texts),
    }
}

/// The document of a mapped call: B's count limits, parse, validation and normalisation
/// (a missing recording URL or an empty transcript allowed).
pub fn accept(provider: Provider, mapped: &Mapped) -> Result<CallDocument, Rejection> {
    let bytes = serde_json::to_vec(&mapped.record).unwrap_or_default();
    let call = parse_create_call(&bytes)?;
    let mut doc = accept_relaxed(call).map_err(|v| Rejection::Invalid(v.into_iter().map(to_payload).collect()))?;
    doc.operation = Operation::ProviderWebhook(provider);
    doc.stage = mapped.stage;
    Ok(doc)
}

/// Bytes to document for any `operation`: the operations' pipeline ([`call::ingest`]), or
/// a provider's webhook mapped first.
pub fn ingest_any(operation: Operation, body: &[u8]) -> Result<CallDocument, Rejection> {
    match operation {
        Operation::ProviderWebhook(provider) => ingest(provider, body),
        operation => call::ingest(operation, body),
    }
}

/// Body to document, as [`crate::call::ingest`] does for the operations.
pub fn ingest(provider: Provider, body: &[u8]) -> Result<CallDocument, Rejection> {
    match read(provider, body)? {
        Event::Call(mapped) => accept(provider, &mapped),
        Event::Ignored(kind) => {
            Err(Rejection::Invalid(vec![Violation::new("/", Code::OneOf, format!("a {kind} event is not a call"))]))
        }
    }
}

/// A violation of the mapped record, said of the record (its pointers are B's fields,
/// not the payload's): prefixed `/mapped`.
fn to_payload(v: Violation) -> Violation {
    Violation { pointer: format!("/mapped{}", v.pointer), ..v }
}

/// A payload that is not the provider's call event shape: 422 at `pointer`.
pub(crate) fn unmappable(pointer: &str, message: impl Into<String>) -> Rejection {
    Rejection::Invalid(vec![Violation::new(pointer, Code::Required, message)])
}
