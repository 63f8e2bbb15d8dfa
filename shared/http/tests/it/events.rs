//! The files in `events/` fed straight to the handler (as Lambda would), with the local
//! DynamoDB, each giving its documented status; plus the statuses no event file covers.

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_http::{handle, Backend, Endpoint};
use call_ingest_store::directory::credentials::Secret;
use call_ingest_store::directory::scopes::Scopes;
use lambda_http::http::Method;
use testkit::Tables;

/// The key, workspace and agents the event files carry (see events/README.md).
const EVENTS_KEY: &str = "cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6";

async fn app_with_event_fixtures(t: &Tables) -> Backend {
    let backend = t.backend(&[]);
    let d = &backend.directory();
    assert_eq!(d.create_workspace("events").await.unwrap().id, 1);
    d.create_agent(1, "events-agent", Some("Events"), Some("agt_events")).await.unwrap();
    d.register_api_key(1, "events", Scopes::ALL, Secret::from_token(EVENTS_KEY.to_owned())).await.unwrap();
    backend
}

fn event(path: &str) -> lambda_http::Request {
    let text = std::fs::read_to_string(testkit::root().join("events").join(path)).unwrap();
    lambda_http::request::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `path` as Lambda hands it to a function (`call_ingest_http::answer`, the functions' entry), with
/// the request id `invocation-of-test`; the answer read back from API Gateway's format.
async fn invoke(backend: &Backend, endpoint: Endpoint, path: &str) -> Answer {
    let text = std::fs::read_to_string(testkit::root().join("events").join(path)).unwrap();
    let mut context = lambda_http::Context::default();
    context.request_id = "invocation-of-test".into();
    let raw = serde_json::value::RawValue::from_string(text).unwrap();
    let out = call_ingest_http::answer(backend, endpoint, lambda_http::LambdaEvent::new(raw, context)).await;
    let mut headers = lambda_http::http::HeaderMap::new();
    for (name, value) in out["headers"].as_object().into_iter().flatten() {
        let name: lambda_http::http::HeaderName = name.parse().unwrap();
        headers.insert(name, value.as_str().unwrap().parse().unwrap());
    }
    // REST API (payload 1.0) answers carry them here.
    for (name, values) in out["multiValueHeaders"].as_object().into_iter().flatten() {
        let name: lambda_http::http::HeaderName = name.parse().unwrap();
        headers.insert(name, values[0].as_str().unwrap().parse().unwrap());
    }
    let body = out["body"].as_str().unwrap_or_default();
    let body = match out["isBase64Encoded"].as_bool() {
        Some(true) => base64_decode(body),
        _ => body.as_bytes().to_vec(),
    };
    let body = match headers.get("content-encoding").map(|v| v.as_bytes()) {
        Some(b"gzip") => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut out).unwrap();
            out
        }
        _ => body,
    };
    Answer {
        status: out["statusCode"].as_u64().unwrap() as u16,
        headers,
        body: serde_json::from_slice(&body).unwrap_or_default(),
    }
}

/// Standard base64, as API Gateway's `body` carries binary answers.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|c| *c != b'=').map(value).collect();
    digits
        .chunks(4)
        .flat_map(|c| {
            let n = c.iter().enumerate().fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
            n.to_be_bytes()[1..c.len()].to_vec()
        })
        .collect()
}

#[tokio::test]
async fn every_event_file_gives_its_documented_status() {
    let t = Tables::new().await;
    let backend = app_with_event_fixtures(&t).await;
    let (create, send) = (Endpoint::from(Operation::CreateCall), Endpoint::from(Operation::SendCallData));
    let cases = [
        ("create-call/valid.json", create, 201),
        ("create-call/gzip.json", create, 201),
        ("create-call/unreadable-header.json", create, 400),
        ("create-call/unreadable-query.json", create, 400),
        ("send-call-data/not-utf8.json", send, 400),
        ("create-call/replay.json", create, 200),
        ("create-call/invalid-body.json", create, 422),
        ("create-call/missing-credential.json", create, 401),
        ("create-call/too-large.json", create, 413),
        ("create-call/rest-v1-valid.json", create, 201),
        ("send-call-data/valid.json", send, 201),
        ("send-call-data/replay.json", send, 200),
        ("send-call-data/invalid-body.json", send, 422),
        ("send-call-data/missing-credential.json", send, 401),
        ("send-call-data/too-large.json", send, 413),
        ("get-call/by-provider-call-id.json", Endpoint::GetCall, 200),
        ("get-call/by-id-missing.json", Endpoint::GetCall, 404),
        ("get-call/missing-credential.json", Endpoint::GetCall, 401),
        ("list-calls/page.json", Endpoint::ListCalls, 200),
        ("list-calls/forged-cursor.json", Endpoint::ListCalls, 400),
        ("call-revisions/list.json", Endpoint::CallRevisions, 200),
        ("call-revisions/first.json", Endpoint::CallRevisions, 200),
        ("get-call-raw/current.json", Endpoint::GetRawCall, 200),
        ("erase-call/missing-credential.json", Endpoint::EraseCall, 401),
        ("erase-call/erase.json", Endpoint::EraseCall, 200),
    ];
    let mut ids = std::collections::HashMap::new();
    for (file, op, status) in cases {
        let a = invoke(&backend, op, file).await;
        assert_eq!(a.status, status, "{file}: {}", a.body);
        assert_eq!(a.header("x-request-id"), Some("invocation-of-test"), "{file}: X-Request-Id");
        assert_eq!(a.header("cache-control"), Some("no-store"), "{file}");
        // The reading events name call 1: the first call the events store.
        let first = Some(serde_json::json!("evt-call-0001"));
        match file {
            "get-call/by-provider-call-id.json" | "call-revisions/first.json" => {
                assert_eq!(a.header("content-encoding"), Some("gzip"), "it takes gzip");
                assert_eq!(a.body["document"]["call"]["call_id"], "evt-call-0001");
                assert_eq!(Some(&a.body["id"]), ids.get(&first));
                assert_eq!(a.body["id"], 1);
                continue;
            }
            "list-calls/page.json" => {
                let listed: Vec<&str> = a.body["calls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["provider_call_id"].as_str().unwrap())
                    .collect();
                assert!(listed.contains(&"evt-call-0001") && listed.contains(&"evt-a-0001"), "{listed:?}");
                continue;
            }
            "call-revisions/list.json" => {
                assert_eq!(a.body["revisions"].as_array().unwrap().len(), 1, "the replay wrote no revision");
                continue;
            }
            "get-call-raw/current.json" => {
                assert_eq!(a.body["call_id"], "evt-call-0001", "the body as sent");
                continue;
            }
            "erase-call/erase.json" => {
                assert_eq!((a.body["id"].as_u64(), a.body["erased"].as_bool()), (Some(1), Some(true)));
                assert!(backend.store().get_call(1, "evt-call-0001", false).await.unwrap().is_none());
                continue;
            }
            _ => {}
        }
        let id = a.body.get("id").or_else(|| a.body.get("serviceCallId")).cloned();
        if let Some(id) = id {
            let call = a.body.get("provider_call_id").or_else(|| a.body.get("callId")).cloned();
            if let Some(first) = ids.insert(call, id.clone()) {
                assert_eq!(first, id, "{file}: a replay answers the same id");
            }
        }
    }
    let stored = backend.store().get_call(1, "evt-call-rest-0001", true).await.unwrap().unwrap();
    assert!(stored.revisions.is_empty());
    assert_eq!(stored.current.document_value()["call"]["user_sentiment"], "positive");
    t.delete().await;
}

#[test]
fn the_unreadable_event_is_one_lambda_http_cannot_read() {
    let text = std::fs::read_to_string(testkit::root().join("events/create-call/unreadable-header.json")).unwrap();
    assert!(lambda_http::request::from_str(&text).is_err(), "lambda_http reads it: the event tests nothing");
}

#[test]
fn lambda_http_panics_on_the_unreadable_query_event() {
    let text = std::fs::read_to_string(testkit::root().join("events/create-call/unreadable-query.json")).unwrap();
    let read = std::panic::catch_unwind(|| lambda_http::request::from_str(&text).map(|_| ()));
    assert!(read.is_err(), "lambda_http turns it into a request: the event tests nothing");
}

#[tokio::test]
async fn other_methods_get_405_with_allow() {
    let t = Tables::new().await;
    let backend = app_with_event_fixtures(&t).await;
    let mut req = event("create-call/valid.json");
    *req.method_mut() = Method::PUT;
    let a = read(handle(&backend, Operation::CreateCall, req).await);
    assert_eq!((a.status, a.header("allow")), (405, Some("GET, POST")), "GET on that path is get-call's");
    let mut req = event("send-call-data/valid.json");
    *req.method_mut() = Method::GET;
    let a = read(handle(&backend, Operation::SendCallData, req).await);
    assert_eq!((a.status, a.header("allow")), (405, Some("POST")));
    t.delete().await;
}

#[tokio::test]
async fn a_body_that_is_not_json_is_400_and_a_non_json_content_type_415() {
    let t = Tables::new().await;
    let backend = app_with_event_fixtures(&t).await;
    let auth = format!("Bearer {EVENTS_KEY}");
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "events-agent")];
    let mut req = request(Operation::CreateCall, Some(&auth), &q, &serde_json::json!({}));
    *req.body_mut() = lambda_http::Body::from("{not json");
    let a = send(&backend, Operation::CreateCall, req).await;
    assert_eq!((a.status, a.header("content-type")), (400, Some("application/problem+json")));
    let mut req = request(Operation::CreateCall, Some(&auth), &q, &serde_json::json!([1, 2]));
    assert_eq!(send(&backend, Operation::CreateCall, req).await.status, 400);
    req = request(Operation::CreateCall, Some(&auth), &q, &create_call_body("ct"));
    req.headers_mut().insert("content-type", "text/plain".parse().unwrap());
    assert_eq!(send(&backend, Operation::CreateCall, req).await.status, 415);
    let a = send(
        &backend,
        Operation::CreateCall,
        request(Operation::CreateCall, Some(&auth), &[("workspace_id", "x")], &create_call_body("q")),
    )
    .await;
    assert_eq!(a.status, 422);
    let pointers: Vec<&str> =
        a.body["errors"].as_array().unwrap().iter().filter_map(|e| e["pointer"].as_str()).collect();
    assert_eq!(pointers, ["/query/agent_remote_identifier", "/query/workspace_id"]);
    t.delete().await;
}

#[tokio::test]
async fn operation_a_errors_carry_success_false_and_a_message() {
    let t = Tables::new().await;
    let backend = app_with_event_fixtures(&t).await;
    let a = read(handle(&backend, Operation::SendCallData, event("send-call-data/invalid-body.json")).await);
    assert_eq!(a.status, 422);
    assert_eq!(a.body["success"], false);
    assert!(a.body["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(a.body["errors"].as_array().is_some_and(|e| !e.is_empty()));
    t.delete().await;
}

#[tokio::test]
async fn unreachable_dynamodb_is_503_with_retry_after_and_nothing_internal() {
    let t = Tables::new().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let dead = testkit::client_at(&format!("http://127.0.0.1:{port}")).await;
    let backend = Backend::new(t.config(&[]), dead, t.s3.clone());
    let a = read(handle(&backend, Operation::CreateCall, event("create-call/valid.json")).await);
    assert_eq!((a.status, a.header("retry-after")), (503, Some("1")));
    let text = a.body.to_string();
    assert!(!text.contains("127.0.0.1") && !text.contains("dispatch"), "{text}");
    t.delete().await;
}
