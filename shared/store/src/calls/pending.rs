//! Pending submissions: a valid call that DynamoDB could not commit within the answer's
//! budget (an outage, throttling) is made durable in S3 and answered 202; the committer
//! (`commit-pending`, on a schedule) commits it later through the same idempotent
//! `put_call`, then deletes it.
//!
//! Key: `pending/<workspace>/<sha256 of the provider call id, 32 hex>/<received ms>-<token>`,
//! so an erase finds a call's pending submissions by prefix; [`PACED`] ends the key of a
//! submission its workspace's send budget held back (or a held report released), the only
//! ones committed at the workspace's rate. The object is the request body
//! as received (decompressed), with the submission's identity as metadata: workspace,
//! agent, operation, provider call id (hex), received time. Committing runs the pipeline
//! again on the body (it was valid when received, and the pipeline is deterministic).
//!
//! The token in the key is the submission's identity (`Receipt`), minted when its request
//! arrived and shared with its direct write: committing a copy whose submission is stored
//! already changes nothing.
//!
//! An erase wins: it deletes the call's pending submissions received before it began, and
//! its tombstone records when it happened (`erased_at`); a submission received before that is
//! dropped at commit time instead of bringing the call back. A submission received after
//! the erase began is never deleted by it (a late or repeated erase cannot reach a call sent
//! again). Copies pending longer than [`EXPIRES_AFTER`] (since received, or since a held
//! report's agent was found: `held`) are moved to `failed/` with an error an alarm
//! watches; tombstones outlive them.
//!
//! Commits hold their bodies in memory: an instance commits at most [`MEMORY_BUDGET`] of
//! their estimated peak at once (the queue's batch and the sweep alike), so three large
//! calls never meet in one 512 MB instance.

use std::collections::HashMap;

use aws_sdk_s3::primitives::ByteStream;
use sha2::{Digest, Sha256};

use super::{now_ms, Owner, Receipt, Store, StoreError, Stored};
use call_ingest_core::call::{hex, CallDocument, Operation};
use call_ingest_core::privacy;
use call_ingest_core::providers::ingest_any;

/// Where pending submissions live in the frames' bucket.
pub const PREFIX: &str = "pending/";

/// What committing a pending submission did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    /// Stored (created, unchanged or revised), and the pending object deleted.
    Stored(Stored),
    /// The call was erased after the submission was received: dropped.
    Erased,
    /// No such pending object (committed and deleted already, or erased).
    Gone,
    /// The object cannot be committed (its identity or body is unreadable): kept aside
    /// under `failed/` for an operator, counted in the log.
    Unreadable,
}

/// Ends the key of a pending copy that waits for its workspace's send budget: a send over
/// the budget, or a held report released (a burst of them is committed at the workspace's
/// rate). A copy without it was counted against the budget when its request came in, and
/// is pending only because storage failed: committing it takes nothing from the budget, so
/// a backlog left by an outage is committed as fast as storage allows, not a second time
/// at the budget's pace behind the workspace's new sends.
pub const PACED: &str = "-paced";

/// Whether the pending copy at `key` waits for its workspace's send budget ([`PACED`]).
pub fn is_paced(key: &str) -> bool {
    key.ends_with(PACED)
}

/// The metadata of a pending copy that was a held report: since when it is pending (epoch ms).
pub const SINCE: &str = "since";

/// Where pending submissions that cannot be committed are kept for an operator.
pub const FAILED_PREFIX: &str = "failed/";

/// An erase removes the frames of its call written more than this before it began that
/// nothing names. A frame written since may be a send's still in flight, which may yet
/// store a call over the erase's tombstone and name it: a direct write gives up after the
/// store's 18 s deadline; S3 and Lambda keep NTP time, well within the 2 s more.
const FRAME_SKEW: std::time::Duration = std::time::Duration::from_secs(20);

/// Calls a sweep commits at once (as memory allows: [`MEMORY_BUDGET`]).
pub const SWEEP_PARALLEL: usize = 16;

/// A pending copy this old is moved to `failed/` (an error in the log, which an alarm
/// watches): an erase's tombstone lives longer ([`super::erase`]), so no copy it could name
/// outlives it and brings an erased call back.
pub const EXPIRES_AFTER: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The estimated peak memory of the commits an instance runs at once: half of the
/// function's 512 MB. A commit holds its body, the parsed call, the document and the frame:
/// about [`MEMORY_PER_BODY_BYTE`] times the body (215 MiB for a body at the 32 MiB cap,
/// `shared/http/tests/memory_peak.rs`), so one such call commits alone and small ones by the
/// dozen.
pub const MEMORY_BUDGET: usize = 256 << 20;
/// Peak bytes of memory a commit takes per byte of its body (rounded up from 215 MiB / 32 MiB).
pub const MEMORY_PER_BODY_BYTE: usize = 7;

/// What a sweep of the pending submissions did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sweep {
    pub committed: usize,
    pub erased: usize,
    pub gone: usize,
    pub unreadable: usize,
    /// Still pending: DynamoDB or S3 failed again, or the sweep ran out of time.
    pub left: usize,
}

impl std::ops::AddAssign for Sweep {
    fn add_assign(&mut self, other: Sweep) {
        self.committed += other.committed;
        self.erased += other.erased;
        self.gone += other.gone;
        self.unreadable += other.unreadable;
        self.left += other.left;
    }
}

/// `<workspace>/<sha256 of the call id, 32 hex>/`: a call's folder under each prefix.
pub(super) fn call_folder(workspace_id: u64, call_id: &str) -> String {
    let call = Sha256::digest(call_id.as_bytes());
    format!("{workspace_id}/{}/", hex(&call[..16]))
}

/// Where a copy of submission `receipt` goes under `prefix` (`pending/`, `held/`): in its
/// call's folder, named by its receipt.
pub(super) fn copy_key(prefix: &str, workspace_id: u64, call_id: &str, receipt: &Receipt) -> String {
    format!("{prefix}{}{:013}-{}", call_folder(workspace_id, call_id), receipt.received_ms, receipt.token)
}

/// The submission a pending key names: its token and received time.
pub(super) fn receipt_of(key: &str) -> Option<Receipt> {
    let name = key.rsplit('/').next()?;
    let name = name.strip_suffix(PACED).unwrap_or(name);
    let (received, token) = name.split_once('-')?;
    Some(Receipt { token: token.to_owned(), received_ms: received.parse().ok()? })
}

/// The received time a pending key carries, if it is one.
pub fn received_ms(key: &str) -> Option<u64> {
    key.strip_prefix(PREFIX)?.rsplit('/').next()?.split('-').next()?.parse().ok()
}

/// Keys of pending or held copies, one group per call, each in the order received (keys
/// sort by call, then by received time, as S3 lists them).
pub fn by_call<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<Vec<&'a str>> {
    let mut calls: Vec<Vec<&str>> = Vec::new();
    for key in keys {
        let call = key.rsplit_once('/').map_or(key, |(prefix, _)| prefix);
        match calls.last_mut() {
            Some(group) if group[0].rsplit_once('/').map(|(p, _)| p) == Some(call) => group.push(key),
            _ => calls.push(vec![key]),
        }
    }
    calls
}

/// One call's copies from each workspace in turn (each workspace's in the listing's
/// order): the sweep starts [`SWEEP_PARALLEL`] calls at a time, so a tenant whose backlog
/// comes first in the listing (`pending/1/` before `pending/2/`) does not hold every slot
/// while the others wait. Only paced copies ask a budget, which once spread the sweep too.
fn in_turns(calls: Vec<Vec<&str>>) -> Vec<Vec<&str>> {
    // The listing is in key order, so a workspace's calls come together.
    let mut queues: Vec<(Option<u64>, std::collections::VecDeque<Vec<&str>>)> = Vec::new();
    for call in calls {
        let ws = call.first().and_then(|k| workspace_of(k));
        match queues.last_mut().filter(|(w, _)| *w == ws) {
            Some((_, queue)) => queue.push_back(call),
            None => queues.push((ws, std::collections::VecDeque::from([call]))),
        }
    }
    let mut turns = Vec::new();
    while !queues.is_empty() {
        queues.retain_mut(|(_, queue)| queue.pop_front().map(|call| turns.push(call)).is_some());
    }
    turns
}

impl Store {
    /// Makes a submission received at `received` (epoch ms, when its request arrived)
    /// durable as pending; answers its key. `paced`: its workspace was over its send budget
    /// ([`PACED`]), rather than storage failing.
    pub async fn put_pending(
        &self,
        owner: Owner<'_>,
        operation: Operation,
        call_id: &str,
        raw: &[u8],
        receipt: &Receipt,
        paced: bool,
    ) -> Result<String, StoreError> {
        self.put_pending_as(owner, operation, call_id, raw, receipt, paced, Form::Body).await
    }

    /// [`Store::put_pending`] of a copy in `form` (a document its policy changed, in its
    /// envelope, for [`Form::Document`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn put_pending_as(
        &self,
        owner: Owner<'_>,
        operation: Operation,
        call_id: &str,
        raw: &[u8],
        receipt: &Receipt,
        paced: bool,
        form: Form,
    ) -> Result<String, StoreError> {
        let mut metadata = HashMap::from([
            ("workspace".to_owned(), owner.workspace_id.to_string()),
            ("agent".to_owned(), hex(owner.agent_id.as_bytes())),
            ("operation".to_owned(), operation.key()),
            ("call-id".to_owned(), hex(call_id.as_bytes())),
        ]);
        form.mark(&mut metadata);
        let key = copy_key(PREFIX, owner.workspace_id, call_id, receipt);
        let key = if paced { key + PACED } else { key };
        self.put_copy(key, raw, metadata).await
    }

    /// Writes a submission's body as received at `key` ([`copy_key`]), with `metadata`;
    /// answers the key.
    pub(super) async fn put_copy(
        &self,
        key: String,
        raw: &[u8],
        metadata: HashMap<String, String>,
    ) -> Result<String, StoreError> {
        let result = self
            .frames
            .client()
            .put_object()
            .bucket(self.frames.bucket())
            .key(&key)
            .if_none_match("*")
            .content_type("application/json")
            .set_metadata(Some(metadata))
            .body(ByteStream::from(raw.to_vec()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(key),
            // The key is this submission's own: the SDK's retry of a PUT whose reply was
            // lost finds its own object.
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => Ok(key),
            Err(e) => Err(super::frames::s3_error(e)),
        }
    }

    /// Commits the pending submission at `key`: stores it unless its call was erased after
    /// it was received, then deletes it. Safe to run twice, at once or one after the other.
    pub async fn commit_pending(&self, key: &str) -> Result<Committed, StoreError> {
        if receipt_of(key).is_none() {
            return self.set_aside(key).await;
        }
        let out = match self.frames.client().get_object().bucket(self.frames.bucket()).key(key).send().await {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(Committed::Gone),
            Err(e) => return Err(StoreError::from_sdk(e)),
        };
        // Pending since it was received, or since a held report's agent was found (its
        // `since`, `held::release_held`).
        let since = out.metadata.as_ref().and_then(|m| m.get(SINCE)?.parse().ok());
        let since = since.or(receipt_of(key).map(|r| r.received_ms)).unwrap_or_default();
        if since + EXPIRES_AFTER.as_millis() as u64 <= now_ms() {
            tracing::error!(event = "pending_expired", key, "pending submission not committed within 7 days");
            return self.set_aside(key).await;
        }
        // Held until the commit ends: the body, and what is made of it.
        let size = usize::try_from(out.content_length.unwrap_or_default()).unwrap_or(usize::MAX);
        let _memory = self.commit_memory.take(size).await;
        let metadata = out.metadata.clone().unwrap_or_default();
        let raw = out
            .body
            .collect()
            .await
            .map_err(|e| StoreError::Unavailable(format!("reading a pending submission failed: {e}")))?
            .into_bytes();
        let (Some((workspace_id, agent_id, operation, call_id)), Some(receipt)) =
            (identity(&metadata), receipt_of(key))
        else {
            return self.set_aside(key).await;
        };
        let doc = match Form::of(&metadata) {
            Form::Body => ingest_any(operation, &raw).ok(),
            Form::Document => privacy::from_envelope(operation, &raw),
        };
        let Some(doc) = doc else {
            return self.set_aside(key).await;
        };
        let raw = privacy::stored_raw(&doc, &raw);
        if doc.call_id() != call_id {
            return self.set_aside(key).await;
        }
        let owner = Owner { workspace_id, agent_id: &agent_id };
        let committed = match self.put_call_received(owner, &doc, &raw, &receipt).await? {
            Some(stored) => Committed::Stored(stored),
            None => Committed::Erased,
        };
        self.frames.delete(key).await?;
        Ok(committed)
    }

    /// Commits the pending submissions received before `before_ms`, a page of the listing
    /// at a time, until `deadline`. The calls of a page are committed [`SWEEP_PARALLEL`] at
    /// a time; the submissions of one call one after the other, in the order they arrived
    /// (their keys sort by received time), so the last one received ends up current.
    ///
    /// Calls are started one workspace after another in turn ([`in_turns`]). The commit of
    /// a paced copy ([`PACED`]) first asks `may_commit` whether its workspace may commit now
    /// (its send budget). A workspace refused is passed over for the rest of the pass (its
    /// calls wait, holding no slot, and it is asked no more, so its budget is not spent on
    /// asking); when a pass passed any over, the sweep waits for the next second and goes
    /// round again, so a paced backlog is committed at each workspace's rate.
    /// A pass that left calls for another reason (storage still failing) is followed by
    /// another 2 s later, until the deadline.
    pub async fn sweep_pending(
        &self,
        before_ms: u64,
        deadline: std::time::Instant,
        may_commit: &MayCommit<'_>,
    ) -> Result<Sweep, StoreError> {
        let mut sweep = Sweep::default();
        loop {
            let full = std::sync::Mutex::new(std::collections::HashSet::new());
            let pass = self.sweep_pass(before_ms, deadline, may_commit, &full).await?;
            // What is left is the last pass's (the earlier ones' were tried again).
            sweep += Sweep { left: 0, ..pass };
            let paced = full.lock().unwrap_or_else(|p| p.into_inner()).len();
            // Round again while anything is left (paced, or DynamoDB or S3 still failing):
            // storage that returns mid-sweep is used within a second or two, not at the
            // next run a minute later (the promise: committed within 60 s of its return).
            let pause = match paced {
                0 => std::time::Duration::from_secs(2),
                _ => until_next_second(),
            };
            if pass.left == 0 || std::time::Instant::now() + pause >= deadline {
                sweep.left = pass.left;
                return Ok(sweep);
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// One pass over the pending submissions (see [`Store::sweep_pending`]); `full` collects
    /// the workspaces refused in it. The whole listing is read first, so one call's
    /// submissions are one group, in the order they arrived, however the pages fall.
    async fn sweep_pass(
        &self,
        before_ms: u64,
        deadline: std::time::Instant,
        may_commit: &MayCommit<'_>,
        full: &std::sync::Mutex<std::collections::HashSet<u64>>,
    ) -> Result<Sweep, StoreError> {
        use futures_util::stream::{self, StreamExt};
        let mut sweep = Sweep::default();
        let keys = self.keys_under(PREFIX).await?;
        let keys = keys.iter().map(String::as_str).filter(|k| received_ms(k).is_some_and(|r| r < before_ms));
        let results: Vec<Sweep> = stream::iter(in_turns(by_call(keys)))
            .map(|group| self.commit_in_order(group, deadline, may_commit, full))
            .buffer_unordered(SWEEP_PARALLEL)
            .collect()
            .await;
        for r in results {
            sweep += r;
        }
        Ok(sweep)
    }

    /// Commits one call's pending submissions, oldest first; stops at the first that fails,
    /// or when its workspace is over its budget (the next pass resumes with it, so their
    /// order is kept).
    async fn commit_in_order(
        &self,
        keys: Vec<&str>,
        deadline: std::time::Instant,
        may_commit: &MayCommit<'_>,
        full: &std::sync::Mutex<std::collections::HashSet<u64>>,
    ) -> Sweep {
        let mut sweep = Sweep::default();
        let workspace_id = keys.first().and_then(|k| workspace_of(k));
        let is_full = |ws: u64| full.lock().unwrap_or_else(|p| p.into_inner()).contains(&ws);
        for (i, key) in keys.iter().enumerate() {
            // Past the deadline, no send of the budget is taken for a commit that will not run.
            if std::time::Instant::now() >= deadline {
                sweep.left += keys.len() - i;
                break;
            }
            // Only a paced copy waits for the budget: the others were counted when they came.
            let over = match workspace_id.filter(|_| is_paced(key)) {
                Some(ws) if is_full(ws) => true,
                Some(ws) => match may_commit(ws).await {
                    Ok(true) => false,
                    Ok(false) => {
                        full.lock().unwrap_or_else(|p| p.into_inner()).insert(ws);
                        true
                    }
                    Err(e) => {
                        // The budget could not be asked (its counter is unreadable): not
                        // paced but failed, so the queue's message comes back.
                        tracing::warn!(key, error = %e, "send budget unavailable; commit waits");
                        sweep.left += keys.len() - i;
                        break;
                    }
                },
                None => false,
            };
            if over {
                sweep.left += keys.len() - i;
                break;
            }
            match self.commit_pending(key).await {
                Ok(Committed::Stored(_)) => sweep.committed += 1,
                Ok(Committed::Erased) => sweep.erased += 1,
                Ok(Committed::Gone) => sweep.gone += 1,
                Ok(Committed::Unreadable) => sweep.unreadable += 1,
                Err(e) => {
                    tracing::warn!(key, error = %e, "pending submission not committed; next sweep");
                    sweep.left += keys.len() - i;
                    break;
                }
            }
        }
        sweep
    }

    /// Deletes the copies of call `call_id` of `workspace_id` under `prefixes` received
    /// before `before_ms` (an erase that began then): its pending submissions, those kept
    /// under `failed/`, its held reports. One received
    /// since is a later submission, which this erase never reaches, however late its
    /// deletes arrive.
    pub(super) async fn delete_pending_of(
        &self,
        workspace_id: u64,
        call_id: &str,
        before_ms: u64,
        prefixes: &[&str],
    ) -> Result<usize, StoreError> {
        let folder = call_folder(workspace_id, call_id);
        let mut keys = Vec::new();
        for prefix in prefixes {
            let listed = self.keys_under(&format!("{prefix}{folder}")).await?;
            keys.extend(listed.into_iter().filter(|k| receipt_of(k).is_none_or(|r| r.received_ms < before_ms)));
        }
        // A submission answered 202 may have written its frame before it went pending (its
        // direct write ran out of time): the frame goes with its pending copy. No item can
        // name it any more: its writes in flight are conditioned on a head this erase has
        // marked or buried. Its key is the copy's token: the erase's marker is written there
        // whether the frame is there yet or not, so a late copy of its PUT (conditional)
        // finds the marker and writes nothing. (A held report never wrote a frame.)
        let tokens: std::collections::HashSet<String> =
            keys.iter().filter_map(|k| receipt_of(k)).map(|r| r.token).collect();
        // One listing of the call's frames (a listing per copy took an erase of a call holding
        // hundreds past its time, every time): frames of the earlier layout
        // (`<token>-<digest>`) of those copies, and frames written before this erase that
        // nothing may name, such as the frame of a send answered 503 (S3 took its frame, not
        // its pending copy). A frame written since (a send still in flight) is left:
        // [`FRAME_SKEW`].
        let mut listed = Vec::new();
        for (key, written) in self.objects_under(&format!("frames/{folder}")).await? {
            let older = written.is_some_and(|w| w + FRAME_SKEW.as_millis() as u64 <= before_ms);
            if older || tokens.contains(super::frames::Frames::token_of(&key)) {
                listed.push(key);
            }
        }
        super::bounded(listed.iter().map(|k| self.frames.erase(k))).await?;
        // Each copy after its frame's marker: an erase cut short finds the token again next
        // time, and each copy deleted is progress kept (a call holding a thousand copies is
        // erased over several requests, not started over by each).
        let with_marker = |k: &String| k.starts_with(PREFIX) || k.starts_with(FAILED_PREFIX);
        super::bounded(keys.iter().map(|k| async move {
            if let Some(receipt) = receipt_of(k).filter(|_| with_marker(k)) {
                self.frames.erase(&super::frames::Frames::key(workspace_id, call_id, &receipt.token)).await?;
            }
            self.frames.delete(k).await
        }))
        .await?;
        Ok(keys.len() + listed.len())
    }

    /// Every key under `prefix` of an object that holds something, in S3's order (a call's
    /// pending submissions: oldest first); erased frames' empty markers are left out.
    pub(crate) async fn keys_under(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.objects_under(prefix).await?.into_iter().map(|(key, _)| key).collect())
    }

    /// [`Store::keys_under`], with when each object was written (epoch ms, S3's clock).
    async fn objects_under(&self, prefix: &str) -> Result<Vec<(String, Option<u64>)>, StoreError> {
        let mut objects = Vec::new();
        let mut token = None;
        loop {
            let out = self
                .frames
                .client()
                .list_objects_v2()
                .bucket(self.frames.bucket())
                .prefix(prefix)
                .set_continuation_token(token)
                .send()
                .await
                .map_err(StoreError::from_sdk)?;
            // An erased frame's empty marker is nothing left to remove.
            let held = out.contents().iter().filter(|o| o.size().unwrap_or(1) > 0);
            objects.extend(held.filter_map(|o| {
                let written = o.last_modified().and_then(|t| u64::try_from(t.to_millis().ok()?).ok());
                Some((o.key()?.to_owned(), written))
            }));
            token = out.next_continuation_token;
            if token.is_none() {
                return Ok(objects);
            }
        }
    }

    /// Commits the pending submission at `key`, which S3 announced through the queue, and
    /// the older pending submissions of its call before it, oldest first, so the queue
    /// keeps their order as the sweep does. A paced copy of a workspace over its send
    /// budget commits nothing here (`paced`): the sweep commits it at the workspace's rate.
    /// An error means the message should come back.
    pub async fn commit_notified(
        &self,
        key: &str,
        deadline: std::time::Instant,
        may_commit: &MayCommit<'_>,
    ) -> Result<Notified, StoreError> {
        let (Some(_), Some((prefix, _))) = (received_ms(key), key.rsplit_once('/')) else {
            return Ok(Notified::default());
        };
        let keys = self.keys_under(&format!("{prefix}/")).await?;
        let upto: Vec<&str> = keys.iter().map(String::as_str).filter(|k| *k <= key).collect();
        let full = std::sync::Mutex::new(std::collections::HashSet::new());
        let sweep = self.commit_in_order(upto, deadline, may_commit, &full).await;
        let paced = !full.lock().unwrap_or_else(|p| p.into_inner()).is_empty();
        if sweep.left > 0 && !paced {
            return Err(StoreError::Unavailable(format!("{} pending submission(s) not committed", sweep.left)));
        }
        Ok(Notified { sweep, paced })
    }

    /// Moves an object that cannot be committed to `failed/`, where it is kept for an
    /// operator; it is never retried.
    async fn set_aside(&self, key: &str) -> Result<Committed, StoreError> {
        tracing::error!(key, "pending submission cannot be committed; kept under failed/");
        let target = format!("{FAILED_PREFIX}{}", key.strip_prefix(PREFIX).unwrap_or(key));
        self.frames.move_object(key, &target, None).await?;
        Ok(Committed::Unreadable)
    }
}

/// The estimated memory of the commits in flight on one instance ([`MEMORY_BUDGET`]), in
/// KiB permits.
#[derive(Debug)]
pub(super) struct CommitMemory(tokio::sync::Semaphore);

impl CommitMemory {
    pub fn new() -> Self {
        CommitMemory(tokio::sync::Semaphore::new(MEMORY_BUDGET >> 10))
    }

    /// Waits until a commit of a body of `body_bytes` fits; held until dropped. A body
    /// larger than the whole budget waits for every other commit and then runs alone.
    pub async fn take(&self, body_bytes: usize) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let kib = (body_bytes.saturating_mul(MEMORY_PER_BODY_BYTE) >> 10).clamp(64, MEMORY_BUDGET >> 10);
        self.0.acquire_many(u32::try_from(kib).unwrap_or(u32::MAX)).await.ok()
    }
}

/// What committing an announced pending submission did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Notified {
    pub sweep: Sweep,
    /// Its workspace is over its send budget: left for the sweep.
    pub paced: bool,
}

/// Whether a workspace may commit a call now: its send budget, asked by the sweep; an
/// error when the budget cannot be read.
pub type MayCommit<'a> = dyn Fn(u64) -> futures_util::future::BoxFuture<'a, Result<bool, StoreError>> + Sync + 'a;

/// The workspace a pending key names.
fn workspace_of(key: &str) -> Option<u64> {
    key.strip_prefix(PREFIX)?.split('/').next()?.parse().ok()
}

/// How long until the wall clock's next second starts.
fn until_next_second() -> std::time::Duration {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    std::time::Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()))
}

/// Workspace, agent, operation and provider call id of a pending object.
fn identity(metadata: &HashMap<String, String>) -> Option<(u64, String, Operation, String)> {
    let text = |name: &str| unhex(metadata.get(name)?);
    let operation = Operation::parse(metadata.get("operation")?)?;
    Some((metadata.get("workspace")?.parse().ok()?, text("agent")?, operation, text("call-id")?))
}

/// What a pending or held copy holds: the request body, or (when its workspace's policy
/// changed the call) the changed document in its envelope (`privacy::envelope`). Said by
/// the copy's metadata, which only we write: a body that looks like an envelope is a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    Body,
    Document,
}

/// The metadata entry that marks a [`Form::Document`] copy.
pub(super) const FORM: &str = "form";

impl Form {
    pub(super) fn of(metadata: &HashMap<String, String>) -> Form {
        match metadata.get(FORM).map(String::as_str) {
            Some("document") => Form::Document,
            _ => Form::Body,
        }
    }

    /// What a pending or held copy of `doc` (sent as `raw`) holds, and its form: the body,
    /// or under a policy that changed the call its envelope (the body holds what the policy
    /// removed).
    pub fn copy_of<'a>(doc: &CallDocument, raw: &'a [u8]) -> (std::borrow::Cow<'a, [u8]>, Form) {
        match doc.data_policy {
            None => (std::borrow::Cow::Borrowed(raw), Form::Body),
            Some(_) => (std::borrow::Cow::Owned(privacy::envelope(doc)), Form::Document),
        }
    }

    pub(super) fn mark(self, metadata: &mut HashMap<String, String>) {
        if self == Form::Document {
            metadata.insert(FORM.to_owned(), "document".to_owned());
        }
    }
}

/// The UTF-8 text `h` holds as lower-case hex.
pub(super) fn unhex(h: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> =
        (0..h.len()).step_by(2).map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok()).collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_key_carries_its_received_time_and_its_call_prefix() {
        let prefix = format!("{PREFIX}{}", call_folder(7, "call-1"));
        let key = format!("{prefix}{:013}-ab12", 1_763_700_000_123u64);
        assert!(key.starts_with("pending/7/"));
        assert_eq!(workspace_of(&key), Some(7));
        assert_eq!(received_ms(&key), Some(1_763_700_000_123));
        assert_eq!(received_ms("frames/7/x/y"), None);
        assert_ne!(call_folder(7, "call-1"), call_folder(7, "call-2"));
    }

    #[tokio::test]
    async fn commits_wait_for_memory_and_two_calls_at_the_cap_never_meet() {
        let memory = CommitMemory::new();
        let large = memory.take(32 << 20).await.expect("fits alone");
        let second = tokio::time::timeout(std::time::Duration::from_millis(50), memory.take(32 << 20)).await;
        assert!(second.is_err(), "a second call at the cap waits for the first");
        let small = tokio::time::timeout(std::time::Duration::from_millis(50), memory.take(100_000)).await;
        assert!(small.is_ok_and(|p| p.is_some()), "a small call fits beside it");
        drop(large);
        let smalls: Vec<_> = futures_util::future::join_all((0..16).map(|_| memory.take(1_000_000))).await;
        assert!(smalls.iter().all(Option::is_some), "sixteen 1 MB calls fit at once");
        let big = tokio::time::timeout(std::time::Duration::from_millis(50), memory.take(32 << 20)).await;
        assert!(big.is_err(), "a large call waits for the small ones");
        let huge = memory.take(usize::MAX);
        drop(smalls);
        assert!(huge.await.is_some(), "a body past the whole budget runs alone rather than never");
    }

    #[test]
    fn the_sweep_takes_one_call_of_each_workspace_in_turn() {
        let keys = ["pending/1/a/1-x", "pending/1/a/2-x", "pending/1/b/1-x", "pending/1/c/1-x", "pending/2/d/1-x"];
        let keys = keys.into_iter().chain(["pending/3/e/1-x", "pending/3/f/1-x"]);
        let turns = in_turns(by_call(keys));
        let first = |call: &Vec<&str>| call[0].split('/').nth(2).unwrap().to_owned();
        assert_eq!(turns.iter().map(first).collect::<Vec<_>>(), ["a", "d", "e", "b", "f", "c"]);
        assert_eq!(turns[0], ["pending/1/a/1-x", "pending/1/a/2-x"], "a call's copies stay together, in order");
    }

    #[test]
    fn identities_read_back_as_written() {
        let metadata: HashMap<String, String> = [
            ("workspace", "7".to_owned()),
            ("agent", hex("agt_é".as_bytes())),
            ("operation", "create_call".to_owned()),
            ("call-id", hex("c/1 ü".as_bytes())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let key = format!("pending/7/abc/{:013}-ff00", 42u64);
        let (ws, agent, op, call_id) = identity(&metadata).unwrap();
        assert_eq!((ws, agent.as_str(), op, call_id.as_str()), (7, "agt_é", Operation::CreateCall, "c/1 ü"));
        assert_eq!(receipt_of(&key), Some(Receipt { token: "ff00".into(), received_ms: 42 }));
        let paced = format!("{key}{PACED}");
        assert_eq!(receipt_of(&paced), receipt_of(&key), "a paced copy is the same submission");
        assert_eq!((is_paced(&paced), is_paced(&key)), (true, false));
        assert_eq!(received_ms(&paced), Some(42));
        assert_eq!(unhex("zz"), None);
    }
}
