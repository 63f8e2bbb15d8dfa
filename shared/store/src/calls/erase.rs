//! Erasing a call: its head, every revision, their frames in S3 and any chunks (calls stored
//! before frames moved to S3), so that nothing of it remains (a stream consumer sees each
//! removal).
//!
//! The head goes last, on the condition that it is still the one whose partition was read:
//! a call stays findable (by id, in listings) until nothing else of it is left, so an erase
//! that died half-way is finished by the next one; and a revision that arrived meanwhile
//! fails the condition, and the erase reads the partition again and erases that too.
//! (A read meanwhile finds parts missing and answers "no such call".)
//!
//! The head is not deleted but replaced by a tombstone that names the erased id and
//! expires after a day: a late copy of a write of the erased call (a create or a revision
//! stuck in the network, applied after its retry) fails on it instead of bringing the call
//! back under its old id.

use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use super::item::{
    call_pk, get_s, get_u64, n, names_erased, s, Item, COMMITTED, CURRENT_FROM, ERASED_AT, ERASED_IDS, ERASING,
    FRAME_KEY, HEAD, SEEN_AT,
};
use super::query::SortKeys;
use super::{backoff, tables, Store, StoreError};

/// Where an erase looks for copies of the call received before it: pending submissions,
/// those set aside, and webhook reports held for want of an agent.
const ERASED_COPIES: [&str; 3] = [super::pending::PREFIX, super::pending::FAILED_PREFIX, super::held::HELD_PREFIX];
/// Where it looks again once the call is buried: copies no direct write can be racing.
const AFTER_BURIAL: [&str; 2] = [super::pending::FAILED_PREFIX, super::held::HELD_PREFIX];

/// How long an erase's tombstone guards against late copies of the erased call's writes
/// (DynamoDB's TTL removes it some time after): longer than any copy that could name the
/// call lives, so none committed late can bring it back: a report held up to 30 days
/// ([`super::held::HELD_FOR`]), then pending up to 7 ([`super::pending::EXPIRES_AFTER`]).
const TOMBSTONE_TTL: Duration = Duration::from_secs(38 * 24 * 3600);
/// Most erased ids a tombstone (and the calls stored over it) keeps.
const MAX_ERASED_IDS: usize = 64;

/// Rounds of read-then-delete before answering "try again" (each lost to a revision or a
/// transaction on the head).
const MAX_ROUNDS: usize = 10;

/// What deleting one of a call's items did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deleted {
    Yes,
    /// Gone already, or another submission's item under the same key: not this call's.
    Changed,
    /// Another transaction held it: still there.
    Held,
}

/// What an erase removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Erased {
    /// Items removed: the head, revisions and chunks. 0 when there was nothing to erase
    /// (never stored, erased before, or another call now has the provider call id).
    pub items: usize,
}

/// What one round of an erase came to.
enum Round {
    /// Nothing more to do.
    Done(Erased),
    /// Read the call again.
    Again,
    /// Everything but the head is gone: bury it (the head as read, and the erases' mark).
    Bury(Item, u64),
}

/// An erase's state across its rounds.
struct Progress {
    /// Only what was received before this erase began is its to remove, and what it
    /// reads: a late or repeated erase never reaches a submission sent after it. Its
    /// boundary starts at its start and rises to the latest receipt of anything it reads
    /// (a send received since, whose revision landed before the mark, is removed with the
    /// call, and its pending copy must go too, not be committed over the tombstone as a
    /// call whose frame this erase blanked). Kept across rounds: a revision deleted in an
    /// earlier round is not read again.
    upto: u64,
    /// Items removed so far.
    removed: usize,
    /// Whether this request tried to replace the head: a tombstone naming the id, found
    /// afterwards, was then most likely its own write (a conflict or a lost reply hid it).
    tried_head: bool,
}

impl Store {
    /// Erases call `id`, stored under `call_id` in `workspace_id`. A call with that provider
    /// call id but another internal id (stored again after an erase) is left alone.
    pub async fn erase_call(&self, workspace_id: u64, call_id: &str, id: u64) -> Result<Erased, StoreError> {
        self.erase_call_until(workspace_id, call_id, id, None).await
    }

    /// [`Store::erase_call`], given up (`Unavailable`) at `until`, but never between burying
    /// the head and the clean-up that follows: a buried call can no longer be found by its
    /// id, so a copy of it set aside meanwhile (under failed/ or held/) or its notes for the
    /// raw sweep would be left for good if the erase stopped there. What it removed before
    /// `until` stays removed; the next erase finishes the rest.
    pub async fn erase_call_until(
        &self,
        workspace_id: u64,
        call_id: &str,
        id: u64,
        until: Option<tokio::time::Instant>,
    ) -> Result<Erased, StoreError> {
        let pk = call_pk(workspace_id, call_id);
        let mut progress = Progress { upto: super::now_ms(), removed: 0, tried_head: false };
        for round in 0..MAX_ROUNDS {
            let step = self.erase_round(workspace_id, call_id, id, &pk, round, &mut progress);
            let step = before(until, step).await?;
            let (head, mark) = match step {
                Round::Done(erased) => return Ok(erased),
                Round::Again => continue,
                Round::Bury(head, mark) => (head, mark),
            };
            progress.tried_head = true;
            if self.bury(&pk, &head, id, mark).await? {
                // A copy set aside under failed/ (or held) after the listing above is gone
                // too. Not pending/ ones: a send received before the mark may be creating
                // the call anew over the tombstone right now (its direct write outlived its
                // answer, 202), and blanking its frame would leave that call unreadable;
                // its pending copy is dropped when committed, or finds its call there.
                self.delete_pending_of(workspace_id, call_id, mark + 1, &AFTER_BURIAL).await?;
                // And its notes for the raw sweep, if it had them (`rewrite::raw_due_pk`,
                // `raw_late_pk`: the latter names the call and when it was created).
                self.forget_raw_due(workspace_id, call_id, id).await?;
                if let Some(created_at) = get_u64(&head, "created_at") {
                    self.forget_raw_late(workspace_id, call_id, created_at).await?;
                }
                return Ok(Erased { items: progress.removed + 1 });
            }
            tokio::time::sleep(backoff(round)).await;
        }
        Err(StoreError::Unavailable("the call kept changing while it was being erased".into()))
    }

    /// One round: the call's items read, the head marked, then everything but the head
    /// deleted (frames, revisions, chunks, pending copies). Stopping anywhere in it leaves
    /// the call marked, never lost: the next erase finishes it.
    async fn erase_round(
        &self,
        workspace_id: u64,
        call_id: &str,
        id: u64,
        pk: &str,
        round: usize,
        progress: &mut Progress,
    ) -> Result<Round, StoreError> {
        let items = self
            .query(
                pk,
                SortKeys::All,
                Some(&[
                    "pk",
                    "sk",
                    "id",
                    "revision",
                    "submission",
                    "updated_at",
                    "created_at",
                    SEEN_AT,
                    CURRENT_FROM,
                    FRAME_KEY,
                    super::rewrite::FRAMES_WRITTEN,
                    super::rewrite::FRAMES_SUPERSEDED,
                    ERASING,
                    ERASED_IDS,
                    ERASED_AT,
                    COMMITTED,
                ]),
            )
            .await?;
        let Some(head) = items.iter().find(|i| get_s(i, "sk") == Some(HEAD)) else {
            // Unconfirmed chunks of a submission in flight (before frames moved to S3)
            // may be there: they are not this call's, and expire within a day.
            return Ok(Round::Done(Erased { items: progress.removed }));
        };
        if get_u64(head, "id") != Some(id) {
            let buried = progress.tried_head && names_erased(head, id);
            return Ok(Round::Done(Erased { items: progress.removed + usize::from(buried) }));
        }
        progress.upto = items.iter().filter_map(super::order_time).fold(progress.upto, u64::max);
        // Marked first: from here on readers find no call, whatever of it is left if this
        // erase stops part-way; the next erase finishes it. The mark holds the latest
        // boundary of the erases under way, raised before anything it covers is deleted, and
        // the tombstone keeps it: a pending send received up to then is dropped when
        // committed, as those erases delete its copy (two erases at once, a client's retry:
        // the earlier one's tombstone would let a send through whose copy the later one
        // deletes, blanking the call it became).
        let mark = match get_u64(head, ERASING) {
            Some(at) if at >= progress.upto => at,
            // Marked now: the items are read again, after the mark. A rewrite names the
            // object it is about to write on its item and then looks for the mark
            // (`rewrite`): one that named it between this read and the mark is seen by the
            // next read (a reviewer's find: its object outlived the erase).
            _ if self.mark_erasing(pk, head, id, progress.upto).await? => return Ok(Round::Again),
            _ => {
                tokio::time::sleep(backoff(round)).await;
                return Ok(Round::Again);
            }
        };
        // Its pending submissions (accepted, not committed yet) go too, and copies kept
        // under failed/: the erase wins.
        self.delete_pending_of(workspace_id, call_id, mark + 1, &ERASED_COPIES).await?;
        // With the objects a rewrite wrote, or was about to write, and those it switched
        // away from (`rewrite`): nothing of the call is left in S3.
        let mut frames: Vec<&str> = items.iter().filter_map(|i| get_s(i, FRAME_KEY)).collect();
        for i in &items {
            frames.extend(super::rewrite::strings(i, super::rewrite::FRAMES_WRITTEN));
            frames.extend(super::rewrite::strings(i, super::rewrite::FRAMES_SUPERSEDED));
        }
        frames.sort_unstable();
        frames.dedup();
        super::bounded(frames.into_iter().map(|key| self.frames.erase(key))).await?;
        let rest = items.iter().filter(|i| get_s(i, "sk") != Some(HEAD));
        let deleted = super::bounded(rest.map(|i| self.delete(pk, i))).await?;
        progress.removed += deleted.iter().filter(|d| **d == Deleted::Yes).count();
        if deleted.contains(&Deleted::Held) {
            // A transaction held one of them: it is still there. The head stays until
            // nothing else of the call is (a revision left behind would keep the erased
            // content, and block the revisions of a call stored over the tombstone).
            tokio::time::sleep(backoff(round)).await;
            return Ok(Round::Again);
        }
        Ok(Round::Bury(head.clone(), mark))
    }

    /// Deletes `item` (a revision or a chunk, as the partition's query read it), only while
    /// it is what was read: a revision written by the same submission (a call stored again
    /// after an erase reuses the revisions' keys, never their tokens). Chunks are named by
    /// their submission's token, so a chunk's key is never another call's. Answers whether
    /// it deleted, found it changed (gone, or another submission's), or met a transaction.
    async fn delete(&self, pk: &str, item: &Item) -> Result<Deleted, StoreError> {
        let sk = get_s(item, "sk").ok_or_else(|| StoreError::Internal("an item without a sort key".into()))?;
        let mut request = self.client.delete_item().table_name(&self.table).key("pk", s(pk)).key("sk", s(sk));
        if let (true, Some(token)) = (sk.starts_with("REV#"), get_s(item, "submission")) {
            request = request
                .condition_expression("#submission = :submission")
                .expression_attribute_names("#submission", "submission")
                .expression_attribute_values(":submission", s(token));
        }
        match request.send().await {
            Ok(_) => Ok(Deleted::Yes),
            Err(SdkError::ServiceError(se)) => match se.into_err() {
                DeleteItemError::ConditionalCheckFailedException(_) => Ok(Deleted::Changed),
                DeleteItemError::TransactionConflictException(_) => Ok(Deleted::Held),
                other => Err(StoreError::from_service(&other)),
            },
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }

    /// Marks `head` (call `id`, as read) as being erased by an erase whose boundary is
    /// `upto`, only while it is still that revision of that call and no erase marked it with
    /// a later one. Answers whether it is marked (false: it changed meanwhile).
    async fn mark_erasing(&self, pk: &str, head: &Item, id: u64, upto: u64) -> Result<bool, StoreError> {
        let revision = get_u64(head, "revision").unwrap_or(1);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(HEAD))
            .update_expression("SET #erasing = :upto")
            .condition_expression(
                "#id = :id AND #revision = :revision AND (attribute_not_exists(#erasing) OR #erasing < :upto)",
            )
            .expression_attribute_names("#erasing", ERASING)
            .expression_attribute_names("#id", "id")
            .expression_attribute_names("#revision", "revision")
            .expression_attribute_values(":upto", n(upto))
            .expression_attribute_values(":id", n(id))
            .expression_attribute_values(":revision", n(revision))
            .send()
            .await;
        super::error::updated(result)
    }

    /// Replaces `head` (call `id`, as read) by a tombstone that names `id` with the ids
    /// erased before, only while the head is still that revision of that call. Answers
    /// whether the head is now buried: true also when the tombstone is there already (the
    /// reply to this request's own write was lost and the SDK's retry found it).
    ///
    /// `erased_at` is `mark`, the latest boundary of the erases under way (or the head's own,
    /// if later): a pending copy received up to then is dropped when committed, as the
    /// erases deleted those they found; one received since is a later submission and is
    /// committed over the tombstone. Only while the mark is still `mark`: an erase that
    /// raised it meanwhile moves the boundary, and this one reads the call again.
    async fn bury(&self, pk: &str, head: &Item, id: u64, mark: u64) -> Result<bool, StoreError> {
        let revision = get_u64(head, "revision").unwrap_or(1);
        let mut erased: Vec<u64> = match head.get(ERASED_IDS) {
            Some(AttributeValue::Ns(ids)) => ids.iter().filter_map(|i| i.parse().ok()).collect(),
            _ => Vec::new(),
        };
        erased.push(id);
        // Late copies live seconds, not years: the newest ids (ids grow) are enough, and the
        // set never grows towards the item's size limit however often a call is erased.
        erased.sort_unstable_by(|a, b| b.cmp(a));
        erased.dedup();
        erased.truncate(MAX_ERASED_IDS);
        let erased = erased.iter().map(u64::to_string).collect();
        let expires = super::now_ms() / 1000 + TOMBSTONE_TTL.as_secs();
        // The pending copies noted as committed into the call stay so on the tombstone (their
        // frames are erased: `Store::keep_unchanged`), as the head read had them: a note
        // since fails the condition, and the erase reads the head again.
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(pk))
            .item("sk", s(HEAD))
            .item(ERASED_IDS, AttributeValue::Ns(erased))
            .item(ERASED_AT, n(mark.max(super::item::erased_at(head))))
            // Its own token: a create over it is conditioned on it being this tombstone.
            .item("submission", s(super::random_hex(8)?))
            .item(tables::TTL_ATTRIBUTE, n(expires))
            .expression_attribute_names("#committed", COMMITTED)
            .expression_attribute_names("#id", "id")
            .expression_attribute_names("#revision", "revision")
            .expression_attribute_names("#erasing", ERASING)
            .expression_attribute_values(":id", n(id))
            .expression_attribute_values(":revision", n(revision))
            .expression_attribute_values(":mark", n(mark))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let condition = "#id = :id AND #revision = :revision AND #erasing = :mark";
        let request = match head.get(COMMITTED) {
            Some(tokens) => {
                let request = request
                    .expression_attribute_values(":committed", tokens.clone())
                    .condition_expression(format!("{condition} AND #committed = :committed"));
                // Copies' tokens only: a provider's earlier stage kept below (a late mark)
                // belongs to the erased call, and a send of it after the erase is new.
                match super::submission::copy_tokens(head) {
                    copies if copies.is_empty() => request,
                    copies => request.item(COMMITTED, AttributeValue::Ss(copies)),
                }
            }
            None => request.condition_expression(format!("{condition} AND attribute_not_exists(#committed)")),
        };
        let result = request.send().await;
        match result {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(se)) => match se.into_err() {
                PutItemError::ConditionalCheckFailedException(c) => Ok(c.item.is_none_or(|now| names_erased(&now, id))),
                PutItemError::TransactionConflictException(_) => Ok(false),
                other => Err(StoreError::from_service(&other)),
            },
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }
}

/// `work`, given up (`Unavailable`) at `until` when there is one: an erase's work before
/// the call is buried.
pub(crate) async fn before<T>(
    until: Option<tokio::time::Instant>,
    work: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    match until {
        Some(until) => tokio::time::timeout_at(until, work)
            .await
            .unwrap_or_else(|_| Err(StoreError::Unavailable("not finished in the time it was given".into()))),
        None => work.await,
    }
}
