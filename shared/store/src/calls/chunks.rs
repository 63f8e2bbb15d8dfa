//! Chunks: slices of a compressed frame too large for one item. Written first, with a TTL,
//! then confirmed (TTL removed) in the transaction that makes their head current, so a
//! head never points at chunks that can expire.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::item::{s, Item};
use super::submission::Submission;
use super::{tables, Store, StoreError};

impl Store {
    /// Writes chunk items, all at once, each with a TTL (so a submission that never
    /// becomes current leaves nothing behind for long). Each put is conditioned on the
    /// chunk not existing: its key is this submission's own, so a chunk that exists was
    /// written by an earlier attempt whose reply was lost, and a late copy of an attempt
    /// can never write it again (bringing its TTL back after the head confirmed it).
    /// Answers the number of requests.
    pub(super) async fn write_chunks(&self, chunks: Vec<Item>) -> Result<u32, StoreError> {
        let count = chunks.len() as u32;
        futures_util::future::try_join_all(chunks.into_iter().map(|chunk| self.put_chunk(chunk))).await?;
        Ok(count)
    }

    async fn put_chunk(&self, chunk: Item) -> Result<(), StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(chunk))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => Ok(()),
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }

    /// Transaction items that remove the TTL from the submission's chunks: they commit
    /// with the head.
    pub(super) fn confirm_chunks(&self, sub: &Submission) -> Result<Vec<TransactWriteItem>, StoreError> {
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
}
