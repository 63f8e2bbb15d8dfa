//! The gate every request passes before its endpoint's own work: the credential (401), the
//! scope (403), the workspace (403) and its budget (a send over it is paced; a read, or a
//! flood of sends, 429), and the query parameters several endpoints share.

use lambda_http::{Request, RequestExt};

use crate::credential::token_from_headers;
use crate::logging::RequestLog;
use crate::problems::{self, denied, directory_problem};
use crate::{Backend, Endpoint};
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_store::directory::limits::{Admission, Budget};
use call_ingest_store::directory::scopes::Scope;
use call_ingest_store::directory::{AgentRef, Lookup, Principal};

/// The first steps of every request: its credential, read with `agent` in one round trip;
/// who it belongs to (401); whether it may use `endpoint` (403 naming the scope).
pub(crate) async fn caller(
    backend: &Backend,
    endpoint: Endpoint,
    request: &Request,
    agent: Option<AgentRef<'_>>,
) -> Result<(Lookup, Principal), Problem> {
    let token = token_from_headers(request.headers()).map_err(denied)?;
    // A call being sent (or its spans: an exporter sends a batch once) is not lost to a
    // directory outage (recent items stand in); nothing else is served from them.
    let lookup = match endpoint.scope() {
        Some(Scope::Send | Scope::Traces) => backend.directory().lookup_sender(token, agent).await,
        _ => backend.directory().lookup(token, agent).await,
    };
    let lookup = lookup.map_err(directory_problem)?;
    let principal = lookup.authenticate(endpoint.sessions()).map_err(denied)?;
    if let Some(scope) = endpoint.scope() {
        principal.require(scope).map_err(denied)?;
    }
    Ok((lookup, principal))
}

/// Whether a send is committed now or, over its workspace's budget, made durable and
/// committed later (202).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    Now,
    Later,
}

/// The workspace the request acts in (the one asked for, else an API key's own; 403 when
/// the principal may not use it), counted against its budget of requests per second: sends
/// and reads apart. A send over it is paced ([`Pace::Later`]) and refused (429) only past a
/// flood; a read over it is refused.
pub(crate) async fn enter(
    backend: &Backend,
    lookup: &Lookup,
    principal: &Principal,
    asked: Option<u64>,
    endpoint: Endpoint,
    log: &mut RequestLog,
) -> Result<(u64, Pace), Problem> {
    let workspace_id = principal.workspace(asked).map_err(denied)?;
    log.workspace = Some(workspace_id);
    let budget = match endpoint.scope() {
        Some(Scope::Send) => Budget::Sends,
        _ => Budget::Reads,
    };
    let admission = backend.directory().count_request(lookup, workspace_id, budget, backend.config.rate_limit).await;
    match admission {
        Admission::Admitted => Ok((workspace_id, Pace::Now)),
        Admission::Over if budget == Budget::Sends => Ok((workspace_id, Pace::Later)),
        Admission::Over => Err(problems::too_many_requests(1)),
        Admission::Limited { retry_after_secs } => Err(problems::too_many_requests(retry_after_secs)),
    }
}

/// The longest agent remote identifier (agents are created with at most this many).
const MAX_REMOTE_ID_CHARS: usize = 200;

/// The query's `workspace_id`: a positive integer, required (every endpoint but
/// operation A's).
pub(crate) fn workspace_param(request: &Request) -> Result<u64, Violation> {
    match request.query_string_parameters().first("workspace_id") {
        None => Err(Violation::new("/query/workspace_id", Code::Required, "is required")),
        Some(w) => match w.trim().parse::<u64>() {
            Ok(id) if id > 0 => Ok(id),
            _ => Err(Violation::new("/query/workspace_id", Code::Type, "must be a positive integer")),
        },
    }
}

/// The query's `agent_remote_identifier`, if given: 1 to 200 characters. Bounded before
/// any key is built from it: DynamoDB refuses partition keys over 2048 bytes, and agents
/// are created with at most 200 characters.
pub(crate) fn remote_id_param(request: &Request) -> Result<Option<String>, Violation> {
    match request.query_string_parameters().first("agent_remote_identifier") {
        None => Ok(None),
        Some(r) if !r.is_empty() && r.chars().count() <= MAX_REMOTE_ID_CHARS => Ok(Some(r.to_owned())),
        Some("") => Err(Violation::new("/query/agent_remote_identifier", Code::Length, "must not be empty")),
        Some(_) => Err(Violation::new(
            "/query/agent_remote_identifier",
            Code::Length,
            format!("must be at most {MAX_REMOTE_ID_CHARS} characters"),
        )),
    }
}
