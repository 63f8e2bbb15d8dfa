//! A new revision: the submission becomes the head, the old head is kept as `REV#<n>`, in
//! one transaction conditioned on the head being the one read: its id, revision number
//! and submission (optimistic concurrency). Or, for a pending submission older than the
//! head, the submission is kept as a revision and the head's content stays current
//! ([`Store::insert_late`]). Revision numbers never change once given.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use super::error::Transaction;
use super::item::{
    get_s, item_size, n, put_new, revision_sk, s, Item, COMMITTED, CURRENT_FROM, ERASED_AT, ERASED_IDS, SEEN_AT,
};
use super::submission::{add_committed, id_and_revision, storage_of, tokens, Submission, STORAGE};
use super::{now_ms, Outcome, Store, StoreError, Stored};

impl Store {
    /// Makes the submission the head after `old`, keeping `old` as a revision. `Ok(None)`:
    /// someone else changed the head first, or another transaction held it; read it again.
    pub(super) async fn revise(&self, sub: &Submission, old: &Item) -> Result<Option<Stored>, StoreError> {
        let (id, revision) = id_and_revision(old)?;
        let created_at = old.get("created_at").cloned().unwrap_or_else(|| n(now_ms()));
        let mut head = sub.head(id, revision + 1, &created_at);
        // A call keeps its place in the listings (its first start, else when it was first
        // received): one that moved while a client pages through would be listed twice,
        // or skipped.
        for carried in ["listed_ms", ERASED_IDS, ERASED_AT] {
            if let Some(value) = old.get(carried) {
                head.insert(carried.into(), value.clone());
            }
        }
        add_committed(&mut head, tokens(old));
        // Receipt times do not rise with revisions: a direct write received before the
        // head's content (it committed later) replaces it. The new head counts as current
        // from the latest receipt it replaced, so a pending copy received in between is
        // still kept below it, never over the later send (the history checker, seed 1 of
        // `make test`), and judged against what was current then.
        // Not when it replaces the head by its stage (a provider's later event over an
        // earlier one received after it): it is current for its stage, not from that
        // receipt, and a report of its own stage received after it still goes over it (the
        // history checker, seed 95).
        if let Some(at) = super::order_time(old).filter(|at| *at > sub.received_ms && !sub.outranks(old)) {
            head.insert(CURRENT_FROM.into(), n(at));
        }
        if sub.outranks(old) {
            // A later stage of the provider's events replaces an earlier one: a replay of
            // the earlier one, from now on outranked, finds its content kept.
            add_committed(&mut head, get_s(old, "digest").map(Submission::late_mark_of));
        }
        let kept = as_revision(old.clone(), revision);
        let put = self.replacing(head, old, id, revision)?;
        let bytes = sub.bytes + item_size(&kept);
        let mut items = vec![put_new(&self.table, kept)?, TransactWriteItem::builder().put(put).build()];
        items.extend(self.raw_due_note(sub, old, id)?);
        self.write_revision(items, id, revision + 1, bytes).await
    }

    /// When `old` (the head a revision goes over) had its raw bodies removed (past its
    /// workspace's `raw_retention_days`), a note that the call holds a raw body again, for
    /// the raw sweep (`calls::rewrite`), written with the revision: the sweep's passes go by
    /// when calls were listed and would not come back to this one.
    fn raw_due_note(&self, sub: &Submission, old: &Item, id: u64) -> Result<Option<TransactWriteItem>, StoreError> {
        if !old.contains_key(super::rewrite::RAW_REMOVED_AT) {
            return Ok(None);
        }
        let Some((workspace_id, call_id)) = super::item::parse_call_pk(&sub.pk) else { return Ok(None) };
        let put = Put::builder()
            .table_name(&self.table)
            .item("pk", s(super::rewrite::raw_due_pk(workspace_id)))
            .item("sk", s(call_id))
            .item("id", n(id))
            .item("submission", s(&sub.token))
            .build()?;
        Ok(Some(TransactWriteItem::builder().put(put).build()))
    }

    /// Keeps a pending submission received before the head `old` (revision n) as a
    /// revision, and the head's content current: `REV#<n>` is the old head as it was,
    /// `REV#<n+1>` this submission, and the head, revision n + 2, the old head's content
    /// again (the same frame; its own token and received time). So no revision number
    /// changes meaning, the history shows the order things were committed in, and the last
    /// submission received is current. `Ok(None)`: the head changed first; read it again.
    pub(super) async fn insert_late(&self, sub: &Submission, old: &Item) -> Result<Option<Stored>, StoreError> {
        let (id, revision) = id_and_revision(old)?;
        let created_at = old.get("created_at").cloned().unwrap_or_else(|| n(now_ms()));
        let late = as_revision(sub.head(id, revision + 1, &created_at), revision + 1);
        let kept = as_revision(old.clone(), revision);
        let mut head = old.clone();
        head.insert("revision".into(), n(revision + 2));
        // The head records the strictest data policy its call has had: a stricter submission
        // kept below it binds the later revisions too (`Submission::bound_by`).
        if storage_of(&late) > storage_of(old) {
            if let Some(storage) = late.get(STORAGE) {
                head.insert(STORAGE.into(), storage.clone());
            }
        }
        // A provider's earlier event kept below: its replays (other tokens, the same
        // content) change nothing. Anything else is found by its own token on `REV#<n+1>`.
        if sub.has_stage() {
            add_committed(&mut head, [sub.late_mark()]);
        }
        let bytes = item_size(&late) + item_size(&kept) + item_size(&head);
        let put = self.replacing(head, old, id, revision)?;
        let mut items = vec![
            put_new(&self.table, kept)?,
            put_new(&self.table, late)?,
            TransactWriteItem::builder().put(put).build(),
        ];
        items.extend(self.raw_due_note(sub, old, id)?);
        self.write_revision(items, id, revision + 1, bytes).await
    }

    /// Notes on the head `old` (as read) that its content was received again at `received`
    /// (a replay): a pending submission received before the replay, committed after it, is
    /// then kept below the head instead of over it. `false`: the head changed first (or
    /// another transaction held it); read it again.
    pub(super) async fn note_replay(&self, pk: &str, old: &Item, received: u64) -> Result<bool, StoreError> {
        let update = self
            .head_update(pk)
            .update_expression("SET #seen = :received")
            .expression_attribute_names("#seen", SEEN_AT)
            .expression_attribute_values(":received", n(received));
        let update = as_read(update, old, " AND (attribute_not_exists(#seen) OR #seen < :received)")?;
        super::error::updated(update.send().await)
    }

    /// Notes on the head `old` (as read) that the pending submission `token` is committed
    /// into it (it changed nothing: `Store::keep_unchanged`), only while the head is still
    /// that revision, written by the same submission, and not being erased. `false`: it
    /// changed first (or another transaction held it).
    pub(super) async fn note_committed(&self, pk: &str, old: &Item, token: &str) -> Result<bool, StoreError> {
        let update = as_read(self.adding_committed(pk, token), old, "")?;
        super::error::updated(update.send().await)
    }

    /// Notes on `item` (a head or an erase's tombstone, as read) that the pending copy
    /// `token` was dropped by an erase (`Store::after_erase`); `false` when `item` changed.
    pub(super) async fn note_dropped(&self, pk: &str, item: &Item, token: &str) -> Result<bool, StoreError> {
        if !super::item::is_tombstone(item) {
            return self.note_committed(pk, item, token).await;
        }
        let update = self
            .adding_committed(pk, token)
            .expression_attribute_values(":tombstone", s(get_s(item, "submission").unwrap_or_default()))
            .condition_expression("attribute_not_exists(#id) AND #submission = :tombstone");
        super::error::updated(update.send().await)
    }

    /// An update of the head's key that adds `token` to its committed tokens.
    fn adding_committed(&self, pk: &str, token: &str) -> UpdateItemFluentBuilder {
        self.head_update(pk)
            .update_expression("ADD #committed :token")
            .expression_attribute_names("#committed", COMMITTED)
            .expression_attribute_values(":token", aws_sdk_dynamodb::types::AttributeValue::Ss(vec![token.to_owned()]))
    }

    /// An update of the head's key, with the names `#id` and `#submission` its conditions use.
    fn head_update(&self, pk: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(super::item::HEAD))
            .expression_attribute_names("#id", "id")
            .expression_attribute_names("#submission", "submission")
    }

    /// Runs the transaction that writes `revision` of call `id`; `Ok(None)` when the head
    /// changed first (or another transaction held it).
    async fn write_revision(
        &self,
        items: Vec<TransactWriteItem>,
        id: u64,
        revision: u64,
        bytes: usize,
    ) -> Result<Option<Stored>, StoreError> {
        Ok(match self.transact(items).await? {
            Transaction::Committed => {
                Some(Stored { id, outcome: Outcome::Revised, revision, bytes_written: bytes, requests: 0 })
            }
            Transaction::ConditionFailed | Transaction::Conflict => None,
        })
    }

    /// A put of `head` over `old`, on condition that the head is still `old`: the same
    /// revision of the same call, written by the same submission. A revision number alone
    /// would match a call stored again after an erase, and this write would put the erased
    /// call back over it.
    fn replacing(&self, head: Item, old: &Item, id: u64, revision: u64) -> Result<Put, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(head))
            .expression_attribute_names("#revision", "revision")
            .expression_attribute_names("#id", "id")
            .expression_attribute_names("#submission", "submission")
            .expression_attribute_values(":seen", n(revision))
            .expression_attribute_values(":id", n(id));
        // Never over a head an erase has marked since it was read: the erase has begun
        // deleting, and a new head would drop the mark and make the erased content a
        // readable revision again.
        let put = put.expression_attribute_names("#erasing", super::item::ERASING);
        // Nor over a replay noted since it was read: the replay came later, and a pending
        // submission received before it would become current (or its note be dropped).
        let put = put.expression_attribute_names("#replayed", SEEN_AT);
        let (put, replayed) = match old.get(SEEN_AT) {
            Some(at) => (put.expression_attribute_values(":replayed", at.clone()), "#replayed = :replayed"),
            None => (put, "attribute_not_exists(#replayed)"),
        };
        // Nor over a pending copy's token noted since (`Store::keep_unchanged`): the new head
        // must carry it, or a commit of that copy to come would find it nowhere.
        let put = put.expression_attribute_names("#committed", COMMITTED);
        let (put, committed) = match old.get(COMMITTED) {
            Some(tokens) => (put.expression_attribute_values(":committed", tokens.clone()), "#committed = :committed"),
            None => (put, "attribute_not_exists(#committed)"),
        };
        // Nor over a head a rewrite switched to new content since (`rewrite`): the old head
        // is kept as a revision (and `insert_late` keeps its frame on the new head too), and
        // would name the object the rewrite erases.
        let put = put.expression_attribute_names("#rewrites", super::rewrite::REWRITES);
        let (put, rewritten) = match old.get(super::rewrite::REWRITES) {
            Some(r) => (put.expression_attribute_values(":rewrites", r.clone()), "#rewrites = :rewrites"),
            None => (put, "attribute_not_exists(#rewrites)"),
        };
        let put = match get_s(old, "submission") {
            Some(token) => put
                .condition_expression(format!(
                    "#revision = :seen AND #id = :id AND #submission = :token AND attribute_not_exists(#erasing) \
                     AND {replayed} AND {committed} AND {rewritten}"
                ))
                .expression_attribute_values(":token", s(token)),
            None => put.condition_expression(format!(
                "#revision = :seen AND #id = :id AND attribute_not_exists(#submission) \
                 AND attribute_not_exists(#erasing) AND {replayed} AND {committed} AND {rewritten}"
            )),
        };
        Ok(put.build()?)
    }
}
/// `update` conditioned on the head being `old` as read (its id, revision and the
/// submission that wrote it) and not being erased, and on `extra` (` AND …`).
fn as_read(update: UpdateItemFluentBuilder, old: &Item, extra: &str) -> Result<UpdateItemFluentBuilder, StoreError> {
    let (id, revision) = id_and_revision(old)?;
    let update = update
        .expression_attribute_names("#revision", "revision")
        .expression_attribute_names("#erasing", super::item::ERASING)
        .expression_attribute_values(":id", n(id))
        .expression_attribute_values(":revision", n(revision));
    let condition = format!("#id = :id AND #revision = :revision AND attribute_not_exists(#erasing){extra}");
    Ok(match get_s(old, "submission") {
        Some(written_by) => update
            .condition_expression(format!("{condition} AND #submission = :written_by"))
            .expression_attribute_values(":written_by", s(written_by)),
        None => update.condition_expression(format!("{condition} AND attribute_not_exists(#submission)")),
    })
}

/// A head item kept as revision `revision`: only heads are indexed (found by id, listed),
/// and only they guard erased ids and carry the committed tokens.
fn as_revision(mut item: Item, revision: u64) -> Item {
    item.insert("sk".into(), s(revision_sk(revision)));
    // `current_from` stays: `Store::identity_or_replay` needs it to tell what was current
    // when a pending copy was received.
    for key in super::item::HEAD_ONLY.iter().chain([&ERASED_IDS, &ERASED_AT, &super::item::ERASING, &SEEN_AT]) {
        item.remove(*key);
    }
    item
}
