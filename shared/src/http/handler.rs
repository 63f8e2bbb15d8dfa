//! The dispatcher of every endpoint ([`handle`]: the method, then the endpoint's own
//! answer, then the problem catalogue for failures and the size of the answer), the ingest
//! path of operations A and B (credential → query → workspace → agent → body → validate →
//! normalise → store → answer), and the first steps the readers share ([`caller`],
//! [`enter`]).

use std::time::Instant;

use lambda_http::http::{header, Response};
use lambda_http::{Body, Request, RequestExt};

use super::encoding::Encoding;
use super::logging::RequestLog;
use super::respond;
use super::{erase_call, get_call, list_calls, raw, revisions, App, Endpoint};
use crate::api::responses::{CreateCallResponse, SendCallDataResponse};
use crate::api::send_call_data::{peek_agent_id, PEEK_BYTES};
use crate::api::{Code, Problem, Violation};
use crate::call::{self, CallDocument, Operation};
use crate::directory::credentials::{token_from_headers, Denied};
use crate::directory::limits::Admission;
use crate::directory::{AgentRef, Lookup, Principal};
use crate::store::{Outcome, Owner, StoreError, Stored};

/// Answers one request to `endpoint`. Never panics on anything a request holds; every
/// response carries `X-Request-Id`.
pub async fn handle(app: &App, endpoint: impl Into<Endpoint>, request: Request) -> Response<Body> {
    let endpoint = endpoint.into();
    let started = Instant::now();
    let request_id = request_id(&request);
    let mut log = RequestLog::new(endpoint, request.body().len());
    let answer = match endpoint {
        _ if request.method() != endpoint.method() => Err(Problem::new(
            405,
            "method-not-allowed",
            "Method not allowed",
            format!("this endpoint accepts {} only", endpoint.method()),
        )),
        Endpoint::Ingest(operation) => {
            process(app, operation, &request, &mut log).await.map(|reply| reply.respond(operation, &request_id))
        }
        Endpoint::GetCall => get_call::answer(app, &request, &request_id, &mut log).await,
        Endpoint::ListCalls => list_calls::answer(app, &request, &request_id, &mut log).await,
        Endpoint::CallRevisions => revisions::answer(app, &request, &request_id, &mut log).await,
        Endpoint::GetRawCall => raw::answer(app, &request, &request_id, &mut log).await,
        Endpoint::EraseCall => erase_call::answer(app, &request, &request_id, &mut log).await,
    };
    let mut response = match answer {
        Ok(response) => response,
        Err(problem) => {
            log.problem = Some(problem.slug);
            respond::problem(&problem, endpoint, &request_id)
        }
    };
    if !respond::fits(&response) {
        // Every answer is sized where it is made; this is the net under them all, so that
        // the client gets our answer and its request id, not the gateway's.
        let problem = Problem::new(500, "internal", "Internal error", "the answer was too large to send");
        log.problem = Some(problem.slug);
        response = respond::problem(&problem, endpoint, &request_id);
    }
    log.status = response.status().as_u16();
    log.finish(&request_id, started.elapsed(), app.config.json_logs);
    response
}

/// A stored call, to answer with.
struct Reply {
    stored: Stored,
    call_id: String,
}

impl Reply {
    fn respond(self, operation: Operation, request_id: &str) -> Response<Body> {
        let status = if self.stored.is_new() { 201 } else { 200 };
        let body = match operation {
            Operation::CreateCall => serde_json::to_vec(&CreateCallResponse {
                id: self.stored.id,
                provider_call_id: &self.call_id,
                is_new: self.stored.is_new(),
            }),
            Operation::SendCallData => serde_json::to_vec(&SendCallDataResponse {
                success: true,
                call_id: &self.call_id,
                service_call_id: self.stored.id.to_string(),
                message: match self.stored.outcome {
                    Outcome::Created => "Call stored",
                    Outcome::Unchanged => "Call already stored; nothing changed",
                    Outcome::Revised => "Call already stored; its content was updated",
                },
            }),
        };
        respond::json(status, body.unwrap_or_default(), "application/json", request_id)
    }
}

async fn process(app: &App, operation: Operation, request: &Request, log: &mut RequestLog) -> Result<Reply, Problem> {
    let raw = request.body().as_ref();
    // Judged now, told only to an authenticated caller.
    let checked = body_checks(app, request);
    let endpoint = Endpoint::Ingest(operation);
    match operation {
        Operation::CreateCall => {
            let query = query(request);
            let agent = query
                .as_ref()
                .ok()
                .map(|(workspace_id, remote_id)| AgentRef::Remote { workspace_id: *workspace_id, remote_id });
            let (lookup, principal) = caller(app, endpoint, request, agent).await?;
            let (workspace_id, _) = query.map_err(Problem::invalid)?;
            let workspace_id = enter(app, &lookup, &principal, Some(workspace_id), log).await?;
            let agent = app.directory().authorize(&lookup, workspace_id).map_err(denied)?;
            let body = checked?.decode(raw, app.config.max_decompressed_bytes)?;
            let parsed = call::parse_create_call(&body)?;
            let doc = call::accept_create_call(parsed).map_err(Problem::invalid)?;
            store(app, workspace_id, &agent.id, &doc, &body, log).await
        }
        Operation::SendCallData => {
            // The agent is named in the body. Only its first bytes are read (and
            // decompressed) before the credential is known, so an anonymous request costs
            // no parse; when they name the agent, the credential and the agent cost one
            // round trip together.
            let prefix = checked.as_ref().map(|e| e.prefix(raw, PEEK_BYTES)).unwrap_or_default();
            let peeked = peek_agent_id(&prefix);
            let (lookup, principal) = caller(app, endpoint, request, peeked.map(AgentRef::Id)).await?;
            // No workspace asked for: the API key's own (sessions were refused).
            let workspace_id = enter(app, &lookup, &principal, None, log).await?;
            let body = checked?.decode(raw, app.config.max_decompressed_bytes)?;
            let parsed = call::parse_send_call_data(&body)?;
            let agent_id = parsed.agent_id.as_deref().filter(|id| !id.is_empty() && id.chars().count() <= 200);
            let agent = match agent_id {
                Some(id) => {
                    let lookup = match peeked == Some(id) {
                        true => lookup,
                        false => {
                            app.directory().with_agent(lookup, AgentRef::Id(id)).await.map_err(directory_problem)?
                        }
                    };
                    Some(app.directory().authorize(&lookup, workspace_id).map_err(denied)?)
                }
                None => None,
            };
            let doc = call::accept_send_call_data(parsed).map_err(Problem::invalid)?;
            let agent = agent
                .ok_or_else(|| Problem::invalid(vec![Violation::new("/agentId", Code::Required, "is required")]))?;
            store(app, workspace_id, &agent.id, &doc, &body, log).await
        }
    }
}

/// The first steps of every request: its credential, read with `agent` in one round trip;
/// who it belongs to (401); whether it may use `endpoint` (403 naming the scope).
pub(super) async fn caller(
    app: &App,
    endpoint: Endpoint,
    request: &Request,
    agent: Option<AgentRef<'_>>,
) -> Result<(Lookup, Principal), Problem> {
    let token = token_from_headers(request.headers()).map_err(denied)?;
    let lookup = app.directory().lookup(token, agent).await.map_err(directory_problem)?;
    let principal = lookup.authenticate(endpoint.sessions()).map_err(denied)?;
    principal.require(endpoint.scope()).map_err(denied)?;
    Ok((lookup, principal))
}

/// The workspace the request acts in (the one asked for, else an API key's own; 403 when
/// the principal may not use it), counted against its limit of requests per second (429).
pub(super) async fn enter(
    app: &App,
    lookup: &Lookup,
    principal: &Principal,
    asked: Option<u64>,
    log: &mut RequestLog,
) -> Result<u64, Problem> {
    let workspace_id = principal.workspace(asked).map_err(denied)?;
    log.workspace = Some(workspace_id);
    admit(app, lookup, workspace_id).await?;
    Ok(workspace_id)
}

/// 429 when the workspace is over its limit of requests per second.
async fn admit(app: &App, lookup: &Lookup, workspace_id: u64) -> Result<(), Problem> {
    match app.directory().admit(lookup, workspace_id, app.config.rate_limit).await {
        Admission::Admitted => Ok(()),
        Admission::Limited { retry_after_secs } => Err(Problem::new(
            429,
            "too-many-requests",
            "Too many requests",
            format!("this workspace is over its limit of requests per second; retry after {retry_after_secs} s"),
        )),
    }
}

async fn store(
    app: &App,
    workspace_id: u64,
    agent_id: &str,
    doc: &CallDocument,
    raw: &[u8],
    log: &mut RequestLog,
) -> Result<Reply, Problem> {
    let stored = app
        .store()
        .put_call(Owner { workspace_id, agent_id }, doc, raw)
        .await
        .map_err(|e| storage_problem(e, "the call could not be stored"))?;
    log.stored = Some(stored);
    Ok(Reply { stored, call_id: doc.call_id().to_owned() })
}

/// The checks on a body before it is read, only told to an authenticated caller: 413 for
/// more bytes than `MAX_BODY_BYTES` (received, before decompression), 415 for a type that
/// is not JSON or an encoding we do not take. Answers the body's encoding.
fn body_checks(app: &App, request: &Request) -> Result<Encoding, Problem> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let limit = app.config.max_body_bytes;
    if request.body().len() > limit || declared.is_some_and(|d| d > limit as u64) {
        return Err(Problem::new(
            413,
            "payload-too-large",
            "Request body too large",
            format!("the body must be at most {limit} bytes as sent; send larger calls compressed"),
        ));
    }
    if let Some(content_type) = request.headers().get(header::CONTENT_TYPE) {
        if !is_json(content_type.to_str().unwrap_or_default()) {
            return Err(Problem::new(
                415,
                "unsupported-media-type",
                "Unsupported media type",
                "the body must be application/json",
            ));
        }
    }
    Encoding::of(request.headers())
}

/// `application/json`, or any `+json` type, parameters ignored.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The longest agent remote identifier (agents are created with at most this many).
const MAX_REMOTE_ID_CHARS: usize = 200;

/// The query's `workspace_id`: a positive integer, required (every endpoint but
/// operation A's).
pub(super) fn workspace_param(request: &Request) -> Result<u64, Violation> {
    match request.query_string_parameters().first("workspace_id") {
        None => Err(Violation::new("/query/workspace_id", Code::Required, "is required")),
        Some(w) => match w.trim().parse::<u64>() {
            Ok(id) if id > 0 => Ok(id),
            _ => Err(Violation::new("/query/workspace_id", Code::Type, "must be a positive integer")),
        },
    }
}

/// Operation B's query: a positive integer `workspace_id` and an `agent_remote_identifier`
/// of 1 to 200 characters.
fn query(request: &Request) -> Result<(u64, String), Vec<Violation>> {
    let workspace = workspace_param(request);
    let remote = remote_id_param(request)
        .and_then(|r| r.ok_or_else(|| Violation::new("/query/agent_remote_identifier", Code::Required, "is required")));
    match (workspace, remote) {
        (Ok(w), Ok(r)) => Ok((w, r)),
        (w, r) => Err(w.err().into_iter().chain(r.err()).collect()),
    }
}

/// The query's `agent_remote_identifier`, if given: 1 to 200 characters. Bounded before
/// any key is built from it: DynamoDB refuses partition keys over 2048 bytes, and agents
/// are created with at most 200 characters.
pub(super) fn remote_id_param(request: &Request) -> Result<Option<String>, Violation> {
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
fn directory_problem(e: StoreError) -> Problem {
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

/// The Lambda request id, else API Gateway's, else a fresh one.
fn request_id(request: &Request) -> String {
    if let Some(ctx) = request.lambda_context_ref() {
        if !ctx.request_id.is_empty() {
            return ctx.request_id.clone();
        }
    }
    use lambda_http::request::RequestContext;
    let from_gateway = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(c)) => c.request_id.clone(),
        Some(RequestContext::ApiGatewayV1(c)) => c.request_id.clone(),
        _ => None,
    };
    from_gateway
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| crate::store::random_hex(16).unwrap_or_else(|_| "unknown".into()))
}

#[cfg(test)]
mod tests {
    use super::is_json;

    #[test]
    fn json_media_types_are_recognised() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/problem+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-www-form-urlencoded"));
    }
}
