//! The dispatcher: every endpoint's request goes through [`handle`], which checks the
//! method, hands the request to the endpoint's own answer, turns a failure into its problem
//! and makes sure the answer fits Lambda's response. Never panics on anything a request
//! holds; every response carries `X-Request-Id`.

use std::time::Instant;

use lambda_http::http::Response;
use lambda_http::{Body, Request, RequestExt};

use crate::endpoints::{
    call_trace, erase_call, event_endpoints, get_call, ingest, list_calls, me, otel, raw, revisions, webhook,
};
use crate::logging::RequestLog;
use crate::{problems, respond};
use crate::{Backend, Endpoint};

/// Answers one request to `endpoint`. Never panics on anything a request holds; every
/// response carries `X-Request-Id`.
pub async fn handle(backend: &Backend, endpoint: impl Into<Endpoint>, mut request: Request) -> Response<Body> {
    let endpoint = endpoint.into();
    if problems::encoded(endpoint) {
        respond::range_from_query(&mut request);
    }
    let started = Instant::now();
    let request_id = request_id(&request);
    let mut log = RequestLog::new(endpoint, request.body().len());
    let answer = match endpoint {
        _ if endpoint.method().is_some_and(|m| request.method() != m) => {
            Err(problems::method_not_allowed(endpoint.allow()))
        }
        Endpoint::Ingest(operation) => ingest::process(backend, operation, &request, &mut log)
            .await
            .map(|reply| reply.respond(operation, &request_id)),
        Endpoint::GetCall => get_call::answer(backend, &request, &request_id, &mut log).await,
        Endpoint::ListCalls => list_calls::answer(backend, &request, &request_id, &mut log).await,
        Endpoint::CallRevisions => revisions::answer(backend, &request, &request_id, &mut log).await,
        Endpoint::GetRawCall => raw::answer(backend, &request, &request_id, &mut log).await,
        Endpoint::EraseCall => erase_call::answer(backend, &request, &request_id, &mut log).await,
        Endpoint::Webhook => webhook::answer(backend, &request, &request_id, &mut log).await,
        Endpoint::Me => me::answer(backend, &request, &request_id).await,
        // Boxed: each arm's future is a variant of this one, and these would make every
        // endpoint's request future larger (a debug build's test thread overflowed).
        Endpoint::Otel => Box::pin(otel::answer(backend, &request, &request_id, &mut log)).await,
        Endpoint::CallTrace => Box::pin(call_trace::answer(backend, &request, &request_id, &mut log)).await,
        Endpoint::ManageEndpoints => Box::pin(event_endpoints::answer(backend, &request, &request_id, &mut log)).await,
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
        let problem = problems::answer_too_large();
        log.problem = Some(problem.slug);
        response = respond::problem(&problem, endpoint, &request_id);
    }
    let own_budget = matches!(endpoint, Endpoint::Ingest(_) | Endpoint::Webhook | Endpoint::Otel);
    if let (false, Some(workspace_id)) = (own_budget, log.workspace) {
        // A read costs its read units: a 5 MB range is not a 2 KB get.
        let bytes = match response.body() {
            Body::Binary(b) => b.len(),
            Body::Text(t) => t.len(),
            _ => 0,
        };
        backend.directory().charge_read(workspace_id, bytes);
    }
    log.status = response.status().as_u16();
    log.finish(&request_id, started.elapsed(), backend.config.json_logs);
    response
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
        .unwrap_or_else(|| call_ingest_store::calls::random_hex(16).unwrap_or_else(|_| "unknown".into()))
}
