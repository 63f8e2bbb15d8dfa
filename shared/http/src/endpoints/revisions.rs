//! A call's revisions: `GET /api/v1/public/call/{id}/revisions` (each one's number, time
//! and digest, oldest first) and `GET /api/v1/public/call/{id}/revisions/{n}` (revision
//! `n`'s document, in the body `GET /api/v1/public/call/{id}` answers).

use lambda_http::http::Response;
use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;

use crate::logging::RequestLog;
use crate::problems;
use crate::reading::{admit, call_by_id, document, locate, path_id, read_problem};
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::Problem;
use call_ingest_core::normalize::timestamps::millis_rfc3339;
use call_ingest_store::calls::{RevisionInfo, StoreError};

#[derive(Debug, Serialize)]
struct RevisionsBody<'a> {
    id: u64,
    provider_call_id: &'a str,
    /// Oldest first; the last is the current one.
    revisions: Vec<RevisionBody<'a>>,
}

#[derive(Debug, Serialize)]
struct RevisionBody<'a> {
    revision: u64,
    /// When this content was received, RFC 3339 UTC.
    received_at: String,
    digest: &'a str,
    /// The endpoint it came through.
    operation: &'a str,
    /// The size of the body as received (`…/raw?revision=n` answers it).
    raw_bytes: u64,
}

/// Answers a request to the revisions reader.
pub async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let (workspace_id, ()) = admit(backend, Endpoint::CallRevisions, request, log, Ok(())).await?;
    let id = path_id(request);
    match request.path_parameters().first("n") {
        Some(n) => {
            // A number no revision can have names none: 404 without a read.
            let n = n.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(problems::call_not_found)?;
            let call = call_by_id(backend, workspace_id, id, Some(n)).await?.ok_or_else(problems::call_not_found)?;
            document(backend, request, request_id, &call).await
        }
        None => {
            let call_id = locate(backend, workspace_id, id).await?.ok_or_else(problems::call_not_found)?;
            // Another call with the same provider call id (stored after an erase) is not it.
            let (found, revisions) = backend
                .store()
                .revisions(workspace_id, &call_id)
                .await
                .map_err(read_problem)?
                .filter(|(found, _)| Some(*found) == id)
                .ok_or_else(problems::call_not_found)?;
            let body = RevisionsBody {
                id: found,
                provider_call_id: &call_id,
                revisions: revisions.iter().map(revision).collect(),
            };
            let json = serde_json::to_vec(&body).map_err(|e| read_problem(StoreError::Internal(e.to_string())))?;
            respond::encoded(200, json, request.headers(), request_id)
        }
    }
}

fn revision(r: &RevisionInfo) -> RevisionBody<'_> {
    RevisionBody {
        revision: r.revision,
        received_at: millis_rfc3339(r.updated_at),
        digest: &r.digest,
        operation: &r.operation,
        raw_bytes: r.raw_bytes,
    }
}
