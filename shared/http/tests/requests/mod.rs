//! Building requests for the handler and reading its responses.
#![allow(dead_code)]

use std::collections::HashMap;

use call_ingest_core::Operation;
use call_ingest_http::{handle, Backend, Endpoint};
use lambda_http::http::{Method, Request, Response};
use lambda_http::{Body, RequestExt};
use serde_json::Value;

/// A response, read.
pub struct Answer {
    pub status: u16,
    pub headers: lambda_http::http::HeaderMap,
    pub body: Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A response, read; a gzip-encoded body decompressed first.
pub fn read(response: Response<Body>) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = match headers.get("content-encoding").map(|v| v.as_bytes()) {
        Some(b"gzip") => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(response.body().as_ref()), &mut out)
                .expect("a gzip body");
            out
        }
        _ => response.body().to_vec(),
    };
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer { status, headers, body }
}

/// A GET of one call: by `id` in the path, else by the query alone; `headers` added.
pub fn get_request(
    id: Option<&str>,
    auth: Option<&str>,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> Request<Body> {
    let path = match id {
        Some(id) => format!("/api/v1/public/call/{id}"),
        None => "/api/v1/public/call".to_owned(),
    };
    let mut builder = Request::builder().method(Method::GET).uri(path);
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let params: HashMap<String, String> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let request = builder.body(Body::Empty).unwrap().with_query_string_parameters(params);
    match id {
        Some(id) => request.with_path_parameters(HashMap::from([("id".to_owned(), id.to_owned())])),
        None => request,
    }
}

/// A request to a reader's `path` (`{name}` segments filled from `params`), with `auth`
/// as the Authorization header.
#[allow(dead_code)]
pub fn read_request(
    method: Method,
    path: &str,
    params: &[(&str, &str)],
    auth: Option<&str>,
    query: &[(&str, &str)],
) -> Request<Body> {
    let mut uri = path.to_owned();
    for (name, value) in params {
        uri = uri.replace(&format!("{{{name}}}"), value);
    }
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    let query: HashMap<String, String> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let params: HashMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    builder.body(Body::Empty).unwrap().with_query_string_parameters(query).with_path_parameters(params)
}

/// A POST to `operation`'s path with `auth` as the Authorization header.
pub fn request(operation: Operation, auth: Option<&str>, query: &[(&str, &str)], body: &Value) -> Request<Body> {
    let path = match operation {
        Operation::CreateCall => "/api/v1/public/call",
        Operation::SendCallData => "/v1/calls",
        Operation::ProviderWebhook(_) => panic!("webhooks are posted with webhook_request"),
    };
    let mut builder = Request::builder().method(Method::POST).uri(path).header("content-type", "application/json");
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    let request = builder.body(Body::from(serde_json::to_vec(body).unwrap())).unwrap();
    let params: HashMap<String, String> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    request.with_query_string_parameters(params)
}

pub async fn send(backend: &Backend, endpoint: impl Into<Endpoint>, request: Request<Body>) -> Answer {
    read(handle(backend, endpoint, request).await)
}

/// A small valid operation B body.
pub fn create_call_body(call_id: &str) -> Value {
    serde_json::json!({
        "call_id": call_id,
        "call_type": "phone_call",
        "start_timestamp": 1763700000,
        "end_timestamp": 1763700042,
        "recording_url": "pipecat://no-recording",
        "caller_phone_number": "+14155550199",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, this is Ava. SECRET-TRANSCRIPT-WORDS", "start_ms": 0, "end_ms": 1500},
            {"role": "user", "text": "Hi there", "start_ms": 1800, "duration_ms": 700}
        ]
    })
}

/// A small valid operation A body for `agent_id`.
pub fn send_call_data_body(agent_id: &str, call_id: &str) -> Value {
    serde_json::json!({
        "agentId": agent_id,
        "callId": call_id,
        "transcript": [{"role": "agent", "content": "Hello SECRET-TRANSCRIPT-WORDS", "timestamp": "2026-11-21T10:00:01Z"}],
        "startedAt": "2026-11-21T10:00:00Z",
        "endedAt": "2026-11-21T10:01:00Z",
        "metadata": {"durationSeconds": 60, "callDirection": "inbound", "callerPhone": "+14155550199", "outcome": "ok"}
    })
}
