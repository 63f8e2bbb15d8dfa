//! Creating a call: one conditional put of its head (with the confirmation of its chunks in
//! one transaction when it has chunks).

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;

use super::error::Transaction;
use super::item::{put_new, Item};
use super::submission::Submission;
use super::{Store, StoreError};

/// How an attempt at creating a call ended.
pub(super) enum Creation {
    Created,
    /// The call exists: its head as DynamoDB returned it, or `None` when it did not (a
    /// transaction does not return it).
    Exists(Option<Item>),
    /// Another transaction held the head: nothing was written; try again shortly.
    Conflict,
}

impl Store {
    /// Tries to create the call with internal id `id`.
    pub(super) async fn create(&self, sub: &Submission, id: u64) -> Result<Creation, StoreError> {
        let head = sub.head(id, 1, &sub.made_at());
        if !sub.is_chunked() {
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
                Ok(_) => Ok(Creation::Created),
                Err(SdkError::ServiceError(se)) => match se.into_err() {
                    PutItemError::ConditionalCheckFailedException(c) => Ok(Creation::Exists(c.item)),
                    PutItemError::TransactionConflictException(_) => Ok(Creation::Conflict),
                    other => Err(StoreError::from_service(&other)),
                },
                Err(e) => Err(StoreError::from_sdk(e)),
            };
        }
        let mut items = vec![put_new(&self.table, head)?];
        items.extend(self.confirm_chunks(sub)?);
        Ok(match self.transact(items, 1).await? {
            Transaction::Committed => Creation::Created,
            Transaction::ConditionFailed => Creation::Exists(None),
            Transaction::Conflict => Creation::Conflict,
        })
    }
}
