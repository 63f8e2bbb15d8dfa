//! Chunks: slices of a compressed frame too large for one item. Written first, with a TTL,
//! then confirmed (TTL removed) in the transaction that makes their head current, so a
//! head never points at chunks that can expire.

use aws_sdk_dynamodb::types::{PutRequest, TransactWriteItem, Update, WriteRequest};

use super::item::{s, Item};
use super::submission::Submission;
use super::{backoff, tables, Store, StoreError, MAX_ATTEMPTS};

impl Store {
    /// Writes chunk items (with a TTL, so a submission that never becomes current leaves
    /// nothing behind for long). Answers the number of requests.
    pub(super) async fn write_chunks(&self, chunks: Vec<Item>) -> Result<u32, StoreError> {
        let mut requests = 0;
        let mut chunks = chunks.into_iter().peekable();
        while chunks.peek().is_some() {
            // 25 items a batch, and well under 16 MB: our chunks are 350 KB, so 16 a batch.
            let mut pending: Vec<WriteRequest> = chunks
                .by_ref()
                .take(16)
                .map(|c| {
                    Ok(WriteRequest::builder().put_request(PutRequest::builder().set_item(Some(c)).build()?).build())
                })
                .collect::<Result<_, StoreError>>()?;
            for attempt in 0..MAX_ATTEMPTS {
                if pending.is_empty() {
                    break;
                }
                if attempt > 0 {
                    tokio::time::sleep(backoff(attempt)).await;
                }
                requests += 1;
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, std::mem::take(&mut pending))
                    .send()
                    .await
                    .map_err(StoreError::from_sdk)?;
                pending = out.unprocessed_items.and_then(|mut u| u.remove(&self.table)).unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(StoreError::Unavailable("chunks stayed unprocessed".into()));
            }
        }
        Ok(requests)
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
