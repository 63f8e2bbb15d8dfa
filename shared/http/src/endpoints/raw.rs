//! A body byte for byte as it was received: `GET /api/v1/public/call/{id}/raw`, the
//! current revision's, or `?revision=n` for an earlier one. Answered as
//! `application/json` (every stored body was JSON), gzip-compressed when the client takes
//! it: decompressed, the bytes are exactly the ones received (after the request's own
//! `Content-Encoding` or API Gateway's base64 were undone).

use lambda_http::http::Response;
use lambda_http::{Body, Request, RequestExt};

use crate::logging::RequestLog;
use crate::problems;
use crate::reading::{admit, call_by_id, etag, not_modified, part, path_id, with_etag};
use crate::{Backend, Endpoint};
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_store::calls::Part;

/// Answers a request to the raw reader.
pub async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let (workspace_id, revision) = admit(backend, Endpoint::GetRawCall, request, log, revision_param(request)).await?;
    let call =
        call_by_id(backend, workspace_id, path_id(request), revision).await?.ok_or_else(problems::call_not_found)?;
    if let Some(removed_at) = call.raw_removed_at() {
        return Err(problems::raw_gone(removed_at));
    }
    let etag = etag(&call, "-raw");
    if let Some(response) = not_modified(request, &etag, request_id) {
        return Ok(response);
    }
    Ok(with_etag(part(backend, request, request_id, &call, Part::Raw, b"", b"").await?, &etag))
}

/// The query's `revision`, if given: a positive integer.
fn revision_param(request: &Request) -> Result<Option<u64>, Vec<Violation>> {
    match request.query_string_parameters().first("revision") {
        None => Ok(None),
        Some(n) => match n.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(vec![Violation::new("/query/revision", Code::Type, "must be a positive integer")]),
        },
    }
}
