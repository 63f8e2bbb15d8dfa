//! Per-workspace fairness: a workspace's budget of sends, and apart from it of reads, in
//! each second of the wall clock, across every instance of every function.
//!
//! One counter item per workspace, budget and second in the Directory table
//! (`RATE#{workspace}#{second}` for sends, `READS#{workspace}#{second}` for reads), raised by
//! an UpdateItem (1 WCU: the item is a few dozen bytes) that answers the new count. Counter
//! items are removed by TTL. A fixed window: a client can get up to twice its budget across
//! the edge of two seconds, never more in any second.
//!
//! **No counter write on most requests.** Each instance takes the first [`FREE_PER_SECOND`]
//! request of a workspace in a second without writing, and reports it with its next write
//! in that second, if any. A workspace sending a call now and then (nearly every workspace,
//! nearly always) therefore costs no write here. The price: a workspace can get up to one
//! extra request a second per instance serving it before the count catches up.
//!
//! **Over the budget is not refused for sends.** The answer says how far over: a send a
//! little over is made durable and committed later (202), since the clients people run post
//! once and drop any failure; only a flood past [`FLOOD_FACTOR`] times the budget is
//! refused (429). A read over its budget is refused (429): its client is a person or a
//! program that can ask again. Once an instance has seen a second flooded (or a read
//! budget spent) it answers the rest of that second from memory, so a flood costs at most
//! one write per instance and second beyond the threshold.
//!
//! When the counter cannot be written (throttled, unreachable) a read goes on (refusing it
//! would protect nobody) and a send is paced: made durable in S3 and committed later at the
//! workspace's rate, so neither a DynamoDB outage nor a throttled counter loses a call or
//! lets a flood through.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::ReturnValue;
use aws_sdk_dynamodb::Client;

use crate::calls::item::{get_u64, n, s};
use crate::calls::StoreError;

/// The largest limit a workspace can be given: what one counter item (one partition) takes
/// in a second, 1,000 writes.
pub const MAX_LIMIT: u32 = 1000;
/// Sends beyond this many times a workspace's limit in one second are refused (429); up to
/// it, they are accepted and committed later.
pub const FLOOD_FACTOR: u32 = 10;
/// Requests of one workspace an instance admits in a second before it counts them in the
/// table.
pub const FREE_PER_SECOND: u32 = 1;
/// The bytes of answer one read unit buys: a read costs one unit per MiB it answers (at
/// least one), so reading a 32 MiB call in ranges spends the budget as its size does,
/// while a 2 KB get costs one, as before.
pub const READ_UNIT_BYTES: usize = 1 << 20;
/// How long counter items are kept before TTL removes them.
const KEEP_SECS: u64 = 120;
/// More workspaces than this remembered and the memory starts over.
const MAX_REMEMBERED: usize = 10_000;

/// Which of a workspace's budgets a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Budget {
    /// Calls sent (operations A and B).
    Sends,
    /// Everything else: reads and erases.
    Reads,
    /// OpenTelemetry exports (`POST /otel/v1/traces`): a budget of their own, so that the
    /// exports of live calls never push the workspace's calls into 202.
    Traces,
    /// Requests to the policy's model of personal data (AWS Comprehend), whose quota is
    /// the account's: one workspace's calls must not throttle every other's.
    Model,
}

impl Budget {
    fn prefix(self) -> &'static str {
        match self {
            Budget::Sends => "RATE",
            Budget::Reads => "READS",
            Budget::Traces => "TRACES",
            Budget::Model => "MODEL",
        }
    }
}

/// The answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Over the budget this second, by no more than [`FLOOD_FACTOR`] times it: a send is
    /// accepted and committed later; a read is refused.
    Over,
    /// Refused: a flood of sends, or a read over its budget. Retry after this many seconds
    /// (the start of the next second).
    Limited {
        retry_after_secs: u32,
    },
}

/// What an instance knows of one workspace's budget in the current second.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    second: u64,
    /// Requests this instance admitted this second without counting them in the table.
    unreported: u32,
    /// Requests this instance saw this second.
    seen: u32,
    /// The second is known to be refused (flooded, or a read budget spent).
    refused: bool,
    /// Units charged after the fact (a large read's), not reported yet: carried into later
    /// seconds until the workspace's next counted request on this instance reports them.
    charged: u32,
}

/// Counts requests per workspace, budget and second; one per instance.
#[derive(Debug)]
pub struct Limiter {
    client: Client,
    table: String,
    seen: Mutex<HashMap<(u64, Budget), Seen>>,
    now: fn() -> SystemTime,
}

impl Limiter {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Limiter::with_clock(client, table, SystemTime::now)
    }

    /// A limiter reading the time from `now` (tests hold it still).
    pub fn with_clock(client: Client, table: impl Into<String>, now: fn() -> SystemTime) -> Self {
        Limiter { client, table: table.into(), seen: Mutex::new(HashMap::new()), now }
    }

    /// Adds `units` to what this instance will report with the workspace's next counted
    /// request (the extra units of a large read, known once it is answered), in this second
    /// or a later one. No write of its own; that next request is counted, not taken free.
    pub fn charge(&self, workspace_id: u64, budget: Budget, units: u32) {
        self.in_second(workspace_id, budget, |seen| {
            seen.charged = seen.charged.saturating_add(units);
            seen.seen = seen.seen.max(FREE_PER_SECOND);
        });
    }

    /// Runs `f` on what this instance knows of the workspace's budget in the current second.
    fn in_second<R>(&self, workspace_id: u64, budget: Budget, f: impl FnOnce(&mut Seen) -> R) -> R {
        let second = self.second();
        let mut all = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= MAX_REMEMBERED && !all.contains_key(&(workspace_id, budget)) {
            all.clear();
        }
        let seen = all.entry((workspace_id, budget)).or_default();
        if seen.second != second {
            // A new second; a charge not reported yet is still owed (the next request of
            // the workspace, then, is counted rather than taken free).
            let charged = seen.charged;
            let seen_now = if charged > 0 { FREE_PER_SECOND } else { 0 };
            *seen = Seen { second, charged, seen: seen_now, ..Seen::default() };
        }
        f(seen)
    }

    /// The current second of the wall clock.
    fn second(&self) -> u64 {
        (self.now)().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
    }

    /// An update that adds `by` to the counter of `workspace_id`'s `budget` in `second`
    /// (created at 0 if absent, removed by TTL after [`KEEP_SECS`]).
    fn raise(
        &self,
        workspace_id: u64,
        budget: Budget,
        second: u64,
        by: u32,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(format!("{}#{workspace_id}#{second}", budget.prefix())))
            .key("sk", s("RATE"))
            .update_expression("ADD n :by SET expires_at = :expires")
            .expression_attribute_values(":by", n(by))
            .expression_attribute_values(":expires", n(second + KEEP_SECS))
    }

    /// Takes `units` of `workspace_id`'s `budget` in this second only if the budget has room
    /// for them all (`limit`): a conditional write that adds nothing when it has not; more
    /// units than the whole budget are taken only by a second nobody has used yet (and fill
    /// it). For the committers of paced calls (a commit the budget refuses must not count,
    /// or a queue asking for each paced call would push the workspace into a flood and its
    /// clients' own sends would be refused) and for the model's requests. An error when the
    /// counter cannot be written (throttled, down, or refused).
    pub async fn take(&self, workspace_id: u64, budget: Budget, units: u32, limit: u32) -> Result<bool, StoreError> {
        let raise = self.raise(workspace_id, budget, self.second(), units);
        let raise = match limit.checked_sub(units) {
            Some(room) => raise
                .condition_expression("attribute_not_exists(n) OR n <= :room")
                .expression_attribute_values(":room", n(room)),
            None => raise.condition_expression("attribute_not_exists(n)"),
        };
        let result = raise.send().await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }

    /// Counts one request of `workspace_id` against its `budget`, whose size `limit` is
    /// awaited alongside the count's write (reading it costs no round trip of its own).
    pub async fn count(&self, workspace_id: u64, budget: Budget, limit: impl Future<Output = u32>) -> Admission {
        let limited = Admission::Limited { retry_after_secs: 1 };
        let step = self.in_second(workspace_id, budget, |seen| {
            if seen.refused {
                return Err(limited);
            }
            seen.seen = seen.seen.saturating_add(1);
            if seen.seen <= FREE_PER_SECOND {
                seen.unreported += 1;
                return Err(Admission::Admitted);
            }
            let owed = std::mem::take(&mut seen.unreported).saturating_add(std::mem::take(&mut seen.charged));
            Ok((owed.saturating_add(1), seen.second))
        });
        let (report, second) = match step {
            Ok(counted) => counted,
            Err(answer) => return answer,
        };
        let count = self.raise(workspace_id, budget, second, report).return_values(ReturnValue::UpdatedNew).send();
        let (counted, limit) = tokio::join!(count, limit);
        let limit = u64::from(limit);
        let answer = match counted.map(|out| out.attributes.as_ref().and_then(|a| get_u64(a, "n"))) {
            Ok(Some(count)) if count <= limit => Admission::Admitted,
            Ok(Some(count)) if budget == Budget::Sends && count <= limit * u64::from(FLOOD_FACTOR) => Admission::Over,
            Ok(Some(_)) => limited,
            Ok(None) => {
                tracing::warn!(workspace_id, "rate counter answered no count; request admitted");
                Admission::Admitted
            }
            // A send goes the durable way that needs no count (S3, committed later at the
            // workspace's rate): the counter fails when DynamoDB is throttled or down, when
            // a commit now would likely fail too, and a limiter that failed open would let
            // a flood through whenever its own counter is throttled.
            Err(e) if budget == Budget::Sends => {
                let e = StoreError::from_sdk(e);
                tracing::warn!(error = %e, workspace_id, "rate counter unavailable; send paced");
                Admission::Over
            }
            Err(e) => {
                let e = StoreError::from_sdk(e);
                tracing::warn!(error = %e, workspace_id, "rate counter unavailable; read admitted");
                Admission::Admitted
            }
        };
        if answer == limited {
            let mut all = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(seen) = all.get_mut(&(workspace_id, budget)).filter(|s| s.second == second) {
                seen.refused = true;
            }
        }
        answer
    }
}
