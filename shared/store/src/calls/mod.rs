//! Durable, idempotent storage of calls in DynamoDB.
//!
//! A call is identified by (workspace, provider call id). The first submission creates its
//! head item with one conditional put; a replay with the same content (same agent and same
//! normalised document) writes nothing; different content becomes the new head and the
//! previous head is kept as a revision, in one transaction conditioned on the revision
//! number, so racing submissions all end up stored, in some order.
//!
//! Every head carries the token of the submission that wrote it, and its internal id: when
//! DynamoDB applied a write whose reply was lost and the SDK retried it, the retry finds
//! this request's own head and answers what the first attempt did. See `docs/DESIGN.md`.
//!
//! Calls flow one way: `put_call` (here) → `frames` (S3, for a large frame) → `create` /
//! `revise` → `error`.

pub mod codec;
mod create;
mod erase;
mod error;
pub mod frames;
pub mod ids;
pub mod item;
pub mod list;
mod migrate;
pub mod pending;
pub mod query;
mod read;
mod revise;
mod submission;
pub mod tables;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::TransactWriteItem;
use aws_sdk_dynamodb::Client;

use call_ingest_core::call::CallDocument;
use create::Creation;
use error::{transaction_outcome, Transaction};
use ids::IdBlocks;
use item::{erased_at, get_u64, is_tombstone, names_erased, s, Item, HEAD};
use submission::{id_and_revision, Submission};

pub use erase::Erased;
pub use error::{cancellation_codes, StoreError};
pub use frames::Frames;
pub use list::{CallSummary, Listing, Page, Position};
pub use read::{CallAt, Part, RevisionInfo, StoredCall, StoredRevision};
pub use submission::dynamodb_number;

/// Attempts at storing one submission (creates and revisions that lost a race or met a
/// transaction in progress) before answering "try again".
const MAX_ATTEMPTS: usize = 40;
/// No new attempt starts after this long: an answer reaches the client well inside the
/// function's 29 s timeout and API Gateway's 30 s.
const DEADLINE: Duration = Duration::from_secs(18);

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
    /// Same content (same agent, same normalised document) as the current one: nothing
    /// written.
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
    frames: Frames,
    table: String,
    ids: IdBlocks,
}

impl Store {
    pub fn new(client: Client, frames: Frames, table: impl Into<String>, id_block_size: u64) -> Self {
        Store { client, frames, table: table.into(), ids: IdBlocks::new(id_block_size) }
    }

    /// The frames' bucket.
    pub fn frames(&self) -> &Frames {
        &self.frames
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
        let sub = Submission::prepare(owner, doc, raw)?;
        self.commit(owner, doc.call_id(), sub, None).await?.ok_or_else(dropped)
    }

    /// [`Store::put_call`], with at most `budget` for S3 and DynamoDB (compressing the
    /// call is not counted): past it, "try again" (the write in flight may still apply).
    pub async fn put_call_within(
        &self,
        owner: Owner<'_>,
        doc: &CallDocument,
        raw: &[u8],
        budget: Duration,
    ) -> Result<Stored, StoreError> {
        let sub = Submission::prepare(owner, doc, raw)?;
        match tokio::time::timeout(budget, self.commit(owner, doc.call_id(), sub, None)).await {
            Ok(committed) => committed?.ok_or_else(dropped),
            Err(_) => Err(StoreError::Unavailable(format!("not stored within {} ms", budget.as_millis()))),
        }
    }

    /// [`Store::put_call`], for a submission received at `received` (epoch ms) and
    /// committed later: `None` when its call was erased after it was received (the erase
    /// wins; nothing is written).
    pub(super) async fn put_call_received(
        &self,
        owner: Owner<'_>,
        doc: &CallDocument,
        raw: &[u8],
        received: u64,
        token: &str,
    ) -> Result<Option<Stored>, StoreError> {
        let sub = Submission::prepare(owner, doc, raw)?.received_as(received, token);
        self.commit(owner, doc.call_id(), sub, Some(received)).await
    }

    /// Writes a prepared submission (see [`Store::put_call_received`]).
    async fn commit(
        &self,
        owner: Owner<'_>,
        call_id: &str,
        mut sub: Submission,
        received: Option<u64>,
    ) -> Result<Option<Stored>, StoreError> {
        let started = Instant::now();
        let mut requests = 0;
        // The head as last read: `None` until read (a small call tries to create first).
        let mut seen: Option<Option<Item>> = None;
        // A frame for S3, written before any item points at it.
        let external = sub.external.take().map(|(key, frame)| (key, bytes::Bytes::from(frame)));
        if let Some((key, frame)) = &external {
            // A large submission is checked first, so a replay writes no object.
            requests += 1;
            let head = self.head(&sub.pk).await?;
            if let Some(head) = head.as_ref().filter(|h| sub.same_content(h)) {
                return unchanged(head, requests).map(Some);
            }
            self.frames.put(key, frame.clone(), owner, call_id, sub.received_ms).await?;
            seen = Some(head);
        }
        // The id this submission creates the call with, once taken. It is given back only
        // when another submission's head is seen: then it was certainly never written.
        let mut id = None;
        // An erase's tombstone at the head's key, once seen: the call is created over it.
        let mut tombstone = None;
        for attempt in 0..MAX_ATTEMPTS {
            if started.elapsed() > DEADLINE {
                break;
            }
            let head = match seen.take() {
                Some(Some(head)) => head,
                None | Some(None) => {
                    let new_id = match id {
                        Some(id) => id,
                        None => {
                            requests += u32::from(!self.ids.has_block().await);
                            *id.insert(self.ids.next(&self.client, &self.table).await?)
                        }
                    };
                    requests += 1;
                    let creation = match self.create(&sub, new_id, tombstone.as_ref()).await {
                        Ok(creation) => creation,
                        Err(e) => return self.settle(&sub, Some(new_id), e, requests).await.map(Some),
                    };
                    let found = match creation {
                        Creation::Created => return Ok(Some(sub.stored(new_id, Outcome::Created, 1, requests))),
                        Creation::Conflict => {
                            tokio::time::sleep(backoff(attempt)).await;
                            continue;
                        }
                        Creation::Exists(Some(found)) => found,
                        Creation::Exists(None) => {
                            requests += 1;
                            match self.item(&sub.pk, HEAD).await? {
                                Some(found) => found,
                                None => {
                                    // The tombstone expired meanwhile: create on nothing.
                                    tombstone = None;
                                    continue;
                                }
                            }
                        }
                    };
                    if get_u64(&found, "id") == Some(new_id) || names_erased(&found, new_id) {
                        // This request's own create, applied by an attempt whose reply was
                        // lost (the call may have been revised since, or erased: then it
                        // was created and is gone; its id is never handed out again).
                        return Ok(Some(sub.stored(new_id, Outcome::Created, 1, requests)));
                    }
                    if is_tombstone(&found) {
                        if received.is_some_and(|r| erased_at(&found) >= r) {
                            // Erased after this submission was received: the erase wins.
                            self.ids.give_back(new_id).await;
                            return Ok(None);
                        }
                        if let Some((key, frame)) = &external {
                            // The erase deleted the frames of its call, this one too when
                            // it had the same bytes: written again before a head points at it.
                            self.frames.put(key, frame.clone(), owner, call_id, sub.received_ms).await?;
                        }
                        tombstone = Some(found);
                        continue;
                    }
                    self.ids.give_back(new_id).await;
                    id = None;
                    found
                }
            };
            if received.is_some_and(|r| erased_at(&head) >= r) {
                // Created anew after an erase that came after this submission: the erase
                // wins, and the new call is not this submission's.
                return Ok(None);
            }
            if sub.same_content(&head) {
                if sub.wrote(&head) {
                    // This request's own revision, applied by an attempt whose reply was lost.
                    let (id, revision) = id_and_revision(&head)?;
                    return Ok(Some(sub.stored(id, Outcome::Revised, revision, requests)));
                }
                return unchanged(&head, requests).map(Some);
            }
            if sub.was_committed(&head) {
                // This pending object was committed already (by the queue and the sweep at
                // once, or again after its delete failed).
                return unchanged(&head, requests).map(Some);
            }
            requests += 1;
            // A later stage of the provider's events wins over the received times: a pending
            // `call_analyzed` committed after a later `call_ended` still becomes current.
            let received_later = received.is_some_and(|r| get_u64(&head, "updated_at").is_some_and(|at| at > r));
            let newer_is_current = sub.outranked_by(&head) || (received_later && !sub.outranks(&head));
            let written = match newer_is_current {
                // A submission received after this one is current (or a later stage of the
                // provider's events): this one is kept as a revision and the current content
                // stays current, whatever order they commit in.
                true => self.insert_late(&sub, &head).await,
                false => self.revise(&sub, &head).await,
            };
            match written {
                Ok(Some(stored)) => return Ok(Some(Stored { requests, ..stored })),
                Ok(None) => {}
                Err(e) => return self.settle(&sub, None, e, requests).await.map(Some),
            }
            tokio::time::sleep(backoff(attempt)).await;
            requests += 1;
            seen = Some(self.head(&sub.pk).await?);
        }
        Err(StoreError::Unavailable("too many concurrent submissions of this call".into()))
    }

    /// After a create (with `id`) or a revision failed with "try again": DynamoDB may have
    /// applied it all the same (a reply lost, then every retry of the SDK's failed). The
    /// head says whether this submission wrote it; else the error stands.
    async fn settle(
        &self,
        sub: &Submission,
        id: Option<u64>,
        error: StoreError,
        requests: u32,
    ) -> Result<Stored, StoreError> {
        if !matches!(error, StoreError::Unavailable(_)) {
            return Err(error);
        }
        let Ok(Some(head)) = self.head(&sub.pk).await else {
            return Err(error);
        };
        if let Some(id) = id.filter(|id| get_u64(&head, "id") == Some(*id) || names_erased(&head, *id)) {
            return Ok(sub.stored(id, Outcome::Created, 1, requests + 1));
        }
        if sub.wrote(&head) {
            let (id, revision) = id_and_revision(&head)?;
            return Ok(sub.stored(id, Outcome::Revised, revision, requests + 1));
        }
        if sub.was_committed(&head) {
            return unchanged(&head, requests + 1);
        }
        Err(error)
    }

    /// The head item, read consistently; `None` when there is none, or an erase's
    /// tombstone.
    async fn head(&self, pk: &str) -> Result<Option<Item>, StoreError> {
        Ok(self.item(pk, HEAD).await?.filter(|item| !is_tombstone(item)))
    }

    /// One item, read consistently.
    async fn item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(out.item)
    }

    /// Runs a transaction.
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Transaction, StoreError> {
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(Transaction::Committed),
            Err(e) => transaction_outcome(e),
        }
    }
}

impl Submission {
    fn stored(&self, id: u64, outcome: Outcome, revision: u64, requests: u32) -> Stored {
        Stored { id, outcome, revision, bytes_written: self.bytes, requests }
    }
}

/// Only a submission committed later (with a received time) can be dropped.
fn dropped() -> StoreError {
    StoreError::Internal("a submission without a received time was dropped".into())
}

fn unchanged(head: &Item, requests: u32) -> Result<Stored, StoreError> {
    let (id, revision) = id_and_revision(head)?;
    Ok(Stored { id, outcome: Outcome::Unchanged, revision, bytes_written: 0, requests })
}

/// A short, growing, jittered pause between attempts of a contended write.
fn backoff(attempt: usize) -> Duration {
    let base = 5u64 << attempt.min(6);
    let jitter = u64::from(random_u32() % 16);
    Duration::from_millis(base.min(200) + jitter)
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    let _ = getrandom::getrandom(&mut b);
    u32::from_le_bytes(b)
}

/// `bytes` random bytes as hex.
pub fn random_hex(bytes: usize) -> Result<String, StoreError> {
    let mut b = vec![0u8; bytes];
    getrandom::getrandom(&mut b).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    Ok(call_ingest_core::call::hex(&b))
}
