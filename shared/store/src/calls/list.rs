//! Listing a workspace's calls (or one agent's), newest first, a page per query.
//!
//! The listing index is sorted by `listed_ms` (the call's start, else when it was first
//! received); calls with the same `listed_ms` are told apart by their provider call id, so a
//! page ends at a [`Position`] that the next page starts after. A call stored meanwhile
//! is listed on a later page when it sorts after that position, and never twice.

use serde::Serialize;

use super::item::{call_pk, get_s, get_u64, n, s, Item, HEAD};
use super::{tables, Store, StoreError};

/// Most calls one page can hold.
pub const MAX_PAGE: usize = 100;

/// Which calls to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing<'a> {
    pub workspace_id: u64,
    /// The service's agent id, to list one agent's calls.
    pub agent_id: Option<&'a str>,
    /// `listed_ms` from and to, both included.
    pub from_ms: u64,
    pub to_ms: u64,
    /// Where the previous page ended.
    pub after: Option<Position>,
    /// Calls on the page: 1 to [`MAX_PAGE`].
    pub limit: usize,
}

/// A place in a listing: the last call of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub listed_ms: u64,
    pub call_id: String,
}

/// A line of a call listing: a summary, no transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallSummary {
    pub id: u64,
    pub call_id: String,
    pub agent_id: String,
    pub operation: String,
    pub revision: u64,
    /// What the listing is sorted by: the start, else when the call was first received.
    pub listed_ms: u64,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub call_status: Option<String>,
    pub user_sentiment: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub calls: Vec<CallSummary>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Position>,
}

/// Queries of the index one page of an agent's listing may make: an agent's calls are
/// found among its workspace's by a filter, and a page that found too few of them in this
/// many ends early, with a cursor to go on from.
const MAX_QUERIES: usize = 8;
/// Index items one query of an agent's listing evaluates at the most.
const AGENT_SCAN: i32 = 500;

impl Store {
    /// A page of calls, newest first, from the workspace's listing index (eventually
    /// consistent: a call stored a moment ago may not be listed yet). The whole workspace:
    /// one query. One agent: the same index filtered on the agent, a query or a few (one
    /// listing index instead of two saves a write unit on every new call; listings are far
    /// rarer than sends).
    pub async fn list_calls(&self, listing: &Listing<'_>) -> Result<Page, StoreError> {
        let limit = listing.limit.clamp(1, MAX_PAGE);
        let hash = n(listing.workspace_id);
        let index = tables::BY_WORKSPACE;
        let mut start = listing.after.as_ref().map(|after| {
            let mut start = Item::new();
            start.insert(index.hash.0.to_owned(), hash.clone());
            start.insert("listed_ms".to_owned(), n(after.listed_ms));
            start.insert("pk".to_owned(), s(call_pk(listing.workspace_id, &after.call_id)));
            start.insert("sk".to_owned(), s(HEAD));
            start
        });
        let mut calls: Vec<CallSummary> = Vec::new();
        for _ in 0..MAX_QUERIES {
            let mut request = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index.name)
                .key_condition_expression("#h = :h AND listed_ms BETWEEN :from AND :to")
                .expression_attribute_names("#h", index.hash.0)
                .expression_attribute_values(":h", hash.clone())
                .expression_attribute_values(":from", n(listing.from_ms))
                .expression_attribute_values(":to", n(listing.to_ms))
                .scan_index_forward(false)
                .set_exclusive_start_key(start.take());
            request = match listing.agent_id {
                // One more than the page: whether there is a next page is known now, not
                // after a query that finds nothing.
                None => request.limit(limit as i32 + 1),
                Some(agent_id) => request
                    .filter_expression("agent_id = :agent")
                    .expression_attribute_values(":agent", s(agent_id))
                    .limit(AGENT_SCAN),
            };
            let out = request.send().await.map_err(StoreError::from_sdk)?;
            calls.extend(out.items().iter().filter_map(summary));
            start = out.last_evaluated_key;
            if calls.len() > limit || start.is_none() {
                break;
            }
        }
        // More than a page, or the queries stopped (the limit, DynamoDB's 1 MB, or the
        // agent's calls being few among the workspace's) before the end.
        let more = calls.len() > limit || start.is_some();
        let next = if calls.len() > limit {
            calls.truncate(limit);
            calls.last().map(|c| Position { listed_ms: c.listed_ms, call_id: c.call_id.clone() })
        } else {
            start.as_ref().and_then(evaluated).filter(|_| more)
        };
        Ok(Page { calls, next })
    }
}

/// Where a query stopped: its last evaluated key as a position.
fn evaluated(key: &Item) -> Option<Position> {
    let (_, call_id) = super::item::parse_call_pk(get_s(key, "pk")?)?;
    Some(Position { listed_ms: get_u64(key, "listed_ms")?, call_id: call_id.to_owned() })
}

/// The summary an index item holds.
fn summary(item: &Item) -> Option<CallSummary> {
    let text = |name: &str| get_s(item, name).map(str::to_owned);
    Some(CallSummary {
        id: get_u64(item, "id")?,
        call_id: text("call_id")?,
        agent_id: text("agent_id").unwrap_or_default(),
        operation: text("operation").unwrap_or_default(),
        revision: get_u64(item, "revision").unwrap_or(1),
        listed_ms: get_u64(item, "listed_ms")?,
        start_ms: get_u64(item, "start_ms"),
        end_ms: get_u64(item, "end_ms"),
        duration_ms: get_u64(item, "duration_ms"),
        call_status: text("call_status"),
        user_sentiment: text("user_sentiment"),
        created_at: get_u64(item, "created_at").unwrap_or_default(),
        updated_at: get_u64(item, "updated_at").unwrap_or_default(),
    })
}

impl Store {
    /// Puts every head stored before the listing indexes existed into them: sets
    /// `listed_ws` and `listed_ms` (its start, else when it was first received) on each
    /// head that lacks `listed_ws`, unless the head changed meanwhile
    /// (a new head has them already). Idempotent. Answers how many heads it updated.
    pub async fn reindex(&self) -> Result<usize, StoreError> {
        let filter = "sk = :head AND attribute_not_exists(listed_ws)";
        super::query::scan_pages(&self.client, &self.table, filter, &[(":head", s(HEAD))], |heads| async move {
            let mut updated = 0;
            for head in &heads {
                updated += usize::from(self.index_head(head).await?);
            }
            Ok(updated)
        })
        .await
    }

    async fn index_head(&self, head: &Item) -> Result<bool, StoreError> {
        let (Some(pk), Some(revision)) = (get_s(head, "pk"), get_u64(head, "revision")) else {
            return Ok(false);
        };
        let Some((workspace_id, _)) = super::item::parse_call_pk(pk) else {
            return Ok(false);
        };
        // As a submission lists it: by its start, at most a day after it was created.
        let created_at = get_u64(head, "created_at");
        let start = get_u64(head, "start_ms").map(|s| match created_at {
            Some(c) => s.min(c.saturating_add(super::submission::LISTED_AHEAD_MS)),
            None => s,
        });
        let Some(listed_ms) = start.or(created_at) else {
            return Ok(false);
        };
        // Listed now, behind where the raw sweep's passes may stand: noted for it first, as
        // a call created late is (a reviewer's find).
        let late = super::now_ms().saturating_sub(listed_ms) >= super::create::late_after(self.day.ms(workspace_id));
        if let (true, Some(id), Some((_, call_id))) = (late, get_u64(head, "id"), super::item::parse_call_pk(pk)) {
            self.note_raw_late(workspace_id, call_id, id, created_at.unwrap_or(listed_ms)).await?;
        }
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(HEAD))
            .update_expression("SET listed_ws = :ws, listed_ms = :ms")
            .condition_expression("#revision = :revision AND attribute_not_exists(listed_ws)")
            .expression_attribute_names("#revision", "revision")
            .expression_attribute_values(":revision", n(revision))
            .expression_attribute_values(":ws", n(workspace_id))
            .expression_attribute_values(":ms", n(listed_ms))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }
}
