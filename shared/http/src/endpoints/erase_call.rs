//! Erasing a call: `DELETE /api/v1/public/call/{id}`. Its head, every revision and every
//! chunk are deleted. Idempotent: 200 for any id, `erased` saying whether this request
//! removed it (`false` for a call already erased, never stored, or of another workspace:
//! one answer for all three). A later submission with the same provider call id stores a
//! new call (a new id, `is_new: true`).

use lambda_http::http::Response;
use lambda_http::{Body, Request};
use serde::Serialize;

use crate::logging::RequestLog;
use crate::problems::{self, storage_problem};
use crate::reading::{admit, locate, path_id};
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::Problem;
use call_ingest_store::calls::StoreError;

/// How long one request works at an erase: well inside the function's 29 s timeout.
const ERASE_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

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
    let (workspace_id, ()) = admit(backend, Endpoint::EraseCall, request, log, Ok(())).await?;
    // Not a positive integer: the id of no call, the readers' 404.
    let id = path_id(request).ok_or_else(problems::call_not_found)?;
    let removed = match locate(backend, workspace_id, Some(id)).await? {
        Some(call_id) => {
            // Its traces, the call, then traces that joined it meanwhile (`erase_everything`).
            // A call with a great deal to remove (hundreds of pending sends gathered while an
            // earlier erase was cut short) is erased over several requests: what one removed
            // stays removed, and a 503 with Retry-After comes before the function's timeout.
            let erase = backend.store().erase_everything(workspace_id, &call_id, id);
            let erased = tokio::time::timeout(ERASE_BUDGET, erase).await.unwrap_or_else(|_| {
                Err(StoreError::Unavailable(format!("not finished within {} s", ERASE_BUDGET.as_secs())))
            });
            erased.map_err(|e| storage_problem(e, "the call could not be erased"))?
        }
        _ => 0,
    };
    if removed > 0 {
        tracing::info!(workspace_id, id, items = removed, "call erased");
    }
    let body = ErasedBody { id, erased: removed > 0, items_removed: removed };
    Ok(respond::json(200, serde_json::to_vec(&body).unwrap_or_default(), "application/json", request_id))
}
