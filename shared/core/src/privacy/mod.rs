//! A workspace's data policy applied to a call before anything of it is stored:
//! [`policy`] (what is kept, how long, which kinds of personal data), [`lexicon`] and
//! [`detect`] (the rules that find those kinds in written and spoken text), [`redact`]
//! (replacing them everywhere in a call) and [`apply`] (the whole step: the identity of the
//! content as sent, then redaction, or everything but the metadata dropped).

pub mod detect;
pub mod lexicon;
pub mod policy;
pub mod redact;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

pub use detect::Known;
pub use policy::{
    Applied, Counts, Kind, Kinds, Language, ModelNote, ModelOutcome, PiiModel, Policy, Redaction, Storage,
};
pub use redact::{redact_call, redact_text, Rules};

use crate::api::{CreateCall, Number};
use crate::call::{hex, CallDocument, Operation, Summary};

/// The identity of a call's content as sent, for a policy that stores it changed: an
/// HMAC-SHA256 (hex) under the workspace's identity key of the agent's id and the
/// unredacted document. A replay is recognised whatever the rules replace, and the digest
/// tells nothing of the content to whoever reads the table (a plain hash of a card number
/// can be guessed).
pub fn identity(key: &[u8], agent_id: &str, json: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key"));
    mac.update(&(agent_id.len() as u64).to_le_bytes());
    mac.update(agent_id.as_bytes());
    mac.update(json);
    format!("h:{}", hex(&mac.finalize().into_bytes()))
}

/// Applies `policy` to `doc`: under `everything` nothing changes; otherwise the document's
/// identity is taken first (see [`identity`]), then its personal data replaced
/// (`redacted`) or everything but its metadata dropped (`metadata_only`).
pub fn apply(doc: &mut CallDocument, policy: &Policy, key: &[u8], agent_id: &str) {
    apply_with(doc, policy, key, agent_id, None)
}

/// What the policy's model made of a call: the values it found in all its turns; nothing
/// (it was not read, or not in time); or no turn had anything to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelFound {
    Values(Known),
    Unavailable,
    NothingToRead,
}

/// [`apply`], with what the policy's model found (`None`: the policy names no model).
pub fn apply_with(doc: &mut CallDocument, policy: &Policy, key: &[u8], agent_id: &str, model: Option<&ModelFound>) {
    if policy.storage == Storage::Everything {
        return;
    }
    identify(doc, policy, key, agent_id);
    restrict_with(doc, policy.storage, policy.pii_entities, model);
}

/// The first step of [`apply_with`]: the document's identity as sent (nothing under
/// `everything`), known before any model reads it (a replay need not be read again).
pub fn identify(doc: &mut CallDocument, policy: &Policy, key: &[u8], agent_id: &str) {
    if policy.storage != Storage::Everything {
        doc.identity = Some(identity(key, agent_id, &doc.to_json()));
    }
}

/// The redaction or stripping of [`apply`], without the identity: also for a document
/// tightened later (a call whose earlier revision was stored under a stricter policy).
pub fn restrict(doc: &mut CallDocument, storage: Storage, kinds: Kinds) {
    restrict_with(doc, storage, kinds, None)
}

/// [`restrict`], with what the policy's model found: its values are replaced too, and the
/// document says whether it read the call (`redaction.model`).
pub fn restrict_with(doc: &mut CallDocument, storage: Storage, kinds: Kinds, model: Option<&ModelFound>) {
    match storage {
        Storage::Everything => {}
        Storage::Redacted => {
            let known = match model {
                Some(ModelFound::Values(known)) => Some(known),
                _ => None,
            };
            let redactions = redact::redact_call_with(&mut doc.call, Rules { kinds, known });
            doc.data_policy = Some(Applied { storage, pii_entities: Some(kinds) });
            doc.redactions = Some(redactions);
            doc.redaction = model.map(|m| ModelNote {
                model: match m {
                    ModelFound::Values(_) => ModelOutcome::AwsComprehend,
                    ModelFound::Unavailable => ModelOutcome::Unavailable,
                    ModelFound::NothingToRead => ModelOutcome::NothingToRead,
                },
            });
        }
        Storage::MetadataOnly => {
            doc.counts = Some(metadata_only(&mut doc.call));
            doc.data_policy = Some(Applied { storage, pii_entities: None });
            doc.redactions = None;
            doc.redaction = None;
        }
    }
}

/// A document changed by its policy, as a pending or held copy keeps it until it is
/// committed: the copy cannot be the request body (that holds what the policy removes), so
/// it is the document itself, with its identity and its provider event's stage.
#[derive(Serialize)]
struct Envelope<'a> {
    identity: &'a str,
    stage: u8,
    document: &'a CallDocument,
}

#[derive(Deserialize)]
struct ReadEnvelope {
    identity: String,
    stage: u8,
    document: StoredDocument,
}

#[derive(Deserialize)]
struct StoredDocument {
    call: CreateCall,
    data_policy: Option<Applied>,
    redactions: Option<Vec<Redaction>>,
    redaction: Option<ModelNote>,
    counts: Option<Counts>,
}

/// The copy of `doc` (changed by its policy) to keep until it is committed.
pub fn envelope(doc: &CallDocument) -> Vec<u8> {
    let envelope = Envelope { identity: doc.identity.as_deref().unwrap_or_default(), stage: doc.stage, document: doc };
    serde_json::to_vec(&envelope).unwrap_or_default()
}

/// The document an [`envelope`] holds, as it was, for `operation`; `None` when the bytes
/// are not one.
pub fn from_envelope(operation: Operation, bytes: &[u8]) -> Option<CallDocument> {
    let read: ReadEnvelope = serde_json::from_slice(bytes).ok()?;
    let call = read.document.call;
    let ms = |n: Option<Number>| n.and_then(Number::ceil_non_negative).and_then(|v| u64::try_from(v).ok());
    let summary = Summary {
        start_ms: ms(call.start_timestamp),
        end_ms: ms(call.end_timestamp),
        duration_ms: call.duration_ms.and_then(|d| u64::try_from(d).ok()),
    };
    let mut doc = CallDocument::new(operation, call, summary);
    doc.stage = read.stage;
    doc.data_policy = Some(read.document.data_policy?);
    doc.redactions = read.document.redactions;
    doc.redaction = read.document.redaction;
    doc.counts = read.document.counts;
    doc.identity = Some(read.identity).filter(|i| !i.is_empty());
    Some(doc)
}

/// A stored document (`CallDocument::to_json`), as the store reads it back to tighten it.
#[derive(Deserialize)]
struct Stored {
    schema_version: u32,
    operation: String,
    #[serde(flatten)]
    document: StoredDocument,
}

/// The same fields, in the same order as [`CallDocument`] writes them.
#[derive(Serialize)]
struct Tightened<'a> {
    schema_version: u32,
    operation: &'a str,
    call: &'a CreateCall,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_policy: Option<Applied>,
    #[serde(skip_serializing_if = "Option::is_none")]
    redactions: Option<&'a [Redaction]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    redaction: Option<ModelNote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    counts: Option<Counts>,
}

/// A stored call tightened to `storage` (`callctl workspace apply-policy`): its document
/// (`json`) redacted or stripped as [`restrict`] does a call received under that policy, and
/// the raw body it then keeps ([`stored_raw`]). `None` when it was stored under `storage`
/// or a stricter one (a policy never loosens what was stored), or `json` is not a document.
pub fn tighten_stored(json: &[u8], storage: Storage, kinds: Kinds) -> Option<(Vec<u8>, Vec<u8>)> {
    let stored: Stored = serde_json::from_slice(json).ok()?;
    let was = stored.document.data_policy.map_or(Storage::Everything, |a| a.storage);
    if was >= storage {
        return None;
    }
    let mut doc = CallDocument::new(Operation::CreateCall, stored.document.call, Summary::default());
    doc.data_policy = stored.document.data_policy;
    doc.redactions = stored.document.redactions;
    doc.redaction = stored.document.redaction;
    doc.counts = stored.document.counts;
    restrict(&mut doc, storage, kinds);
    let out = Tightened {
        schema_version: stored.schema_version,
        operation: &stored.operation,
        call: &doc.call,
        data_policy: doc.data_policy,
        redactions: doc.redactions.as_deref(),
        redaction: doc.redaction,
        counts: doc.counts,
    };
    let raw = stored_raw(&doc, &[]).into_owned();
    Some((serde_json::to_vec(&out).ok()?, raw))
}

/// What is stored as a call's raw body under its policy: the request body under
/// `everything`; else the call as stored (operation B's shape, redacted or stripped).
pub fn stored_raw<'a>(doc: &CallDocument, raw: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    match doc.data_policy {
        None => std::borrow::Cow::Borrowed(raw),
        Some(_) => std::borrow::Cow::Owned(serde_json::to_vec(&doc.call).unwrap_or_default()),
    }
}

/// Drops everything of `call` but its metadata (times, status, sentiment, cost,
/// durations); answers what it held, counted.
pub fn metadata_only(call: &mut CreateCall) -> Counts {
    let segments = call.transcript_with_tool_calls.take().unwrap_or_default();
    let mut counts = Counts { segments: segments.len() as u64, ..Counts::default() };
    for s in &segments {
        match s.role.as_deref() {
            Some("user") => counts.user_turns += 1,
            Some("agent") => counts.agent_turns += 1,
            _ => {}
        }
        counts.tool_calls += u64::from(s.role.as_deref() == Some("agent_function"));
        counts.words += s.words.as_ref().map_or(0, |w| w.len() as u64);
    }
    let kept = CreateCall {
        call_id: call.call_id.take(),
        call_type: call.call_type.take(),
        start_timestamp: call.start_timestamp,
        end_timestamp: call.end_timestamp,
        agent_version: call.agent_version,
        duration_ms: call.duration_ms,
        call_status: call.call_status.take(),
        disconnection_reason: call.disconnection_reason.take(),
        call_successful: call.call_successful,
        user_sentiment: call.user_sentiment.take(),
        in_voicemail: call.in_voicemail,
        call_cost: call.call_cost,
        ..CreateCall::default()
    };
    *call = kept;
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::{ingest, Operation};

    fn doc() -> CallDocument {
        let body = serde_json::json!({
            "call_id": "c-1", "call_type": "phone_call", "start_timestamp": 1_700_000_000_000u64,
            "end_timestamp": 1_700_000_060_000u64, "recording_url": "https://r.example/1.wav",
            "caller_phone_number": "+12125550147", "call_status": "ended", "call_cost": 0.12,
            "metadata": {"crm": "card 4111 1111 1111 1111"},
            "transcript_with_tool_calls": [
                {"role": "user", "text": "my email is jane.doe@example.com", "start_ms": 0, "end_ms": 900},
                {"role": "agent_function", "text": "", "tool": {"name": "lookup", "params": {"ssn": "123-45-6789"}}}
            ]
        });
        ingest(Operation::CreateCall, &serde_json::to_vec(&body).unwrap()).unwrap()
    }

    #[test]
    fn a_stored_document_tightened_reads_as_one_received_under_the_policy() {
        let policy = Policy { storage: Storage::Redacted, ..Policy::default() };
        let stored = doc().to_json();
        let (json, raw) = tighten_stored(&stored, Storage::Redacted, policy.pii_entities).expect("tightened");
        let mut received = doc();
        apply(&mut received, &policy, b"key", "agent");
        assert_eq!(String::from_utf8(json.clone()).unwrap(), String::from_utf8(received.to_json()).unwrap());
        assert_eq!(raw, stored_raw(&received, b"").into_owned());
        assert!(tighten_stored(&json, Storage::Redacted, policy.pii_entities).is_none(), "never twice");
        let (meta, _) = tighten_stored(&json, Storage::MetadataOnly, policy.pii_entities).expect("stricter");
        let mut stripped = doc();
        apply(&mut stripped, &Policy { storage: Storage::MetadataOnly, ..Policy::default() }, b"key", "agent");
        assert_eq!(String::from_utf8(meta.clone()).unwrap(), String::from_utf8(stripped.to_json()).unwrap());
        assert!(tighten_stored(&meta, Storage::Redacted, policy.pii_entities).is_none(), "never loosened");
        assert!(tighten_stored(b"{}", Storage::Redacted, policy.pii_entities).is_none());
    }

    #[test]
    fn redacted_documents_keep_no_planted_value_and_say_their_policy() {
        let mut d = doc();
        let policy = Policy { storage: Storage::Redacted, ..Policy::default() };
        apply(&mut d, &policy, b"key", "agent");
        let json = String::from_utf8(d.to_json()).unwrap();
        for planted in ["jane.doe@example.com", "2125550147", "4111 1111 1111 1111", "123-45-6789"] {
            assert!(!json.contains(planted), "{planted} in {json}");
        }
        assert!(json.contains(r#""data_policy":{"storage":"redacted","pii_entities":["phone_number","email","credit_card","ssn","iban","date_of_birth"]}"#), "{json}");
        assert!(json.contains(r#""redactions":[{"start_ms":0,"end_ms":900,"kind":"email"}]"#), "{json}");
        assert!(d.identity.as_deref().is_some_and(|i| i.starts_with("h:")));
    }

    #[test]
    fn the_identity_is_of_the_content_as_sent_and_keyed() {
        let (mut a, mut b, mut c) = (doc(), doc(), doc());
        let policy = Policy { storage: Storage::Redacted, ..Policy::default() };
        apply(&mut a, &policy, b"key", "agent");
        apply(&mut b, &policy, b"key", "agent");
        apply(&mut c, &policy, b"other key", "agent");
        assert_eq!(a.identity, b.identity);
        assert_ne!(a.identity, c.identity);
        let mut plain = doc();
        apply(&mut plain, &Policy::default(), b"key", "agent");
        assert_eq!(plain, doc(), "everything: unchanged");
    }

    #[test]
    fn a_derived_transcript_is_derived_again_from_the_redacted_turns() {
        let body = serde_json::json!({
            "call_id": "c-2", "call_type": "phone_call", "start_timestamp": 1_700_000_000_000u64,
            "end_timestamp": 1_700_000_060_000u64, "recording_url": "https://r.example/2.wav",
            "transcript_with_tool_calls": [
                {"role": "user", "text": "my number is five five five", "start_ms": 0, "end_ms": 900},
                {"role": "agent", "text": "go on", "start_ms": 1000, "end_ms": 1500},
                {"role": "user", "text": "two one two oh one four seven", "start_ms": 1600, "end_ms": 3000}
            ]
        });
        let mut d = ingest(Operation::CreateCall, &serde_json::to_vec(&body).unwrap()).unwrap();
        assert!(d.call.transcript.as_deref().is_some_and(|t| t.contains("five five five")));
        apply(&mut d, &Policy { storage: Storage::Redacted, ..Policy::default() }, b"k", "a");
        let transcript = d.call.transcript.unwrap();
        assert!(!transcript.contains("five") && !transcript.contains("seven"), "{transcript}");
        assert!(transcript.contains("[PHONE_NUMBER]"), "{transcript}");
    }

    #[test]
    fn an_envelope_gives_back_the_document_it_holds() {
        for storage in [Storage::Redacted, Storage::MetadataOnly] {
            let mut d = doc();
            d.stage = 2;
            apply(&mut d, &Policy { storage, ..Policy::default() }, b"k", "a");
            let back = from_envelope(d.operation, &envelope(&d)).unwrap();
            assert_eq!(back, d, "{storage:?}");
            assert_eq!(back.to_json(), d.to_json());
        }
        assert!(from_envelope(Operation::CreateCall, b"{\"call_id\":\"x\"}").is_none());
    }

    #[test]
    fn metadata_only_keeps_the_metadata_and_counts() {
        let mut d = doc();
        apply(&mut d, &Policy { storage: Storage::MetadataOnly, ..Policy::default() }, b"k", "a");
        let json: serde_json::Value = serde_json::from_slice(&d.to_json()).unwrap();
        let call = json["call"].as_object().unwrap();
        let mut keys: Vec<&str> = call.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["call_cost", "call_id", "call_status", "call_type", "duration_ms", "end_timestamp", "start_timestamp"]
        );
        assert_eq!(json["counts"]["segments"], 2);
        assert_eq!(json["counts"]["tool_calls"], 1);
        assert_eq!(json["data_policy"], serde_json::json!({"storage": "metadata_only"}));
    }
}
