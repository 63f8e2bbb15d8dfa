//! The normalised call document both operations produce: what the store keeps and reads
//! back, and the identity (digest) of a submission's content.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::api::CreateCall;

/// Version of the stored document's shape; bump it when the shape changes.
pub const SCHEMA_VERSION: u32 = 1;

/// A provider whose webhooks we take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Vapi,
    Retell,
    ElevenLabs,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::Vapi, Provider::Retell, Provider::ElevenLabs];

    /// Its name in paths, documents and `callctl`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Vapi => "vapi",
            Provider::Retell => "retell",
            Provider::ElevenLabs => "elevenlabs",
        }
    }

    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// Which operation a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A · Send Call Data, `POST /v1/calls`.
    SendCallData,
    /// B · Create Call, `POST /api/v1/public/call`.
    CreateCall,
    /// A provider's own webhook, `POST /v1/webhooks/{provider}/{hook_id}`.
    ProviderWebhook(Provider),
}

impl Operation {
    /// Its name in documents, answers and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::SendCallData => "send_call_data",
            Operation::CreateCall => "create_call",
            Operation::ProviderWebhook(_) => "provider_webhook",
        }
    }

    /// A name that says the provider too (`provider_webhook/vapi`): how a pending
    /// submission records what it is, to be read again by [`Operation::parse`].
    pub fn key(self) -> String {
        match self {
            Operation::ProviderWebhook(p) => format!("provider_webhook/{}", p.as_str()),
            other => other.as_str().to_owned(),
        }
    }

    pub fn parse(key: &str) -> Option<Operation> {
        match key {
            "send_call_data" => Some(Operation::SendCallData),
            "create_call" => Some(Operation::CreateCall),
            other => other.strip_prefix("provider_webhook/").and_then(Provider::parse).map(Operation::ProviderWebhook),
        }
    }
}

impl Serialize for Operation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
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
    /// Where a provider's event stands among its events of one call (`providers::Mapped`);
    /// 0 for the operations.
    #[serde(skip)]
    pub stage: u8,
    /// The policy it was stored under, when not `everything` (`privacy::apply`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_policy: Option<crate::privacy::policy::Applied>,
    /// Where the audio said what `redacted` replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redactions: Option<Vec<crate::privacy::policy::Redaction>>,
    /// Whether a model read the call besides the rules (a policy with one only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redaction: Option<crate::privacy::policy::ModelNote>,
    /// What a `metadata_only` call held, counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<crate::privacy::policy::Counts>,
    /// The identity of its content as sent, when it is stored changed
    /// ([`crate::privacy::identity`]); else the digest of what is stored is.
    #[serde(skip)]
    pub identity: Option<String>,
}

impl CallDocument {
    pub(crate) fn new(operation: Operation, call: CreateCall, summary: Summary) -> Self {
        CallDocument {
            schema_version: SCHEMA_VERSION,
            operation,
            call,
            summary,
            stage: 0,
            data_policy: None,
            redactions: None,
            redaction: None,
            counts: None,
            identity: None,
        }
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
