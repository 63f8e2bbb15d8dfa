//! Reading one call back: `GET /api/v1/public/call/{id}` and
//! `GET /api/v1/public/call?provider_call_id=…`, both with `workspace_id` in the query.
//!
//! A call of another workspace is answered exactly as a missing one (404, after the same
//! reads), so an id or a provider call id tells nobody whether it exists elsewhere.

use lambda_http::http::{header, HeaderValue, Response};
use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;
use serde_json::value::RawValue;

use super::handler::{caller, enter, workspace_param};
use super::logging::RequestLog;
use super::{respond, App, Endpoint};
use crate::api::{Code, Problem, Violation};
use crate::normalize::timestamps::millis_rfc3339;
use crate::store::StoredCall;

/// The longest provider call id a call can have (both operations take at most 200
/// characters); a longer one names no call and builds no key.
const MAX_CALL_ID_CHARS: usize = 200;

/// The body of a found call.
#[derive(Debug, Serialize)]
struct CallBody<'a> {
    id: u64,
    provider_call_id: &'a str,
    /// `None` only when the agent was deleted from the directory since.
    agent_remote_identifier: Option<&'a str>,
    /// The endpoint it came through: `create_call` or `send_call_data`.
    operation: &'a str,
    revision: u64,
    /// When it was first stored and when its current content was, RFC 3339 UTC.
    created_at: String,
    updated_at: String,
    /// The content digest (agent and normalised document), as in the `ETag`.
    digest: &'a str,
    /// The normalised document, as stored.
    document: &'a RawValue,
}

/// Answers a request to the reader.
pub async fn answer(
    app: &App,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let (lookup, principal) = caller(app, Endpoint::GetCall, request, None).await?;
    let named = call_named(request);
    let asked = workspace_param(request);
    let (asked, named) = match (asked, named) {
        (Ok(w), Ok(n)) => (w, n),
        (w, n) => return Err(Problem::invalid(w.err().into_iter().chain(n.err()).collect())),
    };
    let workspace_id = enter(app, &lookup, &principal, Some(asked), log).await?;
    let call = match named {
        Named::Id(id) => match app.store().locate(id).await.map_err(read_problem)? {
            Some((w, call_id)) if w == workspace_id => app.store().get_call(w, &call_id, false).await,
            _ => Ok(None),
        },
        Named::ProviderId(call_id) => app.store().get_call(workspace_id, &call_id, false).await,
        Named::Nothing => Ok(None),
    }
    .map_err(read_problem)?
    .ok_or_else(not_found)?;
    let agent = app.directory().agent(&call.agent_id, workspace_id).await.map_err(read_problem)?;
    let etag = etag(&call);
    if not_modified(request, &etag) {
        let mut response = respond::json(304, Vec::new(), "application/json", request_id);
        response.headers_mut().remove(header::CONTENT_TYPE);
        // What the 200 would have carried (RFC 9110 15.4.5).
        response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        set_etag(&mut response, &etag);
        return Ok(response);
    }
    let body = CallBody {
        id: call.id,
        provider_call_id: &call.call_id,
        agent_remote_identifier: agent.as_ref().map(|a| a.remote_id.as_str()),
        operation: &call.operation,
        revision: call.current.revision,
        created_at: millis_rfc3339(call.created_at),
        updated_at: millis_rfc3339(call.current.updated_at),
        digest: &call.current.digest,
        document: &call.current.document,
    };
    let json =
        serde_json::to_vec(&body).map_err(|e| read_problem(crate::store::StoreError::Internal(e.to_string())))?;
    let mut response = respond::encoded(200, json, request.headers(), request_id)?;
    set_etag(&mut response, &etag);
    Ok(response)
}

/// How the request names its call.
#[derive(Debug, PartialEq, Eq)]
enum Named {
    Id(u64),
    ProviderId(String),
    /// A name no call can have (an id that is not a number, a provider call id too long):
    /// 404 without a read.
    Nothing,
}

/// The `{id}` of the path, else the `provider_call_id` of the query (422 when neither).
fn call_named(request: &Request) -> Result<Named, Violation> {
    if let Some(id) = request.path_parameters().first("id") {
        return Ok(id.parse::<u64>().ok().filter(|id| *id > 0).map_or(Named::Nothing, Named::Id));
    }
    match request.query_string_parameters().first("provider_call_id") {
        Some(id) if !id.is_empty() && id.chars().count() <= MAX_CALL_ID_CHARS => Ok(Named::ProviderId(id.to_owned())),
        Some(_) => Ok(Named::Nothing),
        None => {
            Err(Violation::new("/query/provider_call_id", Code::Required, "is required without a call id in the path"))
        }
    }
}

/// A weak validator from the call's id, revision and content digest: it changes with
/// every revision (also one back to earlier content), and a call erased and sent again (a
/// new id) never matches its old copy.
fn etag(call: &StoredCall) -> String {
    format!("W/\"{}-{}-{}\"", call.id, call.current.revision, call.current.digest)
}

fn set_etag(response: &mut Response<Body>, etag: &str) {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
}

/// `If-None-Match` names `etag` (weak comparison, RFC 9110 13.1.2) or is `*`.
fn not_modified(request: &Request, etag: &str) -> bool {
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let ours = opaque(etag);
    request
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == "*" || opaque(tag) == ours)
}

fn not_found() -> Problem {
    Problem::new(404, "call-not-found", "Call not found", "no such call in this workspace")
}

fn read_problem(e: crate::store::StoreError) -> Problem {
    super::handler::storage_problem(e, "the call could not be read")
}
