//! A call's trace: `GET /api/v1/public/call/{id}/trace?workspace_id=N` (read scope). The
//! spans of the traces joined to the call (joining now those whose keys name it:
//! `call_ingest_store::traces`), and the per-turn table derived from them
//! (`call_ingest_traces::turns`), aligned to the call's start. A call with no trace answers
//! empty lists: its spans may still come.

use lambda_http::http::Response;
use lambda_http::{Body, Request};
use serde::Serialize;

use crate::logging::RequestLog;
use crate::problems;
use crate::reading::{admit, call_by_id, path_id, read_problem};
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::Problem;
use call_ingest_traces::turns::{view, SpanView, Turn};

#[derive(Serialize)]
struct Answer<'a> {
    id: u64,
    provider_call_id: &'a str,
    /// The trace ids joined to the call.
    traces: Vec<&'a str>,
    turns: Vec<Turn>,
    spans: Vec<SpanView>,
}

/// Answers a request for a call's trace.
pub(crate) async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let (workspace_id, ()) = admit(backend, Endpoint::CallTrace, request, log, Ok(())).await?;
    let call = call_by_id(backend, workspace_id, path_id(request), None).await?.ok_or_else(problems::call_not_found)?;
    let traces = Box::pin(backend.store().traces_of_call(workspace_id, &call.call_id)).await.map_err(read_problem)?;
    let exports: Vec<_> = traces.values().cloned().collect();
    let (spans, turns) = view(&exports, call.started_ms());
    let answer = Answer {
        id: call.id,
        provider_call_id: &call.call_id,
        traces: traces.keys().map(String::as_str).collect(),
        turns,
        spans,
    };
    let body = serde_json::to_vec(&answer)
        .map_err(|e| read_problem(call_ingest_store::calls::StoreError::Internal(e.to_string())))?;
    respond::encoded(200, body, request.headers(), request_id)
}
