//! Erasing a call: its head, every revision and every chunk, so that nothing of it remains
//! (a stream consumer sees each removal).
//!
//! The head goes last, on the condition that it is still the one whose partition was read:
//! a call stays findable (by id, in listings) until nothing else of it is left, so an erase
//! that died half-way is finished by the next one; and a revision that arrived meanwhile
//! fails the condition, and the erase reads the partition again and erases that too.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;

use super::item::{call_pk, get_s, get_u64, n, s, Item, HEAD};
use super::query::SortKeys;
use super::{backoff, Store, StoreError};

/// Rounds of read-then-delete before answering "try again" (each lost to a revision or a
/// transaction on the head).
const MAX_ROUNDS: usize = 10;

/// What an erase removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Erased {
    /// Items removed: the head, revisions and chunks. 0 when there was nothing to erase
    /// (never stored, erased before, or another call now has the provider call id).
    pub items: usize,
}

impl Store {
    /// Erases call `id`, stored under `call_id` in `workspace_id`. A call with that provider
    /// call id but another internal id (stored again after an erase) is left alone.
    pub async fn erase_call(&self, workspace_id: u64, call_id: &str, id: u64) -> Result<Erased, StoreError> {
        let pk = call_pk(workspace_id, call_id);
        let mut removed = 0;
        for round in 0..MAX_ROUNDS {
            let items = self.query(&pk, SortKeys::All, Some(&["pk", "sk", "id", "revision", "submission"])).await?;
            let Some(head) = items.iter().find(|i| get_s(i, "sk") == Some(HEAD)) else {
                // Unconfirmed chunks of a submission in flight may be there: they are not
                // this call's, and expire within a day unless their head is written.
                return Ok(Erased { items: removed });
            };
            if get_u64(head, "id") != Some(id) {
                return Ok(Erased { items: removed });
            }
            let rest = items.iter().filter(|i| get_s(i, "sk") != Some(HEAD));
            let deleted = futures_util::future::try_join_all(rest.map(|i| self.delete(&pk, i, Only::Rest))).await?;
            removed += deleted.into_iter().filter(|d| *d).count();
            let revision = get_u64(head, "revision").unwrap_or(1);
            if self.delete(&pk, head, Only::Head { id, revision }).await? {
                return Ok(Erased { items: removed + 1 });
            }
            tokio::time::sleep(backoff(round)).await;
        }
        Err(StoreError::Unavailable("the call kept changing while it was being erased".into()))
    }

    /// Deletes `item` (as the partition's query read it), only while it is what was read:
    /// a head with that id and revision; a revision written by the same submission (a
    /// call stored again after an erase reuses the revisions' keys, never their tokens).
    /// Chunks are named by their submission's token, so a chunk's key is never another
    /// call's. Answers whether it deleted (false: the item changed, or another
    /// transaction held it). A head already gone counts as deleted: the reply to this
    /// request's own delete may have been lost and the SDK's retry found nothing.
    async fn delete(&self, pk: &str, item: &Item, only: Only) -> Result<bool, StoreError> {
        let sk = get_s(item, "sk").ok_or_else(|| StoreError::Internal("an item without a sort key".into()))?;
        let mut request = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        match only {
            Only::Head { id, revision } => {
                request = request
                    .condition_expression("#id = :id AND #revision = :revision")
                    .expression_attribute_names("#id", "id")
                    .expression_attribute_names("#revision", "revision")
                    .expression_attribute_values(":id", n(id))
                    .expression_attribute_values(":revision", n(revision));
            }
            Only::Rest => {
                if let (true, Some(token)) = (sk.starts_with("REV#"), get_s(item, "submission")) {
                    request = request
                        .condition_expression("#submission = :submission")
                        .expression_attribute_names("#submission", "submission")
                        .expression_attribute_values(":submission", s(token));
                }
            }
        }
        match request.send().await {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(se)) => match se.into_err() {
                DeleteItemError::ConditionalCheckFailedException(c) => Ok(c.item.is_none() && only != Only::Rest),
                DeleteItemError::TransactionConflictException(_) => Ok(false),
                other => Err(StoreError::from_service(&other)),
            },
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }
}

/// What an erase's delete insists on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Only {
    /// The head the erase read.
    Head { id: u64, revision: u64 },
    /// A revision of the same submission; a chunk as it is.
    Rest,
}
