//! Durable, idempotent storage of calls in DynamoDB.
//!
//! A call is identified by (workspace, provider call id). The first submission creates its
//! head item with one conditional put; a replay with the same content (same agent and same
//! normalised document) writes nothing; different content becomes the new head and the
//! previous head is kept as a revision, in one transaction conditioned on the revision
//! number, so racing submissions all end up stored, in some order. (A replay received after
//! the head's own submission notes when, `seen_at`: one small update, so that a pending
//! submission received before it and committed after it goes below the head. A revision
//! whose send was received before the head it replaces counts as current from that head's
//! time, in `current_from`, which no replay note overwrites.)
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
pub(crate) mod error;
pub mod frames;
pub mod held;
pub mod ids;
pub mod item;
pub mod list;
mod migrate;
pub mod pending;
pub mod query;
mod read;
pub mod retention;
mod revise;
pub mod rewrite;
mod submission;
pub mod tables;
pub mod walk;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::TransactWriteItem;
use aws_sdk_dynamodb::Client;

use call_ingest_core::call::CallDocument;
use create::Creation;
use error::transaction_outcome;
pub(crate) use error::Transaction;
use ids::IdBlocks;
use item::is_erasing;
use item::{erased_at, get_u64, is_tombstone, names_erased, s, Item, HEAD};
use submission::{id_and_revision, Submission};

pub use erase::Erased;
pub use error::{cancellation_codes, StoreError};
pub use frames::Frames;
pub use list::{CallSummary, Listing, Page, Position};
pub use read::{CallAt, Part, RevisionInfo, StoredCall, StoredRevision};
pub use submission::{dynamodb_number, Receipt};

/// What a submission committed restricted to a stricter policy (`Store::commit_bound`)
/// adds to its token.
const BOUND_MARK: &str = "b";

/// Attempts at storing one submission (creates and revisions that lost a race or met a
/// transaction in progress) before answering "try again".
const MAX_ATTEMPTS: usize = 40;
/// No new attempt starts after this long: an answer reaches the client well inside the
/// function's 29 s timeout and API Gateway's 30 s.
const DEADLINE: Duration = Duration::from_secs(18);

/// How a submission reaches the store: answered now, or the pending copy of one answered
/// 202, committed later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Direct,
    Pending,
}

/// What one commit did besides its items: whether it wrote its frame, and whether a write
/// of its may have been applied without an answer saying so.
struct Attempt<'a> {
    external: Option<&'a (String, bytes::Bytes)>,
    wrote_frame: bool,
    maybe_applied: bool,
    /// It found the call being erased by an erase whose boundary covers its receipt, and
    /// waits: its pending copy is that erase's to drop.
    met_erase: bool,
    /// The call an attempt of it sent a revision to (landed or not, as far as it knows).
    wrote_into: Option<u64>,
    /// The call was found stored under a stricter data policy than the submission's, before
    /// any item of it was written: it is to be restricted and committed again.
    stricter: Option<call_ingest_core::privacy::Storage>,
    /// Its creation was noted for the raw sweep before its put (`Store::create`).
    noted_late: bool,
}

impl Attempt<'_> {
    /// Whether an erase recorded on `item` (a tombstone, or a call stored over one) erased
    /// a call that an attempt of this submission may have written into. That erase deleted
    /// the frames of what it read, this submission's among them (keyed by its token): an
    /// item written now naming the frame would read "no such call" for good (the history
    /// checker, seed 107: a revision whose reply was lost, the call erased, then the call
    /// created anew by the same request). It writes nothing more: a direct write answers
    /// "not yet" (202), and its pending copy, received before that erase, is dropped. Only
    /// when that erase's boundary covers its receipt (`erased_at`), as it does for any erase
    /// that read an item of it: a send received after the erase began whose revision merely
    /// failed its condition is stored as usual (a reviewer's point).
    fn frame_erased_by(&self, item: &Item, received: u64) -> bool {
        self.wrote_frame && self.wrote_into.is_some_and(|id| names_erased(item, id)) && erased_at(item) >= received
    }
}

fn frame_erased() -> StoreError {
    StoreError::Unavailable("an erase may have removed this submission's earlier write, and its frame".into())
}

/// What a call holds of a submission that may be stored already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// An item written by it.
    Identity,
    /// The content that was current when it was received: it replays it.
    Replay,
    Neither,
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
    /// What the commits of pending submissions running on this instance hold.
    commit_memory: pending::CommitMemory,
    /// The metadata of held reports this instance has read.
    held_index: held::HeldIndex,
    /// A day's length (`RETENTION_DAY_SECONDS`): a call created three quarters of it or more
    /// after it started is noted for the raw sweep (`rewrite::raw_late_pk`).
    day: crate::day::RetentionDay,
}

impl Store {
    pub fn new(client: Client, frames: Frames, table: impl Into<String>, id_block_size: u64) -> Self {
        let commit_memory = pending::CommitMemory::new();
        Store {
            client,
            frames,
            table: table.into(),
            ids: IdBlocks::new(id_block_size),
            commit_memory,
            held_index: Default::default(),
            day: Default::default(),
        }
    }

    /// This store with days of `day` (the local stack shortens them).
    pub fn with_day(mut self, day: crate::day::RetentionDay) -> Self {
        self.day = day;
        self
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
        self.commit_bound(owner, doc, raw, &Receipt::now()?, Path::Direct, None).await?.ok_or_else(dropped)
    }

    /// [`Store::put_call`] of the submission `receipt`, with at most `budget` for S3 and
    /// DynamoDB (compressing the call is not counted): past it, "try again" (the write in
    /// flight may still apply; its pending copy, under the same receipt, then changes
    /// nothing). Once the verdict is in, removing a frame it left unused is not cut.
    pub async fn put_call_within(
        &self,
        owner: Owner<'_>,
        doc: &CallDocument,
        raw: &[u8],
        receipt: &Receipt,
        budget: Duration,
    ) -> Result<Stored, StoreError> {
        self.commit_bound(owner, doc, raw, receipt, Path::Direct, Some(budget)).await?.ok_or_else(dropped)
    }

    /// [`Store::put_call`], for the pending copy of submission `receipt`, committed later:
    /// `None` when its call was erased after it was received (the erase wins; nothing is
    /// written, and a frame it wrote is removed).
    pub(super) async fn put_call_received(
        &self,
        owner: Owner<'_>,
        doc: &CallDocument,
        raw: &[u8],
        receipt: &Receipt,
    ) -> Result<Option<Stored>, StoreError> {
        self.commit_bound(owner, doc, raw, receipt, Path::Pending, None).await
    }

    /// Commits `doc` (its body `raw`); when the call was stored under a stricter data policy
    /// than this submission's (issue 32: the strictest policy a call ever had binds its later
    /// revisions), commits it again restricted to that policy, keeping its identity (a
    /// replay of it is still known) under a token of its own.
    async fn commit_bound(
        &self,
        owner: Owner<'_>,
        doc: &CallDocument,
        raw: &[u8],
        receipt: &Receipt,
        path: Path,
        budget: Option<Duration>,
    ) -> Result<Option<Stored>, StoreError> {
        let sub = Submission::prepare(owner, doc, raw, receipt)?;
        let identity = sub.digest.clone();
        let (pk, frame) = (sub.pk.clone(), sub.external.as_ref().map(|(key, _)| key.clone()));
        let mut stricter = None;
        let result = self.commit(owner, doc.call_id(), sub, path, budget, &mut stricter).await;
        let Some(storage) = stricter else { return result };
        let mut bound = doc.clone();
        call_ingest_core::privacy::restrict(&mut bound, storage, call_ingest_core::privacy::Kinds::all());
        bound.identity = Some(identity);
        let raw = call_ingest_core::privacy::stored_raw(&bound, raw);
        // Its token is the submission's own, marked: the direct write's re-commit and its
        // pending copy's (a 202 whose direct re-commit landed late) are one submission, stored
        // once however many times it is committed.
        let marked = Receipt { token: format!("{}{BOUND_MARK}", receipt.token), received_ms: receipt.received_ms };
        let sub = Submission::prepare(owner, &bound, &raw, &marked)?;
        let mut again = None;
        let result = self.commit(owner, doc.call_id(), sub, path, budget, &mut again).await;
        if let (Ok(Some(_)), Path::Pending, Some(frame)) = (&result, path, frame) {
            self.settle_bound_frame(&pk, &receipt.token, &frame).await?;
        }
        result
    }

    /// A pending copy committed restricted (`commit_bound`): the frame its direct write may
    /// have written of the content as sent is named by no item unless that write landed (a
    /// revision that outlived its answer). As `keep_unchanged` does, the copy's token is
    /// noted on the head first (every later write of the head, a late copy of that direct
    /// write's included, is conditioned on the tokens it read, so none can name the frame
    /// afterwards), then the frame is erased unless an item carries the token. `Err`: the
    /// head kept changing; the copy is committed again later (it then finds its token noted).
    async fn settle_bound_frame(&self, pk: &str, token: &str, frame: &str) -> Result<(), StoreError> {
        for round in 0..3 {
            let Some(head) = self.head(pk).await? else { return Ok(()) };
            if is_tombstone(&head) || is_erasing(&head) {
                // Erased, or being erased: the erase finds the copy's frame by its token.
                return Ok(());
            }
            let noted =
                submission::tokens(&head).contains(&token.to_owned()) || self.note_committed(pk, &head, token).await?;
            if noted {
                let items = self.query(pk, query::SortKeys::All, Some(&["sk", "submission"])).await?;
                if !items.iter().any(|i| item::get_s(i, "submission") == Some(token)) {
                    self.frames.erase(frame).await?;
                }
                return Ok(());
            }
            tokio::time::sleep(backoff(round)).await;
        }
        Err(StoreError::Unavailable("the call changed while its copy's frame was settled".into()))
    }

    /// Whether the frame `sub` may have written is unused once its commit answered `result`
    /// (`pending_frame`: it carries one); an error when that cannot be told of a frame it
    /// wrote.
    async fn frame_unused(
        &self,
        result: &Result<Option<Stored>, StoreError>,
        sub: &Submission,
        path: Path,
        attempt: &Attempt<'_>,
        pending_frame: bool,
    ) -> Result<bool, StoreError> {
        Ok(match result {
            // An erase won: no item of this submission can be written any more.
            Ok(None) => true,
            // Its content was there already, under another submission. A direct one knows
            // no other commit of its identity runs (a pending copy is made only when the
            // direct write did not finish); one of its own items may name it all the same
            // (an attempt applied without an answer); with none such, nothing names it. When
            // that cannot be told, a frame it wrote is neither kept nor erased here: the send
            // answers "not yet" (202), and its pending copy, of the same token, settles the
            // frame (`Store::keep_unchanged`). (Kept, nothing named it and an erase did not
            // reach it: the history checker, seed 77.)
            Ok(Some(stored)) if stored.outcome == Outcome::Unchanged && path == Path::Direct => {
                match attempt.maybe_applied {
                    false => true,
                    true => match self.holds_identity(sub, None).await {
                        Ok(holds) => !holds,
                        Err(e) if attempt.wrote_frame => {
                            return Err(StoreError::Unavailable(format!("whether its frame is named: {e}")))
                        }
                        Err(_) => false,
                    },
                }
            }
            // A pending copy: the frame its direct write may have written is unused once its
            // verdict is kept on the head.
            Ok(Some(stored)) if stored.outcome == Outcome::Unchanged && pending_frame => {
                self.keep_unchanged(sub).await?
            }
            _ => false,
        })
    }

    /// Writes a prepared submission; then, when it stored nothing, removes the frame it
    /// wrote to S3 unless an item of its own names it (a submission that found its content
    /// there already, or that an erase dropped, leaves no orphan behind).
    async fn commit(
        &self,
        owner: Owner<'_>,
        call_id: &str,
        mut sub: Submission,
        path: Path,
        budget: Option<Duration>,
        stricter: &mut Option<call_ingest_core::privacy::Storage>,
    ) -> Result<Option<Stored>, StoreError> {
        let external = sub.external.take().map(|(key, frame)| (key, bytes::Bytes::from(frame)));
        // A pending copy's frame may have been written by its direct write already.
        let wrote_frame = path == Path::Pending;
        let mut attempt = Attempt {
            external: external.as_ref(),
            wrote_frame,
            maybe_applied: false,
            met_erase: false,
            wrote_into: None,
            stricter: None,
            noted_late: false,
        };
        // The verdict, and whether the frame it wrote is unused: within `budget`. Only S3's
        // removal of that frame comes after, uncut: cut part-way, a removal could still land
        // while the send answered 202 and its pending copy, of the same token, came to name
        // the frame (a fresh reader's find). The verdict stands, so no copy is made.
        let started = Instant::now();
        let deciding = async {
            let result = self.commit_attempts(owner, call_id, &sub, path, &mut attempt).await;
            let unused = self.frame_unused(&result, &sub, path, &attempt, external.is_some()).await?;
            Ok::<_, StoreError>((result, unused))
        };
        let (result, unused) = match budget {
            None => deciding.await?,
            Some(budget) => match tokio::time::timeout(budget, deciding).await {
                Ok(decided) => decided?,
                Err(_) => return Err(StoreError::Unavailable(format!("not stored within {} ms", budget.as_millis()))),
            },
        };
        if let Some(storage) = attempt.stricter {
            // Found stored under a stricter policy before anything of it was written but its
            // frame (a head that tightened after the frame was put): no item names the frame.
            // Only a direct write's own: a pending copy's frame may be its direct write's,
            // named by a revision that landed before its answer was lost.
            if let (true, Path::Direct, Some((key, _))) = (attempt.wrote_frame, path, &external) {
                self.frames.erase(key).await?;
            }
            *stricter = Some(storage);
            return result;
        }
        if let (true, true, Some((key, _))) = (unused, attempt.wrote_frame, &external) {
            if let Err(e) = self.frames.erase(key).await {
                // A pending copy is kept until its frame is blanked: deleted with the frame
                // left, nothing would look for that frame again, and it would keep content
                // an erase covered (a fresh reader's find). Committed again, it finds the
                // same verdict and blanks the frame then.
                if path == Path::Pending {
                    return Err(e);
                }
                tracing::warn!(error = %e, "an unused frame was not removed");
            }
        }
        let waits = path == Path::Direct && attempt.met_erase && !attempt.maybe_applied && attempt.wrote_frame;
        if let (true, Some((key, _))) = (waits, &external) {
            // The call is being erased by an erase that covers this send, and nothing of it
            // was written: it goes pending, and its copy is dropped (by the erase, or when
            // committed: `after_erase`, whose frame is then erased). Left here, a frame
            // written after the erase looked for this send's frames would outlive the erase.
            // Erased with a marker, not deleted: nothing will ever name this key, and a copy
            // of the frame's PUT arriving late then fails on the marker (`If-None-Match`)
            // instead of bringing the content back (a reviewer's find).
            // (Received after the erase's boundary, the send's copy is stored anew over the
            // tombstone under the same frame key: that frame is left for it, since a DELETE
            // or a marker arriving late would take the frame of a stored call.)
            if let Err(e) = self.frames.erase(key).await {
                tracing::warn!(error = %e, "the frame of a send that waits was not removed");
            }
        }
        if let (Ok(Some(stored)), false) = (&result, attempt.noted_late) {
            // Not noted within what is left of the budget (at least 100 ms, so a send may
            // overrun it by that much): a send that created the call answers 202 (never 500:
            // the call is stored; its frame is named, so none was erased above) and its
            // pending copy notes it when committed. One that found its content stored
            // (`Unchanged`, its frame perhaps erased above) answers as it would have: a 202
            // would leave a copy whose frame is an erase's marker (a reader's find).
            let noting = self.note_if_late(&sub, stored, path == Path::Pending);
            let noted = match budget {
                None => noting.await,
                Some(budget) => {
                    let left = budget.saturating_sub(started.elapsed()).max(Duration::from_millis(100));
                    tokio::time::timeout(left, noting)
                        .await
                        .unwrap_or_else(|_| Err(StoreError::Unavailable("timed out".into())))
                }
            };
            match noted {
                Err(e) if path == Path::Direct && stored.outcome == Outcome::Unchanged => {
                    tracing::warn!(error = %e, "a call found stored late not noted for the raw sweep");
                }
                Err(e) => return Err(StoreError::Unavailable(format!("its note for the raw sweep: {e}"))),
                Ok(()) => {}
            }
        }
        result
    }

    /// A pending copy committed unchanged (its content was there already, under another
    /// submission): the frame its direct write may have written is named by no item, and it
    /// never will be once its token is among the head's committed ones. Every commit of it
    /// still to come or in flight (the queue's and a sweep's at once, the copy committed
    /// again after its delete failed, its direct write applied late) then finds it committed
    /// and writes nothing, as every write of the head is conditioned on the committed tokens
    /// it read. So the token is noted first, on the head as read, while that head still says
    /// "unchanged" for this copy; then the frame is unused and is erased. `Ok(false)`: an
    /// item names the frame. `Err`: the call changed meanwhile (its content, or erased); the
    /// copy is kept and committed again later.
    ///
    /// (Erasing the frame on the verdict alone left it to be named: a second commit of the
    /// copy, judging it against a newer head, found the erase's marker with its PUT's 412 and
    /// wrote a revision naming it, which read "no such call" for good.)
    async fn keep_unchanged(&self, sub: &Submission) -> Result<bool, StoreError> {
        let changed = || StoreError::Unavailable("the call changed while its copy was committed".into());
        for round in 0..3 {
            // Erased meanwhile: committed again, the copy is dropped with the call, or
            // stored anew over the tombstone if received after the erase began.
            let Some(head) = self.head(&sub.pk).await? else { return Err(changed()) };
            if sub.was_committed_before(&head) {
                // Noted already (by another commit of it, or before an instance was killed).
                return Ok(!self.holds_identity(sub, None).await?);
            }
            // A later stage of the provider's events is never a replay: it wins.
            match self.identity_or_replay(sub, Some(&head), !sub.outranks(&head)).await? {
                Found::Identity => return Ok(false),
                Found::Replay => {}
                Found::Neither if sub.same_content(&head) || sub.kept_late(&head) => {}
                Found::Neither => return Err(changed()),
            }
            if self.note_committed(&sub.pk, &head, &sub.token).await? {
                return Ok(true);
            }
            tokio::time::sleep(backoff(round)).await;
        }
        Err(changed())
    }

    /// The attempts at writing a prepared submission (see [`Store::commit`]).
    async fn commit_attempts(
        &self,
        owner: Owner<'_>,
        call_id: &str,
        sub: &Submission,
        path: Path,
        attempt: &mut Attempt<'_>,
    ) -> Result<Option<Stored>, StoreError> {
        let started = Instant::now();
        let mut requests = 0;
        let received = sub.received_ms;
        // An erase after this submission was received wins over a pending copy (a direct
        // submission overlaps the erase: it may land either way).
        // So does an erase of the call it was noted as committed into (`Store::keep_unchanged`:
        // its frame is erased; the tombstone keeps the note).
        let erased_since = |item: &Item| {
            path == Path::Pending
                && (erased_at(item) >= received || (is_tombstone(item) && sub.was_committed_before(item)))
        };
        // The head as last read: `None` until read (a small call tries to create first).
        let mut seen: Option<Option<Item>> = None;
        if let Some((key, frame)) = attempt.external {
            // A large submission is checked first, so a replay writes no object, and a
            // pending copy of an erased call writes none either.
            requests += 1;
            let found = self.item(&sub.pk, HEAD).await?;
            if let Some(item) = found.as_ref().filter(|item| erased_since(item)) {
                return self.after_erase(sub, item, requests).await;
            }
            let head = found.filter(|item| !is_tombstone(item));
            if head.as_ref().is_some_and(is_erasing) {
                // Being erased: no frame is written for a submission that must wait.
                return Err(StoreError::Unavailable("the call is being erased".into()));
            }
            let mut head = head;
            for round in 0..MAX_ATTEMPTS {
                let Some(same) = head.as_ref().filter(|h| sub.same_content(h)) else { break };
                if let Some(stored) = self.replayed(sub, same, &mut requests).await? {
                    return Ok(Some(stored));
                }
                // The head changed meanwhile: read it again.
                tokio::time::sleep(backoff(round)).await;
                requests += 1;
                head = self.head(&sub.pk).await?;
            }
            if head.as_ref().is_some_and(is_erasing) {
                // Found being erased when read again: no frame either (written, then removed
                // as the send waits, a late DELETE of it could take the frame its pending
                // copy writes again once committed: a fresh reader's find).
                return Err(StoreError::Unavailable("the call is being erased".into()));
            }
            if let (Path::Pending, Some(other)) = (path, head.as_ref()) {
                // A pending copy the call holds already, or that replays what was current
                // when it was received, writes no frame.
                requests += 1;
                if self.identity_or_replay(sub, Some(other), !sub.outranks(other)).await? != Found::Neither {
                    return unchanged(other, requests).map(Some);
                }
            }
            // Stored under a stricter policy (and not holding this submission already, nor
            // replayed by it: checked first, as a stored submission is never stored again):
            // no frame of this content is written.
            if let Some(storage) = head.as_ref().and_then(|h| sub.bound_by(h)) {
                attempt.stricter = Some(storage);
                return Err(StoreError::Unavailable("the call is stored under a stricter data policy".into()));
            }
            self.frames.put(key, frame.clone(), owner, call_id, received).await?;
            attempt.wrote_frame = true;
            seen = Some(head);
        }
        // The id this submission creates the call with, once taken. It is given back only
        // when another submission's head is seen: then it was certainly never written.
        let mut id = None;
        // An erase's tombstone at the head's key, once seen: the call is created over it.
        let mut tombstone = None;
        for round in 0..MAX_ATTEMPTS {
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
                    let creation = match self.create(sub, new_id, tombstone.as_ref(), &mut attempt.noted_late).await {
                        Ok(creation) => creation,
                        Err(e) => return self.settle(sub, Some(new_id), e, requests).await.map(Some),
                    };
                    let found = match creation {
                        Creation::Created => return Ok(Some(sub.stored(new_id, Outcome::Created, 1, requests))),
                        Creation::Conflict => {
                            attempt.maybe_applied = true;
                            tokio::time::sleep(backoff(round)).await;
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
                        if erased_since(&found) {
                            // Erased after this submission was received: the erase wins.
                            self.ids.give_back(new_id).await;
                            return Ok(None);
                        }
                        if sub.was_committed_before(&found) {
                            // A direct write whose pending copy an erase dropped (noted on
                            // the tombstone): it cannot create the call, and the copy's
                            // verdict stands.
                            self.ids.give_back(new_id).await;
                            return Err(StoreError::Unavailable("its copy was dropped by an erase".into()));
                        }
                        if attempt.frame_erased_by(&found, received) {
                            self.ids.give_back(new_id).await;
                            return Err(frame_erased());
                        }
                        tombstone = Some(found);
                        continue;
                    }
                    self.ids.give_back(new_id).await;
                    id = None;
                    found
                }
            };
            if erased_since(&head) {
                // Created anew after an erase that came after this submission: the erase
                // wins, unless the new call is this submission's own.
                return self.after_erase(sub, &head, requests).await;
            }
            if attempt.frame_erased_by(&head, received) {
                return Err(frame_erased());
            }
            if is_erasing(&head) {
                // An erase began and has not finished (it answered "try again"): neither a
                // revision (it would make the erased content readable again) nor a replay.
                // The submission waits, pending, for the erase to be finished.
                attempt.met_erase = get_u64(&head, item::ERASING).is_some_and(|upto| upto >= received);
                return Err(StoreError::Unavailable("the call is being erased".into()));
            }
            if path == Path::Direct && sub.was_committed_before(&head) && !sub.wrote(&head) {
                // Its pending copy was committed, or dropped by an erase (`after_erase`),
                // already: only a write that outlived its answer (202) meets this, and the
                // copy's verdict stands. (A request sent before the note fails on its
                // condition: the committed tokens it read changed.)
                return Err(StoreError::Unavailable("its pending copy was settled already".into()));
            }
            if sub.same_content(&head) {
                if sub.wrote(&head) {
                    // This request's own revision, applied by an attempt whose reply was lost.
                    let (id, revision) = id_and_revision(&head)?;
                    return Ok(Some(sub.stored(id, Outcome::Revised, revision, requests)));
                }
                match self.replayed(sub, &head, &mut requests).await? {
                    Some(stored) => return Ok(Some(stored)),
                    None => {
                        tokio::time::sleep(backoff(round)).await;
                        requests += 1;
                        seen = Some(self.head(&sub.pk).await?);
                        continue;
                    }
                }
            }
            if sub.kept_late(&head) {
                // A replay of a provider's earlier event, already kept below the head.
                return unchanged(&head, requests).map(Some);
            }
            if path == Path::Pending || attempt.maybe_applied {
                // This submission may be stored already (its direct write, applied after
                // its answer said 202; an attempt whose reply was lost) under content that
                // has changed since: stored once, it is never stored again. A pending one
                // that replays the content current when it was received adds nothing either.
                requests += 1;
                // A later stage of the provider's events is never a replay: it wins.
                let replays = path == Path::Pending && !sub.outranks(&head);
                if self.identity_or_replay(sub, Some(&head), replays).await? != Found::Neither {
                    // A replay found here wrote its frame: left, as a rare orphan, since its
                    // direct write may still land a revision naming it.
                    return unchanged(&head, requests).map(Some);
                }
            }
            if let Some(storage) = sub.bound_by(&head) {
                // The call was stored under a stricter data policy: this content, restricted
                // to it, is committed instead (`commit_bound`); nothing of it was written.
                attempt.stricter = Some(storage);
                return Err(StoreError::Unavailable("the call is stored under a stricter data policy".into()));
            }
            requests += 1;
            // One clock orders submissions: when they were received (a direct one's too). A
            // pending one committed after a later one is kept below it; direct ones overlap
            // whatever they find, and land in the order they commit. A later stage of the
            // provider's events wins over both: a pending `call_analyzed` committed after a
            // later `call_ended` still becomes current.
            let received_later = path == Path::Pending && order_time(&head).is_some_and(|at| at > received);
            let newer_is_current = sub.outranked_by(&head) || (received_later && !sub.outranks(&head));
            let written = match newer_is_current {
                // A submission received after this one is current (or a later stage of the
                // provider's events): this one is kept as a revision and the current content
                // stays current, whatever order they commit in.
                true => self.insert_late(sub, &head).await,
                false => self.revise(sub, &head).await,
            };
            attempt.maybe_applied = true;
            attempt.wrote_into = attempt.wrote_into.or(get_u64(&head, "id"));
            match written {
                Ok(Some(stored)) => return Ok(Some(Stored { requests, ..stored })),
                Ok(None) => {}
                Err(e) => return self.settle(sub, None, e, requests).await.map(Some),
            }
            tokio::time::sleep(backoff(round)).await;
            requests += 1;
            seen = Some(self.head(&sub.pk).await?);
        }
        Err(StoreError::Unavailable("too many concurrent submissions of this call".into()))
    }

    /// After a create (with `id`) or a revision failed with "try again": DynamoDB may have
    /// applied it all the same (a reply lost, then every retry of the SDK's failed). The
    /// call says whether this submission is stored; else the error stands.
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
        if id.is_none() && self.holds_identity(sub, Some(&head)).await.unwrap_or(false) {
            return unchanged(&head, requests + 2);
        }
        Err(error)
    }

    /// Whether an item of the call (the head `head` as read, else read now, or a revision)
    /// carries this submission's identity: it is stored already.
    async fn holds_identity(&self, sub: &Submission, head: Option<&Item>) -> Result<bool, StoreError> {
        Ok(self.identity_or_replay(sub, head, false).await? == Found::Identity)
    }

    /// Whether the call (its head `head` as read, else read now, or a revision) holds this
    /// submission already; with `replays`, else whether the content current when it was
    /// received was its own (a replay received before the head, committed after it: no new
    /// revision). Revisions never change once written, so one consistent query of their
    /// keys and tokens (and digests and times) answers both.
    async fn identity_or_replay(
        &self,
        sub: &Submission,
        head: Option<&Item>,
        replays: bool,
    ) -> Result<Found, StoreError> {
        if head.is_some_and(|h| sub.wrote(h) || sub.was_committed_before(h)) {
            return Ok(Found::Identity);
        }
        let fields: &[&str] = match replays {
            true => &["sk", "submission", "digest", item::DIGEST_SENT, "updated_at", item::CURRENT_FROM, "revision"],
            false => &["sk", "submission"],
        };
        let items = self.query(&sub.pk, query::SortKeys::All, Some(fields)).await?;
        if items.iter().any(|item| sub.wrote(item)) {
            return Ok(Found::Identity);
        }
        // The content current at its receipt: the item that became current last at or
        // before it (from its own receipt, or from the receipt of the content it replaced);
        // of two at one time, the later revision, which replaced the other. Replays' notes
        // (`seen_at`) say until when content was current, not since when: not read here.
        let current_then = items
            .iter()
            .filter_map(|item| {
                let at = current_from(item).filter(|at| *at <= sub.received_ms)?;
                Some(((at, get_u64(item, "revision")), item))
            })
            .max_by_key(|(at, _)| *at);
        // Only a copy received before the head's content was last received can replay older
        // content: receipt times do not rise with revisions (a late insert keeps the old
        // head's time, direct writes land in the order they commit), so a later copy is
        // judged against the head alone, whose content it does not have.
        let before_head = head.and_then(order_time).is_some_and(|at| sub.received_ms < at);
        Ok(match replays && before_head && current_then.is_some_and(|(_, item)| sub.same_content(item)) {
            true => Found::Replay,
            false => Found::Neither,
        })
    }

    /// A replay of the content of `head` (as read): it writes no revision, but it is the
    /// last content received, noted on the head when later than the head's own receipt. A
    /// submission received before it and committed after it (pending) then goes below the
    /// head instead of over it. `None`: the head changed first; read it again.
    async fn replayed(&self, sub: &Submission, head: &Item, requests: &mut u32) -> Result<Option<Stored>, StoreError> {
        if order_time(head).is_some_and(|at| at < sub.received_ms) {
            *requests += 1;
            if !self.note_replay(&sub.pk, head, sub.received_ms).await? {
                return Ok(None);
            }
        }
        unchanged(head, *requests).map(Some)
    }

    /// A pending submission received before the erase that `item` records (its tombstone,
    /// or a call created anew since, which carries the erase's time): the erase wins and
    /// the submission is dropped (`None`), unless the call holds it already. Its own direct
    /// write, applied after its answer said 202, may have created or revised the call after
    /// the erase: then it is stored, and its frame is the call's (dropping it would blank
    /// the frame and leave the call unreadable).
    ///
    /// A drop is noted on `item` first (its token among the committed ones), on condition
    /// that `item` is unchanged: the frame is blanked next, and the direct write, whose
    /// request may still be applied late (its answer was 202), would otherwise create or
    /// revise a call naming the blank frame (a fresh reader's find). A create over the
    /// tombstone and a revise both fail once the token is noted (`create::OVER_TOMBSTONE`,
    /// `Store::replacing`). When the note fails (the item changed since it was read) the
    /// copy stays pending and is judged again.
    async fn after_erase(&self, sub: &Submission, item: &Item, requests: u32) -> Result<Option<Stored>, StoreError> {
        if is_tombstone(item) || !self.holds_identity(sub, Some(item)).await? {
            if !sub.was_committed_before(item) && !self.note_dropped(&sub.pk, item, &sub.token).await? {
                return Err(StoreError::Unavailable("the call changed while its copy was dropped".into()));
            }
            return Ok(None);
        }
        unchanged(item, requests + 1).map(Some)
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
    pub(crate) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Transaction, StoreError> {
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

/// When an item's content was last received: its submission's receipt, or a later one it
/// carries (a replay's, noted on the head, or the receipt of the content it replaced).
fn order_time(head: &Item) -> Option<u64> {
    let seen = get_u64(head, item::SEEN_AT).unwrap_or(0);
    current_from(head).map(|at| at.max(seen))
}

/// Since when an item's content counts as current: its submission's receipt, or the later
/// receipt of the content it replaced (`item::CURRENT_FROM`).
fn current_from(item: &Item) -> Option<u64> {
    let from = get_u64(item, item::CURRENT_FROM).unwrap_or(0);
    get_u64(item, "updated_at").map(|at| at.max(from))
}

fn unchanged(head: &Item, requests: u32) -> Result<Stored, StoreError> {
    let (id, revision) = id_and_revision(head)?;
    Ok(Stored { id, outcome: Outcome::Unchanged, revision, bytes_written: 0, requests })
}

/// Requests an erase sends at once: a call with hundreds of pending sends or revisions would
/// otherwise send them all together, and time out queueing behind each other.
const PARALLEL: usize = 16;

/// Runs `requests`, at most [`PARALLEL`] at once; the first error ends it.
async fn bounded<T>(
    requests: impl IntoIterator<Item = impl std::future::Future<Output = Result<T, StoreError>>>,
) -> Result<Vec<T>, StoreError> {
    use futures_util::stream::{self, StreamExt, TryStreamExt};
    let requests: Vec<_> = requests.into_iter().collect();
    stream::iter(requests).buffer_unordered(PARALLEL).try_collect().await
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
    Ok(call_ingest_core::call::hex(&random_bytes(bytes)?))
}

/// `bytes` random bytes from the operating system (secrets).
pub fn random_bytes(bytes: usize) -> Result<Vec<u8>, StoreError> {
    let mut b = vec![0u8; bytes];
    getrandom::getrandom(&mut b).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    Ok(b)
}
