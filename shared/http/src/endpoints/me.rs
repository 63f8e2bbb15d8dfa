//! Who the credential is: `GET /api/v1/public/me`. The viewer asks it which workspaces to
//! offer and whether to show Erase. Any valid credential may ask, whatever its scopes (a
//! key without `read` learns why it cannot read); nothing else is read, and no workspace
//! budget is spent.

use lambda_http::http::Response;
use lambda_http::{Body, Request};
use serde::Serialize;

use crate::gate::caller;
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::Problem;
use call_ingest_core::privacy::Policy;
use call_ingest_store::directory::{Lookup, Principal};
use std::time::Duration;

#[derive(Debug, Serialize)]
struct MeBody<'a> {
    /// `api_key` or `session`.
    kind: &'static str,
    /// An API key's public id (`callctl key list` shows it); absent for a session.
    #[serde(skip_serializing_if = "Option::is_none")]
    public_id: Option<&'a str>,
    /// The workspaces the credential may use, ascending.
    workspaces: Vec<u64>,
    /// What it may do there: `send`, `read`, `erase`.
    scopes: Vec<&'static str>,
    /// Each workspace's data policy (`callctl workspace policy`), in the order of
    /// `workspaces`; `null` for one that could not be read now.
    data_policies: Vec<WorkspacePolicy>,
}

#[derive(Debug, Serialize)]
struct WorkspacePolicy {
    workspace_id: u64,
    policy: Option<Policy>,
}

/// How long a workspace's policy may take to read for `me`.
const POLICY_WITHIN: Duration = Duration::from_secs(1);

/// Answers a request to `me`.
pub async fn answer(backend: &Backend, request: &Request, request_id: &str) -> Result<Response<Body>, Problem> {
    let (_, principal) = caller(backend, Endpoint::Me, request, None).await?;
    let scopes = principal.scopes().iter().map(|s| s.as_str()).collect();
    let (kind, public_id, workspaces) = match &principal {
        Principal::ApiKey { workspace_id, public_id, .. } => ("api_key", Some(public_id.as_str()), vec![*workspace_id]),
        Principal::Session { workspaces, .. } => {
            let mut workspaces = workspaces.clone();
            workspaces.sort_unstable();
            workspaces.dedup();
            ("session", None, workspaces)
        }
    };
    let nothing_read = Lookup::default();
    // One after another: a session names a few workspaces, and their items are cached.
    let mut data_policies = Vec::with_capacity(workspaces.len());
    for &workspace_id in &workspaces {
        let read = backend.directory().policy_for(&nothing_read, workspace_id, (POLICY_WITHIN, POLICY_WITHIN)).await;
        data_policies.push(WorkspacePolicy { workspace_id, policy: read.ok().map(|found| found.policy) });
    }
    let body = MeBody { kind, public_id, workspaces, scopes, data_policies };
    Ok(respond::json(200, serde_json::to_vec(&body).unwrap_or_default(), "application/json", request_id))
}
