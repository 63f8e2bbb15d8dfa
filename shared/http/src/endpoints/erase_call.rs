//! Erasing a call: `DELETE /api/v1/public/call/{id}`. Its head, every revision and every
//! chunk are deleted. Idempotent: 200 for any id, `erased` saying whether this request
//! removed it (`false` for a call already erased, never stored, or of another workspace:
//! one answer for all three). A later submission with the same provider call id stores a
//! new call (a new id, `is_new: true`).

use std::time::{Duration, SystemTime};

use lambda_http::http::Response;
use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;

use crate::logging::RequestLog;
use crate::problems::{self, storage_problem};
use crate::reading::{admit, locate, path_id};
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::Problem;
use call_ingest_store::calls::StoreError;

/// How long one request works at an erase (admitted, located, erased): well inside the
/// function's 29 s timeout.
const ERASE_BUDGET: Duration = Duration::from_secs(20);
/// Kept back from the function's deadline: the answer's way out, through the gateway.
const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

#[derive(Debug, Serialize)]
struct ErasedBody {
    /// The id asked for.
    id: u64,
    /// Whether this request removed the call.
    erased: bool,
    /// Items removed (head, revisions, chunks).
    items_removed: usize,
}

/// Answers a request to the eraser.
pub async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    // A call with a great deal to remove (hundreds of pending sends gathered while an
    // earlier erase was cut short), or a table slow to answer, is erased over several
    // requests: what one removed stays removed, and a 503 with Retry-After comes before
    // the gateway gives up (its bare 503 says nothing of when to come back). So the whole
    // request is bounded, not the erase alone (seed 52 of `make chaos`: admitted and
    // located slowly, erases ran past the gateway's 30 s).
    // Cut before the call is buried, never after: a buried call is no longer found by its
    // id, so its clean-up (copies set aside, notes, traces that joined it) is finished then
    // whatever the time (`Store::erase_everything_until`).
    let budget = budget(request);
    let until = tokio::time::Instant::now() + budget;
    let out_of_time = || {
        let reason = format!("not finished within {} ms", budget.as_millis());
        storage_problem(StoreError::Unavailable(reason), "the call could not be erased")
    };
    let found = async {
        let (workspace_id, ()) = admit(backend, Endpoint::EraseCall, request, log, Ok(())).await?;
        // Not a positive integer: the id of no call, the readers' 404.
        let id = path_id(request).ok_or_else(problems::call_not_found)?;
        Ok::<_, Problem>((workspace_id, id, locate(backend, workspace_id, Some(id)).await?))
    };
    let (workspace_id, id, call_id) = tokio::time::timeout_at(until, found).await.map_err(|_| out_of_time())??;
    let removed = match call_id {
        // Its traces, the call, then traces that joined it meanwhile.
        Some(call_id) => backend
            .store()
            .erase_everything_until(workspace_id, &call_id, id, Some(until))
            .await
            .map_err(|e| storage_problem(e, "the call could not be erased"))?,
        None => 0,
    };
    if removed > 0 {
        tracing::info!(workspace_id, id, items = removed, "call erased");
    }
    let body = ErasedBody { id, erased: removed > 0, items_removed: removed };
    Ok(respond::json(200, serde_json::to_vec(&body).unwrap_or_default(), "application/json", request_id))
}

/// How long this request may work: [`ERASE_BUDGET`], and never past the function's
/// deadline less [`DEADLINE_MARGIN`] (an invocation that waited for an instance has less).
fn budget(request: &Request) -> Duration {
    let left = request
        .lambda_context_ref()
        .filter(|c| c.deadline > 0)
        .map(|c| c.deadline().duration_since(SystemTime::now()).unwrap_or_default());
    match left {
        Some(left) => ERASE_BUDGET.min(left.saturating_sub(DEADLINE_MARGIN)),
        None => ERASE_BUDGET,
    }
}
