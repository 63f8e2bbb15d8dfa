//! A new revision: the submission becomes the head, the old head is kept as `REV#<n>`, in
//! one transaction conditioned on the head being the one read: its id, revision number
//! and submission (optimistic concurrency). Or, for a pending submission older than the
//! head, the submission is kept as `REV#<n>` below the head, which stays current.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use super::error::Transaction;
use super::item::{get_s, item_size, n, put_new, revision_sk, s, Item, BELOW, ERASED_AT, ERASED_IDS};
use super::submission::{id_and_revision, Submission};
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
        for carried in ["listed_ms", ERASED_IDS, ERASED_AT, BELOW] {
            if let Some(value) = old.get(carried) {
                head.insert(carried.into(), value.clone());
            }
        }
        let mut kept = old.clone();
        kept.insert("sk".into(), s(revision_sk(revision)));
        // Only heads are indexed (found by id, listed), and only they guard erased ids.
        for key in super::item::HEAD_ONLY.iter().chain([&ERASED_IDS, &ERASED_AT, &super::item::ERASING]) {
            kept.remove(*key);
        }
        let put = self.replacing(head, old, id, revision)?;
        let bytes = sub.bytes + item_size(&kept);
        let items = vec![put_new(&self.table, kept)?, TransactWriteItem::builder().put(put).build()];
        Ok(match self.transact(items).await? {
            Transaction::Committed => Some(Stored {
                id,
                outcome: Outcome::Revised,
                revision: revision + 1,
                bytes_written: bytes,
                requests: 0,
            }),
            Transaction::ConditionFailed | Transaction::Conflict => None,
        })
    }

    /// Keeps the submission as `REV#<n>` below the head `old` (revision n), which becomes
    /// revision n + 1 with its content unchanged: a pending submission committed after a
    /// newer one of its call was stored. The head records the submission's token
    /// ([`BELOW`]), so committing it again changes nothing. `Ok(None)`: the head changed
    /// first; read it again.
    pub(super) async fn insert_below(&self, sub: &Submission, old: &Item) -> Result<Option<Stored>, StoreError> {
        let (id, revision) = id_and_revision(old)?;
        let created_at = old.get("created_at").cloned().unwrap_or_else(|| n(now_ms()));
        let mut below = sub.head(id, revision, &created_at);
        below.insert("sk".into(), s(revision_sk(revision)));
        for key in super::item::HEAD_ONLY {
            below.remove(*key);
        }
        let mut head = old.clone();
        head.insert("revision".into(), n(revision + 1));
        let mut tokens = match old.get(BELOW) {
            Some(aws_sdk_dynamodb::types::AttributeValue::Ss(tokens)) => tokens.clone(),
            _ => Vec::new(),
        };
        tokens.push(sub.token.clone());
        head.insert(BELOW.into(), aws_sdk_dynamodb::types::AttributeValue::Ss(tokens));
        let bytes = sub.bytes + item_size(&head);
        let put = self.replacing(head, old, id, revision)?;
        let items = vec![put_new(&self.table, below)?, TransactWriteItem::builder().put(put).build()];
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
        let put = match get_s(old, "submission") {
            Some(token) => put
                .condition_expression("#revision = :seen AND #id = :id AND #submission = :token")
                .expression_attribute_values(":token", s(token)),
            None => put.condition_expression("#revision = :seen AND #id = :id AND attribute_not_exists(#submission)"),
        };
        Ok(put.build()?)
    }
}
