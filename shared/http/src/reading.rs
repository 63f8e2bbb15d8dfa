//! What the endpoints that read (and erase) calls share: the first steps of a request,
//! finding a call by its `{id}` within the caller's workspace, answering a call's document,
//! and validators (`ETag` / `If-None-Match`).
//!
//! A call of another workspace is answered exactly as a missing one (404, after the same
//! reads), so an id or a provider call id tells nobody whether it exists elsewhere.

use lambda_http::http::{header, HeaderValue, Response};
use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;

use crate::gate::{caller, enter, workspace_param};
use crate::logging::RequestLog;
use crate::problems::{self, storage_problem};
use crate::respond::{self, Asked};
use crate::{Backend, Endpoint};
use call_ingest_core::api::{Problem, Violation};
use call_ingest_core::normalize::timestamps::millis_rfc3339;
use call_ingest_store::calls::{CallAt, Part, StoreError};
use call_ingest_store::directory::AgentRef;

/// The first steps of every reader: credential and scope (401, 403), the query's
/// `workspace_id` with the endpoint's own `params` (422 for all their violations at once),
/// the workspace's access and rate (403, 429). Answers the workspace and the params.
pub(crate) async fn admit<T>(
    backend: &Backend,
    endpoint: Endpoint,
    request: &Request,
    log: &mut RequestLog,
    params: Result<T, Vec<Violation>>,
) -> Result<(u64, T), Problem> {
    let (lookup, principal) = caller(backend, endpoint, request, None).await?;
    let (asked, params) = match (workspace_param(request), params) {
        (Ok(w), Ok(p)) => (w, p),
        (w, p) => return Err(Problem::invalid(w.err().into_iter().chain(p.err().into_iter().flatten()).collect())),
    };
    let (workspace_id, _) = enter(backend, &lookup, &principal, Some(asked), endpoint, log).await?;
    Ok((workspace_id, params))
}

/// The `{id}` of the path, when it is an id a call can have (a positive integer); any
/// other names no call (404 without a read).
pub(crate) fn path_id(request: &Request) -> Option<u64> {
    request.path_parameters().first("id")?.parse::<u64>().ok().filter(|id| *id > 0)
}

/// The provider call id of call `id` when it is in `workspace_id`; `None` when it is
/// missing, of another workspace, or `id` is `None`. One query of the `by-id` index.
pub(crate) async fn locate(backend: &Backend, workspace_id: u64, id: Option<u64>) -> Result<Option<String>, Problem> {
    let Some(id) = id else { return Ok(None) };
    Ok(match backend.store().locate(id).await.map_err(read_problem)? {
        Some((w, call_id)) if w == workspace_id => Some(call_id),
        _ => None,
    })
}

/// Call `id` of `workspace_id` at `revision` (current when `None`), or `None`: missing, of
/// another workspace, or `id` is `None`. A call stored again after an erase has the old
/// one's provider call id but not its id: it is not the call asked for. Its content is
/// not read yet.
pub(crate) async fn call_by_id(
    backend: &Backend,
    workspace_id: u64,
    id: Option<u64>,
    revision: Option<u64>,
) -> Result<Option<CallAt>, Problem> {
    let Some(call_id) = locate(backend, workspace_id, id).await? else { return Ok(None) };
    let call = backend.store().call_at(workspace_id, &call_id, revision).await.map_err(read_problem)?;
    Ok(call.filter(|c| Some(c.id) == id))
}

/// The body of a call (or of one of its revisions), but its document: that follows, as
/// the last member, `document`.
#[derive(Debug, Serialize)]
struct CallBody<'a> {
    id: u64,
    provider_call_id: &'a str,
    /// `None` only when the agent was deleted from the directory since.
    agent_remote_identifier: Option<&'a str>,
    /// The endpoint it came through: `create_call` or `send_call_data`.
    operation: &'a str,
    revision: u64,
    /// When the call was first stored and when this content was, RFC 3339 UTC.
    created_at: String,
    updated_at: String,
    /// The content digest (agent and normalised document), as in the `ETag`.
    digest: &'a str,
}

/// Answers `call`'s current content (the revision it was read at), or 304 when the
/// client has it.
pub(crate) async fn document(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    call: &CallAt,
) -> Result<Response<Body>, Problem> {
    let etag = etag(call, "");
    if let Some(response) = not_modified(request, &etag, request_id) {
        return Ok(response);
    }
    let agent =
        backend.directory().agent(AgentRef::Id(&call.agent_id), call.workspace_id).await.map_err(read_problem)?;
    let body = CallBody {
        id: call.id,
        provider_call_id: &call.call_id,
        agent_remote_identifier: agent.as_ref().map(|a| a.remote_id.as_str()),
        operation: &call.operation,
        revision: call.revision,
        created_at: millis_rfc3339(call.created_at),
        updated_at: millis_rfc3339(call.updated_at),
        digest: &call.digest,
    };
    // `{…,"document":` the document `}`.
    let mut prefix = serde_json::to_vec(&body).map_err(|e| read_problem(StoreError::Internal(e.to_string())))?;
    prefix.pop();
    prefix.extend_from_slice(br#","document":"#);
    Ok(with_etag(part(backend, request, request_id, call, Part::Document, &prefix, b"}").await?, &etag))
}

/// Answers `part` of `call` between `prefix` and `suffix`: whole (see
/// [`respond::encoded`]), or the byte range the request asks for, reading of the part only
/// the bytes within the range (ranged GETs of a large frame's pieces).
pub(crate) async fn part(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    call: &CallAt,
    part: Part,
    prefix: &[u8],
    suffix: &[u8],
) -> Result<Response<Body>, Problem> {
    let len = usize::try_from(call.len(part)).unwrap_or(usize::MAX);
    let total = prefix.len().saturating_add(len).saturating_add(suffix.len());
    let store = backend.store();
    match respond::asked(request.headers(), total) {
        Asked::Range(first, last) => {
            let (start, end) = (prefix.len(), prefix.len() + len);
            let mut bytes = Vec::with_capacity(last - first + 1);
            if first < start {
                bytes.extend_from_slice(&prefix[first..=last.min(start - 1)]);
            }
            if start < end && first < end && last >= start {
                let (a, b) = (first.max(start) - start, last.min(end - 1) - start);
                let mut span = store.span(call, part, a as u64, b as u64).await.map_err(read_problem)?;
                if span.is_none() {
                    // Switched by a rewrite since it was read: the same bytes when the part
                    // kept its length (a raw body removed leaves the document as it was).
                    if let Some(again) = store.switched(call).await.map_err(read_problem)? {
                        if again.len(part) == call.len(part) {
                            span = store.span(&again, part, a as u64, b as u64).await.map_err(read_problem)?;
                        }
                    }
                }
                bytes.extend(span.ok_or_else(problems::call_not_found)?);
            }
            if last >= end {
                bytes.extend_from_slice(&suffix[first.max(end) - end..=last - end]);
            }
            Ok(respond::partial(bytes, first, last, total, request.headers(), request_id))
        }
        Asked::Unsatisfiable => Ok(respond::unsatisfiable(total, request_id)),
        Asked::Ignored => {
            let (content, _) =
                store.current_content(call).await.map_err(read_problem)?.ok_or_else(problems::call_not_found)?;
            // The part not answered is dropped first; a raw body alone is moved, not copied.
            let whole = match part {
                Part::Raw if prefix.is_empty() && suffix.is_empty() => content.raw,
                Part::Raw => [prefix, &content.raw, suffix].concat(),
                Part::Document => {
                    drop(content.raw);
                    [prefix, content.document.get().as_bytes(), suffix].concat()
                }
            };
            respond::encoded(200, whole, request.headers(), request_id)
        }
    }
}

/// A weak validator from the call's id, revision and content digest: it changes with
/// every revision (also one back to earlier content), and a call erased and sent again (a
/// new id) never matches its old copy. `kind` tells representations of one revision apart
/// (its document, its raw body).
pub(crate) fn etag(call: &CallAt, kind: &str) -> String {
    // A rewrite (a stricter policy applied, a raw body removed) changes the content under
    // the same revision: its count is part of the tag.
    let rewrites = match call.rewrites() {
        0 => String::new(),
        n => format!("-w{n}"),
    };
    format!("W/\"{}-{}-{}{rewrites}{kind}\"", call.id, call.revision, call.digest)
}

pub(crate) fn with_etag(mut response: Response<Body>, etag: &str) -> Response<Body> {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

/// 304 when `If-None-Match` names `etag` (weak comparison, RFC 9110 13.1.2) or is `*`.
pub(crate) fn not_modified(request: &Request, etag: &str, request_id: &str) -> Option<Response<Body>> {
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let ours = opaque(etag);
    let matched = request
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == "*" || opaque(tag) == ours);
    if !matched {
        return None;
    }
    let mut response = respond::json(304, Vec::new(), "application/json", request_id);
    response.headers_mut().remove(header::CONTENT_TYPE);
    // What the 200 would have carried (RFC 9110 15.4.5).
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    Some(with_etag(response, etag))
}

pub(crate) fn read_problem(e: StoreError) -> Problem {
    storage_problem(e, "the call could not be read")
}
