//! The normalised call document both operations produce, and the one-way path from request
//! bytes to it: parse → validate → normalise.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::api::{counts, BodyError, CreateCall, Problem, SendCallData, Violation};
use crate::{normalize, validate};

/// Version of the stored document's shape; bump it when the shape changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Which operation a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// A · Send Call Data, `POST /v1/calls`.
    SendCallData,
    /// B · Create Call, `POST /api/v1/public/call`.
    CreateCall,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::SendCallData => "send_call_data",
            Operation::CreateCall => "create_call",
        }
    }
}

/// Values of the document the store indexes, already in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub duration_ms: Option<u64>,
}

/// A valid call, normalised: what the store keeps and reads back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallDocument {
    pub schema_version: u32,
    pub operation: Operation,
    /// The call in operation B's shape, every field normalised, unknown fields kept.
    pub call: CreateCall,
    #[serde(skip)]
    pub summary: Summary,
}

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

impl CallDocument {
    pub(crate) fn new(operation: Operation, call: CreateCall, summary: Summary) -> Self {
        CallDocument { schema_version: SCHEMA_VERSION, operation, call, summary }
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        self.call.call_id.as_deref().unwrap_or_default()
    }

    /// The document as compact JSON: the stored form, and the input of [`Self::digest`].
    /// Key order is fixed (struct order; free-form objects sorted), so the same content
    /// always gives the same bytes.
    pub fn to_json(&self) -> Vec<u8> {
        // Only strings, numbers, booleans and maps with string keys: cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The identity of a submission's content: SHA-256 (hex) of the agent's id and the
    /// document's [`Self::to_json`]. Equal for submissions that differ only in key order or
    /// white space; different for the same document under another agent.
    pub fn digest_of(agent_id: &str, json: &[u8]) -> String {
        let mut hasher = Sha256::new();
        hasher.update((agent_id.len() as u64).to_le_bytes());
        hasher.update(agent_id.as_bytes());
        hasher.update(json);
        hex(&hasher.finalize())
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// Reads an operation B body; fails when it is past a count limit or not a JSON object.
pub fn parse_create_call(body: &[u8]) -> Result<CreateCall, Rejection> {
    parse(body, counts::Layout::CREATE_CALL)
}

/// Reads an operation A body; fails when it is past a count limit or not a JSON object.
pub fn parse_send_call_data(body: &[u8]) -> Result<SendCallData, Rejection> {
    parse(body, counts::Layout::SEND_CALL_DATA)
}

/// The counts first, so nothing is built for a body past them; then the typed parse.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], layout: counts::Layout) -> Result<T, Rejection> {
    counts::check(body, layout).map_err(Rejection::OverLimit)?;
    serde_json::from_slice(body).map_err(|e| Rejection::Unreadable(BodyError::from_json(&e)))
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

/// Bytes to document for `operation`, the whole pure pipeline.
pub fn ingest(operation: Operation, body: &[u8]) -> Result<CallDocument, Rejection> {
    match operation {
        Operation::CreateCall => accept_create_call(parse_create_call(body)?).map_err(Rejection::Invalid),
        Operation::SendCallData => accept_send_call_data(parse_send_call_data(body)?).map_err(Rejection::Invalid),
    }
}
