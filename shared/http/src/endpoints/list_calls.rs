//! Listing a workspace's calls: `GET /api/v1/public/calls?workspace_id=…`, newest first by
//! their place (`listed_at`: the start a call was first stored with, else when it was first
//! received), optionally one agent's (`agent_remote_identifier`) and within a range of
//! places (`started_from` included, `started_before` not), `limit` calls a page (1 to 100,
//! default 50) and a signed `cursor` for the next page (`next_cursor`).

use std::collections::HashMap;

use lambda_http::http::Response;
use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;

use crate::cursor;
use crate::gate::remote_id_param;
use crate::logging::RequestLog;
use crate::problems::{self, denied};
use crate::reading::{admit, read_problem};
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_core::normalize::timestamps::{millis_rfc3339, rfc3339_millis};
use call_ingest_store::calls::list::MAX_PAGE;
use call_ingest_store::calls::{CallSummary, Listing, StoreError};
use call_ingest_store::directory::{AgentRef, Denied};

/// Calls on a page when `limit` is not given.
pub const DEFAULT_PAGE: usize = 50;

/// The query of a listing, checked.
#[derive(Debug)]
struct Params {
    remote_id: Option<String>,
    from_ms: u64,
    to_ms: u64,
    limit: usize,
    cursor: Option<String>,
}

/// A line of the answer.
#[derive(Debug, Serialize)]
struct SummaryBody<'a> {
    id: u64,
    provider_call_id: &'a str,
    /// `None` only when the agent was deleted from the directory since.
    agent_remote_identifier: Option<&'a str>,
    operation: &'a str,
    revision: u64,
    /// Its place in the listing, which the start filters apply to: its start when it was
    /// first stored, else when it was first received. RFC 3339 UTC.
    listed_at: String,
    /// RFC 3339 UTC; `None` when the call did not say.
    started_at: Option<String>,
    ended_at: Option<String>,
    duration_ms: Option<u64>,
    call_status: Option<&'a str>,
    user_sentiment: Option<&'a str>,
    created_at: String,
    updated_at: String,
}

#[derive(Debug, Serialize)]
struct PageBody<'a> {
    calls: Vec<SummaryBody<'a>>,
    /// The `cursor` of the next page, with the same query; `None` on the last page.
    next_cursor: Option<String>,
}

/// Answers a request to the lister.
pub async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let (workspace_id, params) = admit(backend, Endpoint::ListCalls, request, log, params(request)).await?;
    let agent = match &params.remote_id {
        Some(remote_id) => Some(
            backend
                .directory()
                .agent(AgentRef::Remote { workspace_id, remote_id }, workspace_id)
                .await
                .map_err(read_problem)?
                .ok_or_else(|| denied(Denied::AgentNotFound))?,
        ),
        None => None,
    };
    let key = backend.config.cursor_secret.as_ref().ok_or_else(|| {
        read_problem(StoreError::Internal("CURSOR_SECRET is not set: list cursors cannot be signed".into()))
    })?;
    let mut listing = Listing {
        workspace_id,
        agent_id: agent.as_ref().map(|a| a.id.as_str()),
        from_ms: params.from_ms,
        to_ms: params.to_ms,
        after: None,
        limit: params.limit,
    };
    if let Some(given) = &params.cursor {
        listing.after = Some(cursor::open(key, &listing, given).map_err(|_| problems::invalid_cursor())?);
    }
    let page = backend.store().list_calls(&listing).await.map_err(read_problem)?;
    let next_cursor = match &page.next {
        Some(position) => Some(cursor::issue(key, &listing, position).map_err(|_| problems::invalid_cursor())?),
        None => None,
    };
    let names = agent_names(backend, workspace_id, &page.calls).await?;
    let body = PageBody { calls: page.calls.iter().map(|c| summary(c, &names)).collect(), next_cursor };
    let json = serde_json::to_vec(&body).map_err(|e| read_problem(StoreError::Internal(e.to_string())))?;
    respond::encoded(200, json, request.headers(), request_id)
}

/// The remote identifier of every agent on the page (each from the instance's cache, else
/// one read).
async fn agent_names(
    backend: &Backend,
    workspace_id: u64,
    calls: &[CallSummary],
) -> Result<HashMap<String, String>, Problem> {
    let mut names = HashMap::new();
    for call in calls {
        if names.contains_key(&call.agent_id) {
            continue;
        }
        let agent =
            backend.directory().agent(AgentRef::Id(&call.agent_id), workspace_id).await.map_err(read_problem)?;
        names.insert(call.agent_id.clone(), agent.map(|a| a.remote_id).unwrap_or_default());
    }
    Ok(names)
}

fn summary<'a>(call: &'a CallSummary, names: &'a HashMap<String, String>) -> SummaryBody<'a> {
    SummaryBody {
        id: call.id,
        provider_call_id: &call.call_id,
        agent_remote_identifier: names.get(&call.agent_id).map(String::as_str).filter(|n| !n.is_empty()),
        operation: &call.operation,
        revision: call.revision,
        listed_at: millis_rfc3339(call.listed_ms),
        started_at: call.start_ms.map(millis_rfc3339),
        ended_at: call.end_ms.map(millis_rfc3339),
        duration_ms: call.duration_ms,
        call_status: call.call_status.as_deref(),
        user_sentiment: call.user_sentiment.as_deref(),
        created_at: millis_rfc3339(call.created_at),
        updated_at: millis_rfc3339(call.updated_at),
    }
}

/// The listing's query parameters; every violation at once.
fn params(request: &Request) -> Result<Params, Vec<Violation>> {
    let query = request.query_string_parameters();
    let mut errors = Vec::new();
    let remote_id = remote_id_param(request).map_err(|e| errors.push(e)).unwrap_or_default();
    let mut time = |name: &str| match query.first(name) {
        None => None,
        Some(text) => {
            let ms = text.trim().parse::<u64>().ok().or_else(|| rfc3339_millis(text).and_then(|ms| ms.try_into().ok()));
            if ms.is_none() {
                errors.push(Violation::new(
                    format!("/query/{name}"),
                    Code::Format,
                    "must be an RFC 3339 time (2025-01-31T09:00:00Z) or milliseconds since 1970",
                ));
            }
            ms
        }
    };
    let from_ms = time("started_from").unwrap_or(0);
    let before = time("started_before");
    if before.is_some_and(|b| b <= from_ms) {
        errors.push(Violation::new("/query/started_before", Code::Range, "must be after started_from"));
    }
    let limit = match query.first("limit") {
        None => DEFAULT_PAGE,
        Some(text) => match text.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => {
                errors.push(Violation::new(
                    "/query/limit",
                    Code::Range,
                    format!("must be a whole number from 1 to {MAX_PAGE}"),
                ));
                DEFAULT_PAGE
            }
        },
    };
    // Checked once the listing is known (400 when it is not one this listing issued).
    let cursor = query.first("cursor").map(str::to_owned);
    match errors.is_empty() {
        true => Ok(Params { remote_id, from_ms, to_ms: before.map_or(u64::MAX, |b| b - 1), limit, cursor }),
        false => Err(errors),
    }
}
