//! Durable, idempotent storage of calls in DynamoDB.
//!
//! A call is identified by (workspace, provider call id). The first submission creates its
//! head item with one conditional put; a replay with the same content (same digest of the
//! normalised document) writes nothing; different content becomes the new head and the
//! previous head is kept as a revision, in one transaction conditioned on the revision
//! number, so racing submissions all end up stored, in some order. See `docs/DESIGN.md`.

pub mod codec;
pub mod ids;
pub mod item;
pub mod query;
mod read;
pub mod tables;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, PutRequest, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update, WriteRequest,
};
use aws_sdk_dynamodb::Client;

use crate::call::CallDocument;
use ids::IdBlocks;
use item::{call_pk, chunk_sk, get_s, get_u64, item_size, n, revision_sk, s, Item, HEAD};

pub use read::{CallSummary, StoredCall, StoredRevision};

/// How long chunks of a submission that never became current live (TTL).
const ORPHAN_CHUNK_TTL: Duration = Duration::from_secs(24 * 3600);
/// Attempts at making a new revision current before answering "try again".
const MAX_ATTEMPTS: usize = 40;

/// What went wrong while storing or reading.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Throttled, unreachable or too contended after the SDK's retries: 503, try again.
    #[error("DynamoDB is unavailable: {0}")]
    Unavailable(String),
    /// Anything else: 500.
    #[error("storage failed: {0}")]
    Internal(String),
}

impl StoreError {
    /// Sorts an SDK error into "try again" or not.
    pub fn from_sdk<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(e: SdkError<E, R>) -> Self {
        const TRANSIENT: [&str; 7] = [
            "ProvisionedThroughputExceededException",
            "ThrottlingException",
            "RequestLimitExceeded",
            "InternalServerError",
            "ServiceUnavailable",
            "LimitExceededException",
            "TransactionInProgressException",
        ];
        match &e {
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => StoreError::Unavailable(format!("{e:?}")),
            SdkError::ServiceError(se) if se.err().code().is_some_and(|c| TRANSIENT.contains(&c)) => {
                StoreError::Unavailable(se.err().code().unwrap_or_default().to_owned())
            }
            SdkError::ResponseError(_) => StoreError::Unavailable(format!("{e:?}")),
            _ => StoreError::Internal(match e.code() {
                Some(code) => format!("{code}: {}", e.message().unwrap_or_default()),
                None => format!("{e:?}"),
            }),
        }
    }
}

impl From<aws_sdk_dynamodb::error::BuildError> for StoreError {
    fn from(e: aws_sdk_dynamodb::error::BuildError) -> Self {
        StoreError::Internal(e.to_string())
    }
}

/// Who a call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    pub workspace_id: u64,
    /// The service's agent id.
    pub agent_id: &'a str,
}

/// What storing a submission did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new call: 201, `is_new: true`.
    Created,
    /// Same content as the current one: nothing written.
    Unchanged,
    /// Different content: now current, the previous content kept as a revision.
    Revised,
}

/// The answer to a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub id: u64,
    pub outcome: Outcome,
    /// The call's current revision number (1 for a new call).
    pub revision: u64,
    /// Bytes this submission wrote (all items, as DynamoDB sizes them).
    pub bytes_written: usize,
    /// DynamoDB requests it took.
    pub requests: u32,
}

impl Stored {
    pub fn is_new(&self) -> bool {
        self.outcome == Outcome::Created
    }
}

/// The calls table and the id source of this instance.
#[derive(Debug)]
pub struct Store {
    client: Client,
    table: String,
    ids: IdBlocks,
}

/// One submission, prepared for writing.
struct Submission {
    pk: String,
    digest: String,
    /// The head's attributes that do not depend on the revision.
    attributes: Item,
    /// Chunk items, when the frame does not fit the head (moved out when written).
    chunks: Vec<Item>,
    /// Sort keys of the chunks, for the transaction that confirms them.
    chunk_sks: Vec<String>,
    bytes: usize,
}

impl Store {
    pub fn new(client: Client, table: impl Into<String>, id_block_size: u64) -> Self {
        Store { client, table: table.into(), ids: IdBlocks::new(id_block_size) }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Stores a submission: creates the call, leaves it as it is, or adds a revision.
    /// `raw` is the request body exactly as received.
    pub async fn put_call(&self, owner: Owner<'_>, doc: &CallDocument, raw: &[u8]) -> Result<Stored, StoreError> {
        let mut sub = self.prepare(owner, doc, raw)?;
        let mut requests = 0;
        // A large submission is checked first, so a replay writes no chunks.
        let mut current = if sub.chunk_sks.is_empty() {
            None
        } else {
            requests += 1;
            let head = self.head(&sub.pk).await?;
            if let Some(head) = &head {
                if get_s(head, "digest") == Some(&sub.digest) {
                    return Ok(unchanged(head, requests));
                }
            }
            requests += self.write_chunks(std::mem::take(&mut sub.chunks)).await?;
            head
        };
        let mut id = None;
        for attempt in 0..MAX_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            match current.take() {
                None => {
                    let new_id = match id {
                        Some(id) => id,
                        None => {
                            requests += u32::from(!self.ids.has_block().await);
                            *id.insert(self.ids.next(&self.client, &self.table).await?)
                        }
                    };
                    requests += 1;
                    match self.create(&sub, new_id).await? {
                        None => {
                            return Ok(Stored {
                                id: new_id,
                                outcome: Outcome::Created,
                                revision: 1,
                                bytes_written: sub.bytes,
                                requests,
                            })
                        }
                        Some(existing) => current = existing,
                    }
                }
                Some(head) => {
                    if get_s(&head, "digest") == Some(&sub.digest) {
                        return Ok(unchanged(&head, requests));
                    }
                    requests += 1;
                    match self.revise(&sub, &head).await? {
                        Ok(stored) => return Ok(Stored { requests, ..stored }),
                        Err(()) => {
                            requests += 1;
                            current = self.head(&sub.pk).await?;
                        }
                    }
                }
            }
        }
        Err(StoreError::Unavailable("too many concurrent submissions of this call".into()))
    }

    fn prepare(&self, owner: Owner<'_>, doc: &CallDocument, raw: &[u8]) -> Result<Submission, StoreError> {
        let json = doc.to_json();
        let digest = CallDocument::digest_of(&json);
        let packed = codec::pack(raw, &json).map_err(|e| StoreError::Internal(format!("compression failed: {e}")))?;
        drop(json);
        let pk = call_pk(owner.workspace_id, doc.call_id());
        let now = now_ms();
        let mut attributes = Item::new();
        attributes.insert("workspace_id".into(), n(owner.workspace_id));
        attributes.insert("agent_id".into(), s(owner.agent_id));
        attributes.insert("call_id".into(), s(doc.call_id()));
        attributes.insert("operation".into(), s(doc.operation.as_str()));
        attributes.insert("schema_version".into(), n(doc.schema_version));
        attributes.insert("digest".into(), s(digest.clone()));
        attributes.insert("updated_at".into(), n(now));
        attributes.insert("raw_bytes".into(), n(raw.len()));
        attributes.insert("unpacked_bytes".into(), n(packed.unpacked_len));
        if let Some(start) = doc.summary.start_ms {
            attributes.insert("agent_key".into(), s(format!("{}#{}", owner.workspace_id, owner.agent_id)));
            attributes.insert("start_ms".into(), n(start));
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
        if let Some(cost) = call.call_cost {
            attributes.insert("call_cost".into(), n(cost.as_f64()));
        }
        let mut chunks = Vec::new();
        if packed.frame.len() <= codec::INLINE_MAX {
            attributes.insert("body".into(), AttributeValue::B(Blob::new(packed.frame)));
        } else {
            let nonce = random_hex(8)?;
            let expires = (now / 1000) + ORPHAN_CHUNK_TTL.as_secs();
            for (i, part) in packed.frame.chunks(codec::CHUNK_SIZE).enumerate() {
                let mut chunk = Item::new();
                chunk.insert("pk".into(), s(pk.clone()));
                chunk.insert("sk".into(), s(chunk_sk(&nonce, i)));
                chunk.insert("data".into(), AttributeValue::B(Blob::new(part)));
                chunk.insert(tables::TTL_ATTRIBUTE.into(), n(expires));
                chunks.push(chunk);
            }
            attributes.insert("chunks".into(), n(chunks.len()));
            attributes.insert("chunk_nonce".into(), s(nonce));
        }
        let bytes = item_size(&attributes) + chunks.iter().map(item_size).sum::<usize>() + 64;
        let chunk_sks = chunks.iter().filter_map(|c| item::get_s(c, "sk").map(str::to_owned)).collect();
        Ok(Submission { pk, digest, attributes, chunks, chunk_sks, bytes })
    }

    /// The head item, read consistently.
    async fn head(&self, pk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(HEAD))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(out.item)
    }

    /// Writes chunk items (with a TTL, so a submission that never becomes current leaves
    /// nothing behind for long). Answers the number of requests.
    async fn write_chunks(&self, chunks: Vec<Item>) -> Result<u32, StoreError> {
        let mut requests = 0;
        let mut chunks = chunks.into_iter().peekable();
        while chunks.peek().is_some() {
            // 25 items a batch, and well under 16 MB: our chunks are 350 KB, so 16 a batch.
            let mut pending: Vec<WriteRequest> = chunks
                .by_ref()
                .take(16)
                .map(|c| {
                    Ok(WriteRequest::builder().put_request(PutRequest::builder().set_item(Some(c)).build()?).build())
                })
                .collect::<Result<_, StoreError>>()?;
            for attempt in 0..MAX_ATTEMPTS {
                if pending.is_empty() {
                    break;
                }
                if attempt > 0 {
                    tokio::time::sleep(backoff(attempt)).await;
                }
                requests += 1;
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, std::mem::take(&mut pending))
                    .send()
                    .await
                    .map_err(StoreError::from_sdk)?;
                pending = out.unprocessed_items.and_then(|mut u| u.remove(&self.table)).unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(StoreError::Unavailable("chunks stayed unprocessed".into()));
            }
        }
        Ok(requests)
    }

    /// The head item of a new call with `id`.
    fn new_head(&self, sub: &Submission, id: u64, revision: u64, created_at: &AttributeValue) -> Item {
        let mut head = sub.attributes.clone();
        head.insert("pk".into(), s(sub.pk.clone()));
        head.insert("sk".into(), s(HEAD));
        head.insert("id".into(), n(id));
        head.insert("revision".into(), n(revision));
        head.insert("created_at".into(), created_at.clone());
        head
    }

    /// Tries to create the call. `Ok(None)`: created; `Ok(Some(head))`: it exists (its
    /// head as it was, when DynamoDB returned it).
    async fn create(&self, sub: &Submission, id: u64) -> Result<Option<Option<Item>>, StoreError> {
        let created_at = sub.attributes.get("updated_at").cloned().unwrap_or_else(|| n(now_ms()));
        let head = self.new_head(sub, id, 1, &created_at);
        if sub.chunk_sks.is_empty() {
            let result = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(head))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
                .await;
            return match result {
                Ok(_) => Ok(None),
                Err(SdkError::ServiceError(se))
                    if matches!(
                        se.err(),
                        aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(_)
                    ) =>
                {
                    match se.into_err() {
                        aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                            Ok(Some(c.item))
                        }
                        _ => Ok(Some(None)),
                    }
                }
                Err(e) => Err(StoreError::from_sdk(e)),
            };
        }
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(head))
            .condition_expression("attribute_not_exists(pk)")
            .build()?;
        let mut items = vec![TransactWriteItem::builder().put(put).build()];
        items.extend(self.confirm_chunks(sub)?);
        match self.transact(items).await? {
            true => Ok(None),
            false => Ok(Some(None)),
        }
    }

    /// Makes the submission the head after `old`, keeping `old` as a revision. `Err(())`:
    /// someone else changed the head first.
    async fn revise(&self, sub: &Submission, old: &Item) -> Result<Result<Stored, ()>, StoreError> {
        let (Some(id), Some(revision)) = (get_u64(old, "id"), get_u64(old, "revision")) else {
            return Err(StoreError::Internal("head item lacks id or revision".into()));
        };
        let created_at = old.get("created_at").cloned().unwrap_or_else(|| n(now_ms()));
        let head = self.new_head(sub, id, revision + 1, &created_at);
        let mut kept = old.clone();
        kept.insert("sk".into(), s(revision_sk(revision)));
        // Only heads are indexed.
        kept.remove("id");
        kept.remove("agent_key");
        let bytes = sub.bytes + item_size(&kept);
        let mut items = vec![
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(kept))
                        .condition_expression("attribute_not_exists(pk)")
                        .build()?,
                )
                .build(),
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(head))
                        .condition_expression("revision = :seen")
                        .expression_attribute_values(":seen", n(revision))
                        .build()?,
                )
                .build(),
        ];
        items.extend(self.confirm_chunks(sub)?);
        Ok(match self.transact(items).await? {
            true => {
                Ok(Stored { id, outcome: Outcome::Revised, revision: revision + 1, bytes_written: bytes, requests: 0 })
            }
            false => Err(()),
        })
    }

    /// Transaction items that remove the TTL from the submission's chunks: they commit
    /// with the head, so a head never points at chunks that can expire.
    fn confirm_chunks(&self, sub: &Submission) -> Result<Vec<TransactWriteItem>, StoreError> {
        sub.chunk_sks
            .iter()
            .map(|sk| {
                Ok(TransactWriteItem::builder()
                    .update(
                        Update::builder()
                            .table_name(&self.table)
                            .key("pk", s(sub.pk.clone()))
                            .key("sk", s(sk.clone()))
                            .update_expression("REMOVE #ttl")
                            .condition_expression("attribute_exists(pk)")
                            .expression_attribute_names("#ttl", tables::TTL_ATTRIBUTE)
                            .build()?,
                    )
                    .build())
            })
            .collect()
    }

    /// Runs a transaction; `Ok(false)` when a condition failed.
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<bool, StoreError> {
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(true),
            Err(e) => {
                let conditional = cancellation_codes(&e)
                    .iter()
                    .any(|c| matches!(c.as_deref(), Some("ConditionalCheckFailed" | "TransactionConflict")));
                if conditional {
                    Ok(false)
                } else {
                    Err(StoreError::from_sdk(e))
                }
            }
        }
    }
}

/// The reason code of each item of a cancelled transaction, in order (empty when the
/// error is not a cancellation).
pub fn cancellation_codes<R>(e: &SdkError<TransactWriteItemsError, R>) -> Vec<Option<String>> {
    match e.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
            c.cancellation_reasons().iter().map(|r| r.code().map(str::to_owned)).collect()
        }
        _ => Vec::new(),
    }
}

fn unchanged(head: &Item, requests: u32) -> Stored {
    Stored {
        id: get_u64(head, "id").unwrap_or_default(),
        outcome: Outcome::Unchanged,
        revision: get_u64(head, "revision").unwrap_or(1),
        bytes_written: 0,
        requests,
    }
}

/// A short, growing, jittered pause between attempts of a contended write.
fn backoff(attempt: usize) -> Duration {
    let base = 5u64 << attempt.min(6);
    let jitter = u64::from(random_u32() % 16);
    Duration::from_millis(base.min(200) + jitter)
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    let _ = getrandom::getrandom(&mut b);
    u32::from_le_bytes(b)
}

/// `bytes` random bytes as hex.
pub(crate) fn random_hex(bytes: usize) -> Result<String, StoreError> {
    let mut b = vec![0u8; bytes];
    getrandom::getrandom(&mut b).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    Ok(crate::call::hex(&b))
}
