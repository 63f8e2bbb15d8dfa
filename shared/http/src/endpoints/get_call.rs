//! Reading one call back: `GET /api/v1/public/call/{id}` and
//! `GET /api/v1/public/call?provider_call_id=…`, both with `workspace_id` in the query.

use lambda_http::http::Response;
use lambda_http::{Body, Request, RequestExt};

use crate::logging::RequestLog;
use crate::problems;
use crate::reading::{admit, call_by_id, document, path_id, read_problem};
use crate::{Backend, Endpoint};
use call_ingest_core::api::{Code, Problem, Violation};

/// The longest provider call id a call can have (both operations take at most 200
/// characters); a longer one names no call and builds no key.
pub(crate) const MAX_CALL_ID_CHARS: usize = 200;

/// Answers a request to the reader.
pub async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let (workspace_id, named) = admit(backend, Endpoint::GetCall, request, log, call_named(request)).await?;
    let call = match named {
        Named::Id(id) => call_by_id(backend, workspace_id, id, None).await?,
        Named::ProviderId(Some(call_id)) => {
            backend.store().call_at(workspace_id, &call_id, None).await.map_err(read_problem)?
        }
        Named::ProviderId(None) => None,
    };
    document(backend, request, request_id, &call.ok_or_else(problems::call_not_found)?).await
}

/// How the request names its call (`None`: a name no call can have, 404 without a read).
#[derive(Debug, PartialEq, Eq)]
enum Named {
    Id(Option<u64>),
    ProviderId(Option<String>),
}

/// The `{id}` of the path, else the `provider_call_id` of the query (422 when neither).
fn call_named(request: &Request) -> Result<Named, Vec<Violation>> {
    if request.path_parameters().first("id").is_some() {
        return Ok(Named::Id(path_id(request)));
    }
    match request.query_string_parameters().first("provider_call_id") {
        Some(id) => Ok(Named::ProviderId(
            Some(id).filter(|id| !id.is_empty() && id.chars().count() <= MAX_CALL_ID_CHARS).map(str::to_owned),
        )),
        None => Err(vec![Violation::new(
            "/query/provider_call_id",
            Code::Required,
            "is required without a call id in the path",
        )]),
    }
}
