//! The Lambda side: an invocation's event in, an API Gateway response out.
//!
//! `lambda_http::run` deserialises each event straight into its request type; an event it
//! cannot read (a header value with control characters, aws-lambda-rust-runtime issues
//! #509 and #786) ends as an error of the runtime, and API Gateway answers it with its own
//! 5xx and no request id; one it reads but cannot turn into a request (a query string with
//! `"`, a malformed Host) panics. Here the event is first taken as raw JSON (one scan and
//! copy, a few milliseconds for the largest event) and then read as lambda_http would; one
//! it cannot read, or panics on, is answered 400 with our problem body and the invocation's
//! request id.

use std::convert::Infallible;
use std::panic::AssertUnwindSafe;

use lambda_http::request::LambdaRequest;
use lambda_http::{service_fn, Adapter, LambdaEvent, Request, Service};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::respond;
use crate::{handle, Backend, Endpoint};
use call_ingest_store::config::{Config, ConfigError};

/// API Gateway's (v1 and v2) response format, for an event we could not read.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableEvent {
    pub status_code: u16,
    pub headers: std::collections::BTreeMap<String, String>,
    pub body: String,
    pub is_base64_encoded: bool,
}

/// Reads and checks the environment, starts logging and builds the instance's backend.
/// With `WARM_UP` on, also opens the DynamoDB connection, during Lambda's init (where the CPU
/// is not throttled).
pub async fn start() -> Result<Backend, ConfigError> {
    let config = Config::from_env()?;
    crate::logging::init(config.json_logs);
    let backend = Backend::from_env(config)?;
    if backend.config.warm_up {
        backend.warm_up().await;
    }
    Ok(backend)
}

/// Runs `endpoint`'s function on the Lambda runtime until the runtime stops it.
pub async fn serve(backend: Backend, endpoint: impl Into<Endpoint>) -> Result<(), lambda_http::Error> {
    let backend = &backend;
    let endpoint = endpoint.into();
    if endpoint == Endpoint::ListCalls && backend.config.cursor_secret.is_none() {
        // Every instance must sign cursors with the same key; a random one per instance
        // would make a cursor fail on the next instance.
        return Err("CURSOR_SECRET is not set: list-calls cannot sign its cursors".into());
    }
    if endpoint == Endpoint::Webhook && backend.config.warm_up {
        // Every webhook opens its hook's secret: with warm-up on, the KMS client is built
        // here, in Lambda's init, like the DynamoDB connection. No other function builds it.
        let _ = backend.sealer();
    }
    lambda_http::lambda_runtime::run(service_fn(move |event: LambdaEvent<Box<RawValue>>| async move {
        Ok::<_, Infallible>(answer(backend, endpoint, event).await)
    }))
    .await
}

/// Answers one invocation. Never fails: every event gets an HTTP answer with a request id.
pub async fn answer(
    backend: &Backend,
    endpoint: impl Into<Endpoint>,
    event: LambdaEvent<Box<RawValue>>,
) -> serde_json::Value {
    let endpoint = endpoint.into();
    let LambdaEvent { payload, context } = event;
    match serde_json::from_str::<LambdaRequest>(payload.get()) {
        Ok(request) => {
            drop(payload);
            let mut adapter = Adapter::from(service_fn(|request: Request| async move {
                Ok::<_, Infallible>(handle(backend, endpoint, request).await)
            }));
            let request_id = context.request_id.clone();
            // lambda_http turns the event into a request inside `call`, and panics on some
            // events it read (a query string with `"` or a space, a Host that is no host):
            // such a panic is this request's fault, answered 400 like an unreadable event.
            let call = std::panic::catch_unwind(AssertUnwindSafe(|| adapter.call(LambdaEvent::new(request, context))));
            let Ok(call) = call else {
                return serde_json::to_value(unreadable(endpoint, &request_id, &"the event made lambda_http panic"))
                    .unwrap_or_default();
            };
            let response = match call.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            serde_json::to_value(response).unwrap_or_default()
        }
        Err(e) => serde_json::to_value(unreadable(endpoint, &context.request_id, &e)).unwrap_or_default(),
    }
}

fn unreadable(endpoint: Endpoint, request_id: &str, e: &dyn std::fmt::Display) -> UnreadableEvent {
    tracing::warn!(request_id, error = %e, "event not readable as an HTTP request");
    let problem = crate::problems::unreadable_event();
    let response = respond::problem(&problem, endpoint, request_id);
    let headers = response
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect();
    UnreadableEvent {
        status_code: 400,
        headers,
        body: String::from_utf8_lossy(response.body().as_ref()).into_owned(),
        is_base64_encoded: false,
    }
}
