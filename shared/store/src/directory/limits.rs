//! Per-workspace fairness: at most a workspace's limit of requests in each second of the
//! wall clock, across every instance of every function.
//!
//! One counter item per workspace and second in the Directory table
//! (`RATE#{workspace}#{second}`), raised by one UpdateItem per request (1 WCU: the item
//! is a few dozen bytes) that answers the new count; the first `limit` of a second are
//! admitted. Counter items are removed by TTL. Once an instance has seen a second full, it
//! answers the rest of that second from memory, so a flood costs at most one write per
//! instance and second beyond the limit. A fixed window: a client can get up to twice its limit across the edge of
//! two seconds, never more in any second.
//!
//! The limiter fails open: when the counter cannot be written (throttled, unreachable) the
//! request goes on. It protects the other tenants' share; refusing good calls because the
//! counter is unavailable would protect nobody.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use std::future::Future;

use aws_sdk_dynamodb::types::ReturnValue;
use aws_sdk_dynamodb::Client;

use crate::calls::item::{get_u64, n, s};
use crate::calls::StoreError;

/// The largest limit a workspace can be given: what one counter item (one partition) takes
/// in a second, 1,000 writes.
pub const MAX_LIMIT: u32 = 1000;
/// How long counter items are kept before TTL removes them.
const KEEP_SECS: u64 = 120;
/// More workspaces than this remembered as full and the memory starts over.
const MAX_REMEMBERED: usize = 10_000;

/// The answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Over the limit: retry after this many seconds (the start of the next second).
    Limited {
        retry_after_secs: u32,
    },
}

/// Counts requests per workspace and second; one per instance.
#[derive(Debug)]
pub struct Limiter {
    client: Client,
    table: String,
    /// The second each workspace was last seen full in.
    full: Mutex<HashMap<u64, u64>>,
    now: fn() -> SystemTime,
}

impl Limiter {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Limiter::with_clock(client, table, SystemTime::now)
    }

    /// A limiter reading the time from `now` (tests hold it still).
    pub fn with_clock(client: Client, table: impl Into<String>, now: fn() -> SystemTime) -> Self {
        Limiter { client, table: table.into(), full: Mutex::new(HashMap::new()), now }
    }

    /// Counts one request of `workspace_id` and admits it if it is among the first
    /// `limit` of its second. `limit` is awaited alongside the count's write, so reading
    /// it costs no round trip of its own.
    pub async fn count(&self, workspace_id: u64, limit: impl Future<Output = u32>) -> Admission {
        let second = (self.now)().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let limited = Admission::Limited { retry_after_secs: 1 };
        if self.full.lock().unwrap_or_else(|p| p.into_inner()).get(&workspace_id) == Some(&second) {
            return limited;
        }
        let count = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(format!("RATE#{workspace_id}#{second}")))
            .key("sk", s("RATE"))
            .update_expression("ADD n :one SET expires_at = :expires")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":expires", n(second + KEEP_SECS))
            .return_values(ReturnValue::UpdatedNew)
            .send();
        let (counted, limit) = tokio::join!(count, limit);
        match counted.map(|out| out.attributes.as_ref().and_then(|a| get_u64(a, "n"))) {
            Ok(Some(count)) if count <= u64::from(limit) => Admission::Admitted,
            Ok(Some(_)) => {
                let mut full = self.full.lock().unwrap_or_else(|p| p.into_inner());
                if full.len() >= MAX_REMEMBERED {
                    full.clear();
                }
                full.insert(workspace_id, second);
                limited
            }
            Ok(None) => {
                tracing::warn!(workspace_id, "rate counter answered no count; request admitted");
                Admission::Admitted
            }
            Err(e) => {
                let e = StoreError::from_sdk(e);
                tracing::warn!(error = %e, workspace_id, "rate counter unavailable; request admitted");
                Admission::Admitted
            }
        }
    }
}
