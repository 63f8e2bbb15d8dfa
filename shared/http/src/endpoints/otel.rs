//! OpenTelemetry's OTLP/HTTP receiver (issue 31): `POST /otel/v1/traces`, so that a voice
//! agent (pipecat, LiveKit Agents) exports its spans here by setting
//! `OTEL_EXPORTER_OTLP_ENDPOINT=https://<api>/otel` and an `Authorization` header.
//!
//! - The body is `application/x-protobuf` or `application/json` (any other type 415), as
//!   sent or with `Content-Encoding: gzip` (or zstd), with the ingest endpoints' caps (413).
//! - A key with the `traces` scope or the `send` scope; its own workspace. Sessions are
//!   refused: exporters hold keys.
//! - A budget of its own per workspace (`TRACE_RATE_LIMIT_PER_SECOND`, 100 by default),
//!   apart from sends, so that exports of live calls never push calls into 202; over it 429
//!   with `Retry-After`, which the exporters honour.
//! - Durable first: the spans kept ([`call_ingest_traces::policy`]) are in S3 before the
//!   answer (`traces/in/`); commit-pending indexes them and joins them to their calls
//!   (`call_ingest_store::traces`). S3 failing past [`KEEP_WITHIN`]: 503 with `Retry-After`.
//! - Answers as OTLP/HTTP specifies: 200 with `ExportTraceServiceResponse` in the request's
//!   encoding (`partialSuccess` for spans refused by policy), failures as
//!   `google.rpc.Status`. `/otel/v1/logs` and `/otel/v1/metrics` answer 200 with a partial
//!   success saying they are not kept, so that exporters set for every signal do not fail.

use std::time::Duration;

use lambda_http::http::{header, HeaderValue, Response};
use lambda_http::{Body, Request};

use crate::encoding::Encoding;
use crate::endpoints::ingest::keep_pending;
use crate::gate::caller;
use crate::logging::RequestLog;
use crate::problems::{self, denied, storage_problem};
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::Problem;
use call_ingest_store::calls::{now_ms, StoreError};
use call_ingest_store::directory::limits::Admission;
use call_ingest_store::traces::batch_key;
use call_ingest_traces::otlp::{self, Format};
use call_ingest_traces::policy;

/// How long S3 gets to keep a batch before the answer is 503 (retried by the exporter,
/// which keeps the batch meanwhile): past the SDK's 3 s attempt, well inside exporters'
/// 10 s timeout.
const KEEP_WITHIN: Duration = Duration::from_secs(6);

/// The most bytes an export may expand to: exporters send at most 512 spans a batch (well
/// under 4 MB), and what is decoded stays well inside the function's memory.
const MAX_EXPORT_BYTES: usize = 16 << 20;

/// The most traces one export may hold: an agent server's exporter sends the spans of the
/// conversations it runs at once, a few dozen; each trace is indexed on its own.
const MAX_TRACES: usize = 256;

/// The signal a path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
    Metrics,
}

fn signal(request: &Request) -> Option<Signal> {
    let path = request.uri().path().trim_end_matches('/');
    match path.rsplit_once("/v1/")?.1 {
        "traces" => Some(Signal::Traces),
        "logs" => Some(Signal::Logs),
        "metrics" => Some(Signal::Metrics),
        _ => None,
    }
}

/// Answers an export; a failure as `google.rpc.Status` in the request's encoding (JSON when
/// the type was not one of OTLP's).
pub(crate) async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let content_type = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let format = Format::of(content_type);
    let answered = match format {
        Some(format) => receive(backend, request, format, log).await.map(|body| (format, body)),
        None => Err(problems::unsupported_type("application/x-protobuf or application/json")),
    };
    Ok(match answered {
        Ok((format, body)) => {
            let mut response = respond::json(200, body, format.content_type(), request_id);
            response.headers_mut().remove(header::X_CONTENT_TYPE_OPTIONS);
            response
        }
        Err(problem) => {
            log.problem = Some(problem.slug);
            let format = format.unwrap_or(Format::Json);
            // The headers of the problem's status (Retry-After, WWW-Authenticate, ...), the
            // body OTLP's.
            let mut response = respond::problem(&problem, Endpoint::Otel, request_id);
            *response.body_mut() = Body::Binary(otlp::status(format, problem.status, &problem.detail));
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(format.content_type()));
            response
        }
    })
}

/// The body of the 200: the batch kept first.
async fn receive(
    backend: &Backend,
    request: &Request,
    format: Format,
    log: &mut RequestLog,
) -> Result<Vec<u8>, Problem> {
    let received = now_ms();
    let signal = signal(request)
        .ok_or_else(|| problems::bad_request("no such OTLP signal: /v1/traces, /v1/logs or /v1/metrics"))?;
    let (_, principal) = caller(backend, Endpoint::Otel, request, None).await?;
    let workspace_id = principal.workspace(None).map_err(denied)?;
    log.workspace = Some(workspace_id);
    if signal != Signal::Traces {
        let what = if signal == Signal::Logs { "logs" } else { "metrics" };
        return Ok(otlp::not_kept(format, &format!("{what} are not kept: only traces are (/otel/v1/traces)")));
    }
    match backend.directory().count_traces(workspace_id, backend.config.trace_rate_limit).await {
        Admission::Admitted => {}
        Admission::Limited { retry_after_secs } => return Err(problems::too_many_requests(retry_after_secs)),
        Admission::Over => return Err(problems::too_many_requests(1)),
    }
    let limit = backend.config.max_body_bytes;
    if request.body().len() > limit {
        return Err(problems::body_too_large(limit));
    }
    let cap = backend.config.max_decompressed_bytes.min(MAX_EXPORT_BYTES);
    let body = Encoding::of(request.headers())?.decode(request.body().as_ref(), cap)?;
    if otlp::too_many_elements(format, &body) {
        return Err(problems::too_many_elements(call_ingest_traces::bounds::MAX_ELEMENTS));
    }
    let export = otlp::read(format, &body).map_err(|m| problems::bad_request(&m.0))?;
    if call_ingest_traces::split::trace_count(&export) > MAX_TRACES {
        return Err(problems::too_many_elements(MAX_TRACES));
    }
    drop(body);
    let kept = policy::keep(export);
    if kept.spans > 0 {
        let key = batch_key(workspace_id, received).map_err(|e| storage_problem(e, "the spans could not be kept"))?;
        let put = keep_pending(KEEP_WITHIN, || async {
            backend.store().put_trace_batch_at(&key, &kept.request).await.map(|()| key.clone())
        });
        put.await
            .unwrap_or_else(|_| Err(StoreError::Unavailable("S3 did not take the batch in time".into())))
            .map_err(|e| storage_problem(e, "the spans could not be kept"))?;
        log.accepted = true;
    }
    Ok(otlp::response(format, kept.rejected, &kept.message))
}
