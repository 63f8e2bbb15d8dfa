//! Erasing a call: its head, every revision and every chunk, so that nothing of it remains
//! (a stream consumer sees each removal).
//!
//! The head goes last, on the condition that it is still the one whose partition was read:
//! a call stays findable (by id, in listings) until nothing else of it is left, so an erase
//! that died half-way is finished by the next one; and a revision that arrived meanwhile
//! fails the condition, and the erase reads the partition again and erases that too.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;

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
            let items = self.query(&pk, SortKeys::All, Some(&["pk", "sk", "id", "revision"])).await?;
            let Some(head) = items.iter().find(|i| get_s(i, "sk") == Some(HEAD)) else {
                // Unconfirmed chunks of a submission in flight may be there: they are not
                // this call's, and expire within a day unless their head is written.
                return Ok(Erased { items: removed });
            };
            if get_u64(head, "id") != Some(id) {
                return Ok(Erased { items: removed });
            }
            let rest: Vec<&Item> = items.iter().filter(|i| get_s(i, "sk") != Some(HEAD)).collect();
            futures_util::future::try_join_all(rest.iter().map(|i| self.delete(&pk, get_s(i, "sk"), None))).await?;
            removed += rest.len();
            let revision = get_u64(head, "revision").unwrap_or(1);
            if self.delete(&pk, Some(HEAD), Some((id, revision))).await? {
                return Ok(Erased { items: removed + 1 });
            }
            tokio::time::sleep(backoff(round)).await;
        }
        Err(StoreError::Unavailable("the call kept changing while it was being erased".into()))
    }

    /// Deletes one item; with `head` (id, revision), only while the head is that one.
    /// Answers whether it deleted (false: the head changed, or another transaction held it).
    async fn delete(&self, pk: &str, sk: Option<&str>, head: Option<(u64, u64)>) -> Result<bool, StoreError> {
        let sk = sk.ok_or_else(|| StoreError::Internal("an item without a sort key".into()))?;
        let mut request = self.client.delete_item().table_name(&self.table).key("pk", s(pk)).key("sk", s(sk));
        if let Some((id, revision)) = head {
            request = request
                .condition_expression("id = :id AND revision = :revision")
                .expression_attribute_values(":id", n(id))
                .expression_attribute_values(":revision", n(revision));
        }
        match request.send().await {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(se)) => match se.into_err() {
                DeleteItemError::ConditionalCheckFailedException(_)
                | DeleteItemError::TransactionConflictException(_) => Ok(false),
                other => Err(StoreError::from_service(&other)),
            },
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }
}
