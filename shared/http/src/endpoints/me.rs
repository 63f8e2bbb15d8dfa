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
use call_ingest_store::directory::Principal;

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
}

/// Answers a request to `me`.
pub async fn answer(backend: &Backend, request: &Request, request_id: &str) -> Result<Response<Body>, Problem> {
    let (_, principal) = caller(backend, Endpoint::Me, request, None).await?;
    let scopes = principal.scopes().iter().map(|s| s.as_str()).collect();
    let body = match &principal {
        Principal::ApiKey { workspace_id, public_id, .. } => {
            MeBody { kind: "api_key", public_id: Some(public_id), workspaces: vec![*workspace_id], scopes }
        }
        Principal::Session { workspaces, .. } => {
            let mut workspaces = workspaces.clone();
            workspaces.sort_unstable();
            workspaces.dedup();
            MeBody { kind: "session", public_id: None, workspaces, scopes }
        }
    };
    Ok(respond::json(200, serde_json::to_vec(&body).unwrap_or_default(), "application/json", request_id))
}
