//! The catalogue of problems the endpoints share: refused credentials, and what a storage
//! failure becomes (503 for what a retry may fix, else 500).

use crate::api::Problem;
use crate::directory::credentials::Denied;
use crate::store::StoreError;

/// What a credential check refused, as the contract answers it.
pub(super) fn denied(d: Denied) -> Problem {
    match d {
        Denied::Unauthorized => Problem::new(
            401,
            "unauthorized",
            "Unauthorized",
            "send a valid credential: Authorization: Bearer <API key>",
        ),
        Denied::Forbidden => {
            Problem::new(403, "forbidden", "Forbidden", "the credential is not valid for this workspace")
        }
        Denied::AgentNotFound => {
            Problem::new(404, "agent-not-found", "Agent not found", "no such agent in this workspace")
        }
        Denied::MissingScope(scope) => Problem::new(
            403,
            "insufficient-scope",
            "Forbidden",
            format!("the API key lacks the `{scope}` scope; make one with `callctl key create --scope {scope}`"),
        ),
    }
}

/// A failure reading the credential or the agent: no call was being stored yet.
pub(super) fn directory_problem(e: StoreError) -> Problem {
    storage_problem(e, "the credential or agent could not be read")
}

/// 503 for what a retry may fix, else 500 whose detail says what `failed`.
pub(super) fn storage_problem(e: StoreError, failed: &str) -> Problem {
    match e {
        StoreError::Unavailable(reason) => {
            tracing::warn!(%reason, "storage unavailable");
            Problem::new(
                503,
                "unavailable",
                "Service unavailable",
                "storage is busy or unreachable; retry the same request",
            )
        }
        StoreError::Internal(reason) => {
            tracing::error!(%reason, "storage failed");
            Problem::new(
                500,
                "internal",
                "Internal error",
                format!("{failed}; quote the request id when reporting this"),
            )
        }
    }
}
