//! Internal call ids, handed out from blocks (hi/lo): one atomic counter update reserves
//! a block, and ids come from memory until it is used up, so the counter is no hot key.
//! An id that was certainly not written (its conditional create found the call already
//! there) is given back and handed out again, so replays consume no ids.

use aws_sdk_dynamodb::types::ReturnValue;
use aws_sdk_dynamodb::Client;
use tokio::sync::Mutex;

use super::item::{get_u64, n, s};
use super::StoreError;
use call_ingest_core::api::number::MAX_SAFE_INTEGER;

/// The counter item.
const COUNTER_PK: &str = "COUNTER";
const COUNTER_SK: &str = "CALL_ID";
const COUNTER_ATTRIBUTE: &str = "next_id";

/// A per-instance source of unique ids.
#[derive(Debug)]
pub struct IdBlocks {
    block_size: u64,
    /// The next id to give, the last id of the block, and ids given back.
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    next: u64,
    last: u64,
    returned: Vec<u64>,
}

impl IdBlocks {
    pub fn new(block_size: u64) -> Self {
        IdBlocks { block_size: block_size.max(1), state: Mutex::new(State { next: 1, last: 0, returned: Vec::new() }) }
    }

    /// The next id: positive, below 2^53, never given out twice by any instance. Costs a
    /// counter update once a block.
    pub async fn next(&self, client: &Client, table: &str) -> Result<u64, StoreError> {
        let mut state = self.state.lock().await;
        if let Some(id) = state.returned.pop() {
            return Ok(id);
        }
        if state.next > state.last {
            let last = self.reserve(client, table).await?;
            (state.next, state.last) = (last - self.block_size + 1, last);
        }
        let id = state.next;
        state.next += 1;
        Ok(id)
    }

    /// Takes back an id that was certainly not written anywhere: the next caller gets it.
    pub async fn give_back(&self, id: u64) {
        self.state.lock().await.returned.push(id);
    }

    /// Whether the next id needs no round trip.
    pub async fn has_block(&self) -> bool {
        let state = self.state.lock().await;
        !state.returned.is_empty() || state.next <= state.last
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
