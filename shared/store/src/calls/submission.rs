//! One submission, prepared for writing: the head's attributes, the compressed frame
//! (inline, or for S3), the identity digest and a token that says "this request wrote it".

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use call_ingest_core::privacy::Storage;

use super::frames::{self, Frames};
use super::item::{call_pk, get_s, get_u64, item_size, n, s, Item, COMMITTED, FRAME_KEY, PIECES};
use super::{codec, now_ms, random_hex, Owner, StoreError};

/// How far after its receipt a call may be listed (a start in the future, a clock ahead).
pub const LISTED_AHEAD_MS: u64 = 86_400_000;
/// One submission's identity, minted once when its request arrives and carried by every
/// path that may store it: the direct write, its pending copy, the queue and the sweep. A
/// head or revision that carries the token was written by this very submission, so storing
/// it again (a late commit of its pending copy, a retry whose first attempt was applied)
/// changes nothing, whatever landed in between. The received time orders submissions: one
/// clock for direct and pending ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// 16 hex digits, random.
    pub token: String,
    /// When the request arrived (epoch ms).
    pub received_ms: u64,
}

impl Receipt {
    /// A new submission, received at `received_ms`.
    pub fn new(received_ms: u64) -> Result<Receipt, StoreError> {
        Ok(Receipt { token: random_hex(8)?, received_ms })
    }

    /// A submission received now.
    pub fn now() -> Result<Receipt, StoreError> {
        Receipt::new(now_ms())
    }
}
use call_ingest_core::api::number::Number;
use call_ingest_core::call::{CallDocument, Operation};

/// How a late mark (a provider's earlier stage kept below the head) starts among a head's
/// committed tokens.
const LATE_PREFIX: &str = "late:";

/// A submission, ready to become a head.
pub(super) struct Submission {
    pub pk: String,
    /// Identity of the content: the agent and the normalised document.
    pub digest: String,
    /// Random, one per submission: a head that carries it was written by this request
    /// (the reply to that write may have been lost).
    pub token: String,
    /// The head's attributes that do not depend on the revision.
    pub attributes: Item,
    /// The frame's S3 key and bytes, when it is too large to keep inline (the bytes are
    /// moved out when written).
    pub external: Option<(String, Vec<u8>)>,
    /// Bytes this submission writes to DynamoDB (its items, as DynamoDB sizes them).
    pub bytes: usize,
    /// When it was received (epoch ms).
    pub received_ms: u64,
}

impl Submission {
    pub fn prepare(
        owner: Owner<'_>,
        doc: &CallDocument,
        raw: &[u8],
        receipt: &Receipt,
    ) -> Result<Submission, StoreError> {
        let json = doc.to_json();
        // A document its policy changed is known by the content as sent (`privacy::apply`).
        let digest = doc.identity.clone().unwrap_or_else(|| CallDocument::digest_of(owner.agent_id, &json));
        let packed = codec::pack(raw, &json).map_err(|e| StoreError::Internal(format!("compression failed: {e}")))?;
        drop(json);
        let pk = call_pk(owner.workspace_id, doc.call_id());
        let token = receipt.token.clone();
        let now = receipt.received_ms;
        let mut attributes = Item::new();
        attributes.insert("workspace_id".into(), n(owner.workspace_id));
        attributes.insert("agent_id".into(), s(owner.agent_id));
        attributes.insert("call_id".into(), s(doc.call_id()));
        attributes.insert("operation".into(), s(doc.operation.as_str()));
        attributes.insert("schema_version".into(), n(doc.schema_version));
        attributes.insert("digest".into(), s(digest.clone()));
        attributes.insert("submission".into(), s(token.clone()));
        attributes.insert("updated_at".into(), n(now));
        attributes.insert("raw_bytes".into(), n(raw.len()));
        attributes.insert("unpacked_bytes".into(), n(packed.unpacked_len));
        attributes.insert("listed_ws".into(), n(owner.workspace_id));
        if let Some(applied) = doc.data_policy {
            attributes.insert(STORAGE.into(), s(applied.storage.as_str()));
        }
        if let (Operation::ProviderWebhook(provider), 1..) = (doc.operation, doc.stage) {
            attributes.insert(STAGE.into(), s(format!("{}:{}", provider.as_str(), doc.stage)));
        }
        if let Some(start) = doc.summary.start_ms {
            attributes.insert("start_ms".into(), n(start));
            // Listed by its start, but never more than a day after its receipt: a start in
            // the future (up to the year 5138 is a valid number) would be past every
            // retention's cutoff for ever (a reviewer's find).
            attributes.insert("listed_ms".into(), n(start.min(now.saturating_add(LISTED_AHEAD_MS))));
        }
        if let Some(end) = doc.summary.end_ms {
            attributes.insert("end_ms".into(), n(end));
        }
        if let Some(d) = doc.summary.duration_ms {
            attributes.insert("duration_ms".into(), n(d));
        }
        let call = &doc.call;
        for (name, value) in [
            ("call_status", &call.call_status),
            ("user_sentiment", &call.user_sentiment),
            ("call_type", &call.call_type),
            ("disconnection_reason", &call.disconnection_reason),
        ] {
            if let Some(v) = value {
                attributes.insert(name.into(), s(v.clone()));
            }
        }
        if let Some(ok) = call.call_successful {
            attributes.insert("call_successful".into(), AttributeValue::Bool(ok));
        }
        // A cost DynamoDB cannot hold as a number stays in the document only.
        if let Some(cost) = call.call_cost.and_then(dynamodb_number) {
            attributes.insert("call_cost".into(), AttributeValue::N(cost));
        }
        let external = match packed.frame.len() <= frames::INLINE_MAX {
            true => {
                attributes.insert("body".into(), AttributeValue::B(Blob::new(packed.frame)));
                None
            }
            false => {
                let key = Frames::key(owner.workspace_id, doc.call_id(), &token);
                attributes.insert(FRAME_KEY.into(), s(key.clone()));
                attributes.insert("frame_bytes".into(), n(packed.frame.len()));
                if let Some(pieces) = &packed.pieces {
                    attributes.insert(PIECES.into(), AttributeValue::B(Blob::new(pieces.to_bytes())));
                }
                Some((key, packed.frame))
            }
        };
        let bytes = item_size(&attributes) + 64;
        Ok(Submission { pk, digest, token, attributes, external, bytes, received_ms: now })
    }

    /// The stricter data policy `head` was stored under than this submission's, if any:
    /// the strictest policy a call ever had binds its later revisions (issue 32). Heads
    /// keep the strictest their call had (`Submission::head`).
    pub fn bound_by(&self, head: &Item) -> Option<Storage> {
        let stored = storage_of(head);
        (stored > storage_of(&self.attributes)).then_some(stored)
    }

    /// Whether `head` records this submission's content as kept below it: a provider's
    /// event of an earlier stage, inserted late, whose replays (under other tokens) change
    /// nothing. Only events with a stage are marked: an operation's submission of content
    /// that was once current is a new revision when sent again.
    pub fn kept_late(&self, head: &Item) -> bool {
        self.has_stage() && tokens(head).contains(&self.late_mark())
    }

    /// Whether `head` lists this submission among the pending ones committed into its call
    /// (heads written before every item carried its submission's identity).
    pub fn was_committed_before(&self, head: &Item) -> bool {
        tokens(head).contains(&self.token)
    }

    /// Whether this is a provider's event with a stage (Retell's `call_ended`, …).
    pub fn has_stage(&self) -> bool {
        stage(&self.attributes).is_some()
    }

    /// What a head records of a submission kept as a revision below it: its content.
    pub fn late_mark(&self) -> String {
        Submission::late_mark_of(&self.digest)
    }

    pub fn late_mark_of(digest: &str) -> String {
        format!("{LATE_PREFIX}{digest}")
    }

    /// Whether this submission is a later stage of the provider's events than `head`.
    pub fn outranks(&self, head: &Item) -> bool {
        matches!((stage(&self.attributes), stage(head)), (Some((p, a)), Some((q, b))) if p == q && a > b)
    }

    /// Whether `head` holds a later stage of the provider's events of this call than this
    /// submission (Retell's `call_analyzed` against a late `call_ended`): then this one is
    /// kept as a revision and the head's content stays current.
    pub fn outranked_by(&self, head: &Item) -> bool {
        matches!((stage(head), stage(&self.attributes)), (Some((p, a)), Some((q, b))) if p == q && a > b)
    }

    /// Whether `head` holds this submission's content.
    pub fn same_content(&self, head: &Item) -> bool {
        // Or the digest it had before a policy applied later re-keyed it (`rewrite`): a
        // copy of the content received before the change still names it so.
        get_s(head, "digest") == Some(&self.digest) || get_s(head, super::item::DIGEST_SENT) == Some(&self.digest)
    }

    /// Whether `head` was written by this very submission.
    pub fn wrote(&self, head: &Item) -> bool {
        get_s(head, "submission") == Some(&self.token)
    }

    /// The head item of this submission as revision `revision` of call `id`.
    pub fn head(&self, id: u64, revision: u64, created_at: &AttributeValue) -> Item {
        let mut head = self.attributes.clone();
        head.insert("pk".into(), s(self.pk.clone()));
        head.insert("sk".into(), s(super::item::HEAD));
        head.insert("id".into(), n(id));
        head.insert("revision".into(), n(revision));
        head.insert("created_at".into(), created_at.clone());
        // Listed by its start; a call without one, by when it was first received.
        if !head.contains_key("listed_ms") {
            head.insert("listed_ms".into(), created_at.clone());
        }
        head
    }

    /// When this submission was made (the head's `updated_at`).
    pub fn made_at(&self) -> AttributeValue {
        self.attributes.get("updated_at").cloned().unwrap_or_else(|| n(now_ms()))
    }

    /// When the call started, if it says (what the listing sorts it by).
    pub fn listed_ms(&self) -> Option<u64> {
        self.attributes.get("listed_ms").and_then(|v| v.as_n().ok()).and_then(|v| v.parse().ok())
    }
}

/// On a head or revision from a provider's webhook: `<provider>:<stage>` of its event
/// (`Mapped::stage`).
const STAGE: &str = "stage";

/// On a head or revision stored under a policy other than `everything`: its storage
/// (`redacted`, `metadata_only`); on a head, the strictest its call has had (a stricter
/// revision kept below it raises it: `Store::insert_late`).
pub const STORAGE: &str = "storage";

/// The data policy an item was stored under (`everything` when it says none).
pub fn storage_of(item: &Item) -> Storage {
    get_s(item, STORAGE).and_then(Storage::parse).unwrap_or_default()
}

/// The provider and stage of a webhook event's item; stages compare within one provider
/// only (an operation's submission has none, and takes its usual place).
fn stage(item: &Item) -> Option<(&str, u64)> {
    let (provider, stage) = get_s(item, STAGE)?.split_once(':')?;
    Some((provider, stage.parse().ok()?))
}

/// The tokens of the pending submissions committed into the call of `head`.
pub(super) fn tokens(head: &Item) -> Vec<String> {
    match head.get(COMMITTED) {
        Some(AttributeValue::Ss(tokens)) => tokens.clone(),
        _ => Vec::new(),
    }
}

/// The tokens of pending copies among `head`'s committed ones (its late marks left out).
pub(super) fn copy_tokens(head: &Item) -> Vec<String> {
    tokens(head).into_iter().filter(|t| !t.starts_with(LATE_PREFIX)).collect()
}

/// `head` with `more` committed tokens added to its own (a set: no token twice).
pub(super) fn add_committed(head: &mut Item, more: impl IntoIterator<Item = String>) {
    let mut all = tokens(head);
    for token in more {
        if !all.contains(&token) {
            all.push(token);
        }
    }
    if !all.is_empty() {
        head.insert(COMMITTED.into(), AttributeValue::Ss(all));
    }
}

/// The id and revision a head names.
pub(super) fn id_and_revision(head: &Item) -> Result<(u64, u64), StoreError> {
    match (get_u64(head, "id"), get_u64(head, "revision")) {
        (Some(id), Some(revision)) => Ok((id, revision)),
        _ => Err(StoreError::Internal("head item lacks id or revision".into())),
    }
}

/// `number` as DynamoDB's `N`, or `None` when DynamoDB cannot hold it: a magnitude above
/// 9.99…E+125 or below 1E-130, or not finite. Integers are written exactly (no detour
/// through a double, which rounds above 2^53).
pub fn dynamodb_number(number: Number) -> Option<String> {
    match number {
        Number::Int(i) => Some(i.to_string()),
        Number::Float(0.0) => Some("0".into()),
        Number::Float(f) if f.is_finite() && (1e-130..1e126).contains(&f.abs()) => Some(format!("{f:e}")),
        Number::Float(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_dynamodb_refuses_are_not_written_and_integers_stay_exact() {
        assert_eq!(dynamodb_number(Number::Int(9_007_199_254_740_993)).as_deref(), Some("9007199254740993"));
        assert_eq!(dynamodb_number(Number::Float(12.5)).as_deref(), Some("1.25e1"));
        assert_eq!(dynamodb_number(Number::Float(-0.0)).as_deref(), Some("0"));
        assert_eq!(dynamodb_number(Number::Float(1e200)), None);
        assert_eq!(dynamodb_number(Number::Float(-1e200)), None);
        assert_eq!(dynamodb_number(Number::Float(1e-131)), None);
        assert_eq!(dynamodb_number(Number::Float(1e-130)).as_deref(), Some("1e-130"));
        assert_eq!(dynamodb_number(Number::Float(f64::INFINITY)), None);
    }
}
