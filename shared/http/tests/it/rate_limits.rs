//! Per-workspace fairness through the handler: a workspace over its limit is answered 429
//! with `Retry-After`, writing nothing, and other workspaces are not. The limiter itself is
//! tested in call-ingest-store (`limits`).

use std::time::{Duration, Instant};

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_store::directory::scopes::Scopes;
use testkit::Tables;

#[tokio::test]
async fn a_workspace_over_its_limit_gets_429_with_retry_after_and_other_workspaces_do_not() {
    let t = Tables::new().await;
    let backend = t.backend(&[("RATE_LIMIT_PER_SECOND", "1000")]);
    let d = backend.directory();
    let (w1, w2) = (d.create_workspace("one").await.unwrap().id, d.create_workspace("two").await.unwrap().id);
    d.set_rate_limit(w1, Some(1)).await.unwrap();
    let mut keys = Vec::new();
    for ws in [w1, w2] {
        d.create_agent(ws, "desk", None, None).await.unwrap();
        keys.push(format!("Bearer {}", d.create_api_key(ws, "k", Scopes::DEFAULT).await.unwrap().token));
    }
    let post = |ws: u64, key: &str, call_id: &str| {
        let ws = ws.to_string();
        let q = [("workspace_id", ws.as_str()), ("agent_remote_identifier", "desk")];
        let r = request(Operation::CreateCall, Some(key), &q, &create_call_body(call_id));
        send(&backend, Operation::CreateCall, r)
    };
    // Three requests well inside a second or two: at most two seconds, so at most two are
    // admitted.
    let started = Instant::now();
    let mut limited = Vec::new();
    for i in 0..3 {
        let answer = post(w1, &keys[0], &format!("c-{i}")).await;
        if answer.status == 429 {
            limited.push(answer);
        } else {
            assert_eq!(answer.status, 201, "{}", answer.body);
        }
    }
    assert!(started.elapsed() < Duration::from_secs(1), "too slow to test a per-second limit");
    let answer = limited.first().expect("a workspace limited to 1 request per second sent 3 and got no 429");
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert_eq!(answer.header("content-type"), Some("application/problem+json"));
    assert!(answer.header("x-request-id").is_some());
    assert_eq!(answer.body["type"].as_str().map(|t| t.ends_with("too-many-requests")), Some(true), "{}", answer.body);
    // A refused call was not stored.
    let heads = t
        .scan(&t.calls)
        .await
        .iter()
        .filter(|i| call_ingest_store::calls::item::get_s(i, "sk") == Some("HEAD"))
        .count();
    assert_eq!(heads, 3 - limited.len());
    // The other workspace is not held back.
    for i in 0..3 {
        assert_eq!(post(w2, &keys[1], &format!("d-{i}")).await.status, 201);
    }
    t.delete().await;
}
