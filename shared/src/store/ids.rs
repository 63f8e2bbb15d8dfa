//! Internal call ids, handed out from blocks (hi/lo): one atomic counter update reserves
//! a block, and ids come from memory until it is used up, so the counter is no hot key.

use aws_sdk_dynamodb::types::ReturnValue;
use aws_sdk_dynamodb::Client;
use tokio::sync::Mutex;

use super::item::{get_u64, n, s};
use super::StoreError;
use crate::api::number::MAX_SAFE_INTEGER;

/// The counter item.
const COUNTER_PK: &str = "COUNTER";
const COUNTER_SK: &str = "CALL_ID";
const COUNTER_ATTRIBUTE: &str = "next_id";

/// A per-instance source of unique ids.
#[derive(Debug)]
pub struct IdBlocks {
    block_size: u64,
    /// The next id to give and the last id of the block.
    range: Mutex<(u64, u64)>,
}

impl IdBlocks {
    pub fn new(block_size: u64) -> Self {
        IdBlocks { block_size: block_size.max(1), range: Mutex::new((1, 0)) }
    }

    /// The next id: positive, below 2^53, never given out twice by any instance. Costs a
    /// counter update once a block.
    pub async fn next(&self, client: &Client, table: &str) -> Result<u64, StoreError> {
        let mut range = self.range.lock().await;
        if range.0 > range.1 {
            let last = self.reserve(client, table).await?;
            *range = (last - self.block_size + 1, last);
        }
        let id = range.0;
        range.0 += 1;
        Ok(id)
    }

    /// Whether the next id needs no round trip.
    pub async fn has_block(&self) -> bool {
        let range = self.range.lock().await;
        range.0 <= range.1
    }

    async fn reserve(&self, client: &Client, table: &str) -> Result<u64, StoreError> {
        let out = client
            .update_item()
            .table_name(table)
            .key("pk", s(COUNTER_PK))
            .key("sk", s(COUNTER_SK))
            .update_expression("ADD #next :block")
            .expression_attribute_names("#next", COUNTER_ATTRIBUTE)
            .expression_attribute_values(":block", n(self.block_size))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        let last = out
            .attributes()
            .and_then(|a| get_u64(a, COUNTER_ATTRIBUTE))
            .ok_or_else(|| StoreError::Internal("id counter answered no value".into()))?;
        if last > MAX_SAFE_INTEGER as u64 {
            return Err(StoreError::Internal("internal ids are exhausted (2^53)".into()));
        }
        Ok(last)
    }
}
