//! Per-workspace fairness through the handler: a workspace over its send budget has its
//! calls accepted (202), kept as pending and committed at its rate by the sweep; only a
//! flood far past the budget is answered 429 with `Retry-After`, writing nothing; other
//! workspaces are not held back. The limiter itself is tested in call-ingest-store
//! (`limits`).

use std::time::{Duration, Instant};

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_http::Endpoint;
use call_ingest_store::calls::item::get_s;
use call_ingest_store::calls::pending::{is_paced, PREFIX};
use call_ingest_store::directory::limits::FLOOD_FACTOR;
use call_ingest_store::directory::scopes::Scopes;
use lambda_http::http::Method;
use testkit::Tables;

#[tokio::test]
async fn a_workspace_over_its_send_budget_is_accepted_and_only_a_flood_gets_429() {
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
    // Sends at a budget of 1 a second, until a flood is refused: every one before is
    // stored (201) or accepted (202).
    let (mut created, mut accepted, mut limited) = (Vec::new(), Vec::new(), None);
    let started = Instant::now();
    for i in 0..200 {
        let call_id = format!("c-{i}");
        let answer = post(w1, &keys[0], &call_id).await;
        match answer.status {
            201 => created.push(call_id),
            202 => {
                assert_eq!(answer.body["status"], "accepted", "{}", answer.body);
                accepted.push(call_id)
            }
            429 => {
                limited = Some(answer);
                break;
            }
            other => panic!("{other}: {}", answer.body),
        }
    }
    let answer = limited.expect("a flood of sends at a budget of 1 a second was never refused");
    let seconds = started.elapsed().as_secs() + 1;
    assert!(accepted.len() + created.len() >= FLOOD_FACTOR as usize - 1, "a flood is 10 times the budget");
    assert!(!accepted.is_empty(), "no send over the budget was paced");
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert_eq!(answer.header("content-type"), Some("application/problem+json"));
    assert!(answer.header("x-request-id").is_some());
    assert_eq!(answer.body["type"].as_str().map(|t| t.ends_with("too-many-requests")), Some(true), "{}", answer.body);
    let heads = || async { t.scan(&t.calls).await.iter().filter(|i| get_s(i, "sk") == Some("HEAD")).count() };
    // Stored now: the budget (plus the one each instance takes uncounted) in each second.
    assert!(created.len() as u64 <= 2 * seconds, "{} stored in {seconds} s", created.len());
    assert_eq!(heads().await, created.len());
    // The accepted ones are pending, each waiting for the budget; the refused one is nowhere.
    let pending: Vec<String> = t.objects().await.into_iter().filter(|k| k.starts_with(PREFIX)).collect();
    assert_eq!(pending.len(), accepted.len());
    // (One whose write ran out of time on a loaded machine is pending unpaced.)
    assert!(pending.iter().any(|k| is_paced(k)), "no copy of a send over the budget is paced: {pending:?}");
    // The other workspace is not held back.
    for i in 0..3 {
        assert_eq!(post(w2, &keys[1], &format!("d-{i}")).await.status, 201);
    }
    // The sweep commits the accepted calls at the workspace's rate: at most 2 a second.
    let sweep_started = Instant::now();
    let later = call_ingest_store::calls::now_ms() + 1;
    let sweep = backend.sweep_pending(later, Instant::now() + Duration::from_secs(60)).await.unwrap();
    assert_eq!(sweep.committed, accepted.len(), "{sweep:?}");
    let paced = sweep_started.elapsed().as_secs_f64();
    assert!(paced + 1.0 >= accepted.len() as f64 / 2.0, "{} calls committed in {paced:.1} s", accepted.len());
    assert_eq!(heads().await, created.len() + accepted.len() + 3);
    t.delete().await;
}

#[tokio::test]
async fn reads_have_a_budget_of_their_own_and_over_it_get_429() {
    let t = Tables::new().await;
    let backend = t.backend(&[("RATE_LIMIT_PER_SECOND", "1000")]);
    let d = backend.directory();
    let ws = d.create_workspace("one").await.unwrap().id;
    d.set_rate_limit(ws, Some(1)).await.unwrap();
    d.create_agent(ws, "desk", None, None).await.unwrap();
    let key = format!("Bearer {}", d.create_api_key(ws, "k", Scopes::ALL).await.unwrap().token);
    let w = ws.to_string();
    let q = [("workspace_id", w.as_str())];
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let answer =
            send(&backend, Endpoint::ListCalls, read_request(Method::GET, "/api/v1/public/calls", &[], Some(&key), &q))
                .await;
        statuses.push(answer.status);
        if answer.status == 429 {
            assert_eq!(answer.header("retry-after"), Some("1"));
            break;
        }
    }
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    // Sends draw on their own budget: the first of this second is stored.
    let q = [("workspace_id", w.as_str()), ("agent_remote_identifier", "desk")];
    let r = request(Operation::CreateCall, Some(&key), &q, &create_call_body("after-reads"));
    assert_eq!(send(&backend, Operation::CreateCall, r).await.status, 201);
    t.delete().await;
}

/// A read costs a unit per MiB it answers: three reads of a 2.5 MB raw body (3 units each)
/// spend a budget of 4 that three small reads would not.
#[tokio::test]
async fn reads_are_counted_by_the_read_units_they_answer() {
    let t = Tables::new().await;
    let backend = t.backend(&[("RATE_LIMIT_PER_SECOND", "1000")]);
    let d = backend.directory();
    let ws = d.create_workspace("one").await.unwrap().id;
    d.create_agent(ws, "desk", None, None).await.unwrap();
    let key = format!("Bearer {}", d.create_api_key(ws, "k", Scopes::ALL).await.unwrap().token);
    d.set_rate_limit(ws, Some(4)).await.unwrap();
    let w = ws.to_string();
    let q = [("workspace_id", w.as_str()), ("agent_remote_identifier", "desk")];
    let body: serde_json::Value = serde_json::from_slice(&callgen::create_call_bytes(2_500_000, 1)).unwrap();
    let stored = send(&backend, Operation::CreateCall, request(Operation::CreateCall, Some(&key), &q, &body)).await;
    assert_eq!(stored.status, 201, "{}", stored.body);
    let id = stored.body["id"].as_u64().unwrap().to_string();
    let second = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    // Three reads inside one wall-clock second (tried again if a second boundary fell
    // between), each try by a fresh instance: the units a read answers beyond its first are
    // reported with the instance's next read, so a try that crossed a second would carry
    // them into the next.
    let within_a_second = |path: &'static str| {
        let (t, id, key, w) = (&t, &id, &key, &w);
        let endpoint = if path.ends_with("/raw") { Endpoint::GetRawCall } else { Endpoint::CallRevisions };
        async move {
            loop {
                let backend = t.backend(&[("RATE_LIMIT_PER_SECOND", "1000")]);
                let read = || {
                    let r = read_request(Method::GET, path, &[("id", id)], Some(key), &[("workspace_id", w.as_str())]);
                    call_ingest_http::handle(&backend, endpoint, r)
                };
                let into_second = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
                tokio::time::sleep(Duration::from_millis(1005 - u64::from(into_second.subsec_millis()))).await;
                let started = second();
                let statuses =
                    [read().await.status().as_u16(), read().await.status().as_u16(), read().await.status().as_u16()];
                if second() == started {
                    return statuses;
                }
            }
        }
    };
    assert_eq!(within_a_second("/api/v1/public/call/{id}/revisions").await, [200, 200, 200], "small reads");
    assert_eq!(within_a_second("/api/v1/public/call/{id}/raw").await, [200, 200, 429], "3 units each");
    t.delete().await;
}
