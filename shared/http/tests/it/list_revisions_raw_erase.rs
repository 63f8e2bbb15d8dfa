//! Listing calls, their revisions, their raw bodies, and erasing them: through the handler
//! and a real DynamoDB protocol. Tenancy (ids, cursors, revisions of another workspace are
//! 404 or 400, never data), scopes, pagination while calls arrive, erase then
//! read / list / resubmit.

use std::collections::{BTreeMap, HashSet};

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_http::Endpoint;
use call_ingest_store::calls::item::{get_s, parse_call_pk};
use call_ingest_store::directory::scopes::{Scope, Scopes};
use lambda_http::http::Method;
use lambda_http::RequestExt;
use serde_json::{json, Value};
use testkit::{two_workspaces, TwoWorkspaces};

const CALL: &str = "/api/v1/public/call/{id}";
const CALLS: &str = "/api/v1/public/calls";

/// Both workspaces' keys may send, read and erase; workspace 1 has an agent `phone` too.
type Fixture = TwoWorkspaces;

async fn fixture() -> Fixture {
    let all = Scopes::of([Scope::Send, Scope::Read, Scope::Erase]);
    two_workspaces(all, &["phone"], &[("RATE_LIMIT_PER_SECOND", "1000")]).await
}

/// Stores `body` under agent `agent` of `workspace` (create-call), answering its id.
async fn post_as(f: &Fixture, key: &str, workspace: &str, agent: &str, body: &Value) -> u64 {
    let q = [("workspace_id", workspace), ("agent_remote_identifier", agent)];
    let a = send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, Some(key), &q, body)).await;
    assert!(matches!(a.status, 200 | 201), "{} {}", a.status, a.body);
    a.body["id"].as_u64().unwrap()
}

/// A small call that started at `start` (epoch seconds).
fn call_at(call_id: &str, start: u64) -> Value {
    let mut body = create_call_body(call_id);
    body["start_timestamp"] = json!(start);
    body["end_timestamp"] = json!(start + 42);
    body
}

async fn list(f: &Fixture, key: &str, query: &[(&str, &str)]) -> Answer {
    send(&f.backend, Endpoint::ListCalls, read_request(Method::GET, CALLS, &[], Some(key), query)).await
}

async fn at(f: &Fixture, endpoint: Endpoint, method: Method, path: &str, params: &[(&str, &str)], key: &str) -> Answer {
    at_with(f, endpoint, method, path, params, key, &[("workspace_id", "1")]).await
}

async fn at_with(
    f: &Fixture,
    endpoint: Endpoint,
    method: Method,
    path: &str,
    params: &[(&str, &str)],
    key: &str,
    query: &[(&str, &str)],
) -> Answer {
    send(&f.backend, endpoint, read_request(method, path, params, Some(key), query)).await
}

fn ids(page: &Answer) -> Vec<String> {
    page.body["calls"].as_array().unwrap().iter().map(|c| c["provider_call_id"].as_str().unwrap().to_owned()).collect()
}

/// Every page of a listing, following `next_cursor`; `between` runs after each page.
async fn all_pages(f: &Fixture, query: &[(&str, &str)], mut between: impl AsyncFnMut(usize)) -> Vec<Value> {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        let mut q: Vec<(&str, &str)> = query.to_vec();
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let a = list(f, &f.key1, &q).await;
        assert_eq!(a.status, 200, "{}", a.body);
        listed.extend(a.body["calls"].as_array().unwrap().iter().cloned());
        match a.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return listed,
        }
        between(page).await;
    }
    unreachable!()
}

#[tokio::test]
async fn pages_list_every_call_once_newest_first_while_calls_arrive() {
    let f = fixture().await;
    // 30 calls, 6 of them starting at the same second (ties are ordered by call id).
    let mut before = BTreeMap::new();
    for i in 0..30u64 {
        let start = 1_763_700_000 + if i < 6 { 500 } else { i * 37 };
        let call_id = format!("page-{i:02}");
        post_as(&f, &f.key1, "1", "desk", &call_at(&call_id, start)).await;
        before.insert(call_id, start);
    }
    // Another workspace's calls never show.
    post_as(&f, &f.key2, "2", "desk", &call_at("page-other", 1_763_700_100)).await;

    // After each page, calls arrive at once (concurrently): one newer than everything, one
    // older than everything, and one tied with the 6.
    let mut arrived = Vec::new();
    let listed = all_pages(&f, &[("workspace_id", "1"), ("limit", "7")], async |page| {
        let bodies = [
            (format!("late-new-{page}"), 1_763_800_000 + page as u64),
            (format!("late-old-{page}"), 1_763_600_000 - page as u64),
            (format!("late-tie-{page}"), 1_763_700_500),
        ];
        let calls: Vec<Value> = bodies.iter().map(|(id, start)| call_at(id, *start)).collect();
        futures_util::future::join_all(calls.iter().map(|body| post_as(&f, &f.key1, "1", "desk", body))).await;
        arrived.extend(bodies.into_iter().map(|(id, _)| id));
    })
    .await;

    let names: Vec<&str> = listed.iter().map(|c| c["provider_call_id"].as_str().unwrap()).collect();
    let unique: HashSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "no call listed twice: {names:?}");
    for call_id in before.keys() {
        assert!(unique.contains(call_id.as_str()), "{call_id} was there before the first page and was skipped");
    }
    assert!(!unique.contains("page-other"));
    // Calls older than where the listing stood are listed when it gets there.
    for old in arrived.iter().filter(|id| id.starts_with("late-old-")) {
        assert!(unique.contains(old.as_str()), "{old} arrived behind the listing's position and was skipped");
    }
    let starts: Vec<&str> = listed.iter().map(|c| c["listed_at"].as_str().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] >= w[1]), "newest first: {starts:?}");
    // Summaries only.
    let first = &listed[0];
    assert!(first.get("document").is_none() && !first.to_string().contains("SECRET-TRANSCRIPT-WORDS"));
    for field in ["id", "provider_call_id", "agent_remote_identifier", "started_at", "duration_ms", "revision"] {
        assert!(!first[field].is_null(), "{field} in {first}");
    }
    assert_eq!(first["agent_remote_identifier"], "desk");
}

#[tokio::test]
async fn a_cursor_is_refused_for_another_workspace_agent_range_or_when_altered() {
    let f = fixture().await;
    for i in 0..5u64 {
        post_as(&f, &f.key1, "1", "desk", &call_at(&format!("c-{i}"), 1_763_700_000 + i)).await;
        post_as(&f, &f.key2, "2", "desk", &call_at(&format!("c-{i}"), 1_763_700_000 + i)).await;
    }
    let q = [("workspace_id", "1"), ("limit", "2")];
    let first = list(&f, &f.key1, &q).await;
    assert_eq!(ids(&first), ["c-4", "c-3"]);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    let second = list(&f, &f.key1, &[("workspace_id", "1"), ("limit", "2"), ("cursor", &cursor)]).await;
    assert_eq!(ids(&second), ["c-2", "c-1"]);

    let refused = |a: &Answer| {
        assert_eq!(a.status, 400, "{}", a.body);
        assert_eq!(a.body["type"], "urn:call-ingest:problem:invalid-cursor");
        assert!(a.body.get("calls").is_none());
    };
    // Workspace 2's own key with workspace 1's cursor: its calls have the same ids and
    // times, yet nothing is listed.
    refused(&list(&f, &f.key2, &[("workspace_id", "2"), ("cursor", &cursor)]).await);
    refused(
        &list(&f, &f.key1, &[("workspace_id", "1"), ("agent_remote_identifier", "desk"), ("cursor", &cursor)]).await,
    );
    refused(&list(&f, &f.key1, &[("workspace_id", "1"), ("started_from", "1000"), ("cursor", &cursor)]).await);
    let mut altered = cursor.clone().into_bytes();
    altered[3] = if altered[3] == b'A' { b'B' } else { b'A' };
    refused(&list(&f, &f.key1, &[("workspace_id", "1"), ("cursor", std::str::from_utf8(&altered).unwrap())]).await);
    refused(&list(&f, &f.key1, &[("workspace_id", "1"), ("cursor", "not-a-cursor")]).await);
    refused(&list(&f, &f.key1, &[("workspace_id", "1"), ("cursor", &"A".repeat(5000))]).await);
    // Signed with another key (another deployment): refused too.
    let other = f.t.backend(&[("CURSOR_SECRET", "another-secret-of-at-least-32-characters")]);
    let a = send(
        &other,
        Endpoint::ListCalls,
        read_request(Method::GET, CALLS, &[], Some(&f.key1), &[("workspace_id", "1"), ("cursor", &cursor)]),
    )
    .await;
    refused(&a);
}

#[tokio::test]
async fn listings_filter_by_agent_and_start_and_list_calls_without_a_start_by_arrival() {
    let f = fixture().await;
    post_as(&f, &f.key1, "1", "desk", &call_at("d-1", 1_763_700_000)).await;
    post_as(&f, &f.key1, "1", "phone", &call_at("p-1", 1_763_700_100)).await;
    post_as(&f, &f.key1, "1", "desk", &call_at("d-2", 1_763_700_200)).await;
    // Send Call Data without `startedAt`: no start time.
    let desk = f.backend.directory().list_agents(1).await.unwrap().into_iter().find(|a| a.remote_id == "desk").unwrap();
    let mut no_start = send_call_data_body(&desk.id, "no-start");
    no_start.as_object_mut().unwrap().remove("startedAt");
    let r = request(Operation::SendCallData, Some(&f.key1), &[], &no_start);
    assert_eq!(send(&f.backend, Operation::SendCallData, r).await.status, 201);

    // Revised with a start time (and through the other operation): it keeps its place, so
    // that a client paging meanwhile neither sees it twice nor misses it.
    let mut revised = call_at("no-start", 1_763_600_000);
    revised["call_status"] = json!("ended");
    post_as(&f, &f.key1, "1", "desk", &revised).await;

    let all = list(&f, &f.key1, &[("workspace_id", "1")]).await;
    assert_eq!(ids(&all), ["no-start", "d-2", "p-1", "d-1"], "received now, so newest");
    assert_eq!(all.body["calls"][0]["revision"], 2);

    // Each revision says which operation it came through.
    let id = all.body["calls"][0]["id"].to_string();
    let one = "/api/v1/public/call/{id}/revisions/{n}";
    for (n, operation) in [("1", "send_call_data"), ("2", "create_call")] {
        let a = at(&f, Endpoint::CallRevisions, Method::GET, one, &[("id", &id), ("n", n)], &f.key1).await;
        assert_eq!(a.body["operation"], operation, "revision {n}");
    }
    assert_eq!(all.body["calls"][0]["started_at"], "2025-11-20T00:53:20Z", "its start, as now known");
    assert!(all.body["calls"][0]["listed_at"].as_str().unwrap() > "2026", "still placed by when it was received");
    assert_eq!(all.body["calls"][1]["listed_at"], all.body["calls"][1]["started_at"]);
    assert_eq!(all.body["next_cursor"], Value::Null);
    let desk = list(&f, &f.key1, &[("workspace_id", "1"), ("agent_remote_identifier", "desk")]).await;
    assert_eq!(ids(&desk), ["no-start", "d-2", "d-1"]);
    let range = [("workspace_id", "1"), ("started_from", "2025-11-21T04:41:40Z"), ("started_before", "1763700200000")];
    assert_eq!(ids(&list(&f, &f.key1, &range).await), ["p-1"], "from included, before excluded");

    let bad = list(&f, &f.key1, &[("workspace_id", "1"), ("limit", "101"), ("started_from", "yesterday")]).await;
    assert_eq!(bad.status, 422);
    let mut pointers: Vec<&str> =
        bad.body["errors"].as_array().unwrap().iter().map(|e| e["pointer"].as_str().unwrap()).collect();
    pointers.sort();
    assert_eq!(pointers, ["/query/limit", "/query/started_from"], "{}", bad.body);
    for limit in ["0", "x", "-1"] {
        assert_eq!(list(&f, &f.key1, &[("workspace_id", "1"), ("limit", limit)]).await.status, 422, "{limit}");
    }
    let backwards = [("workspace_id", "1"), ("started_from", "2000"), ("started_before", "1000")];
    assert_eq!(list(&f, &f.key1, &backwards).await.status, 422);
    let unknown = list(&f, &f.key1, &[("workspace_id", "1"), ("agent_remote_identifier", "nobody")]).await;
    assert_eq!((unknown.status, unknown.body["type"].as_str()), (404, Some("urn:call-ingest:problem:agent-not-found")));
    // An agent only another workspace has is not found either.
    f.backend.directory().create_agent(2, "theirs-only", None, None).await.unwrap();
    let theirs = list(&f, &f.key1, &[("workspace_id", "1"), ("agent_remote_identifier", "theirs-only")]).await;
    assert_eq!((theirs.status, theirs.body["detail"].clone()), (unknown.status, unknown.body["detail"].clone()));
    // Another workspace's listing is not ours to read (403).
    assert_eq!(list(&f, &f.key2, &[("workspace_id", "1")]).await.status, 403);
    assert_eq!(list(&f, &f.key1, &[]).await.status, 422);
}

#[tokio::test]
async fn revisions_list_and_read_back_and_stay_in_their_workspace() {
    let f = fixture().await;
    let mut body = call_at("rev", 1_763_700_000);
    let id = post_as(&f, &f.key1, "1", "desk", &body).await.to_string();
    body["call_status"] = json!("ended");
    post_as(&f, &f.key1, "1", "desk", &body).await;
    body["call_status"] = json!("error");
    post_as(&f, &f.key1, "1", "desk", &body).await;
    let revisions = "/api/v1/public/call/{id}/revisions";
    let one = "/api/v1/public/call/{id}/revisions/{n}";

    let a = at(&f, Endpoint::CallRevisions, Method::GET, revisions, &[("id", &id)], &f.key1).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let listed = a.body["revisions"].as_array().unwrap();
    assert_eq!(listed.iter().map(|r| r["revision"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3]);
    let stored = f.backend.store().get_call(1, "rev", true).await.unwrap().unwrap();
    assert_eq!(listed[0]["digest"], stored.revisions[0].digest.as_str());
    assert_eq!(listed[2]["digest"], stored.current.digest.as_str());
    assert!(listed
        .iter()
        .all(|r| r["received_at"].as_str().unwrap().ends_with('Z') && r["raw_bytes"].as_u64() > Some(0)));

    let first = at(&f, Endpoint::CallRevisions, Method::GET, one, &[("id", &id), ("n", "1")], &f.key1).await;
    assert_eq!(first.status, 200);
    assert_eq!(
        (first.body["revision"].as_u64(), first.body["document"]["call"]["call_status"].as_str()),
        (Some(1), None)
    );
    let second = at(&f, Endpoint::CallRevisions, Method::GET, one, &[("id", &id), ("n", "2")], &f.key1).await;
    assert_eq!(second.body["document"]["call"]["call_status"], "ended");
    let etag = second.header("etag").unwrap().to_owned();
    let q = [("workspace_id", "1")];
    let mut r = read_request(Method::GET, one, &[("id", &id), ("n", "2")], Some(&f.key1), &q);
    r.headers_mut().insert("if-none-match", etag.parse().unwrap());
    assert_eq!(send(&f.backend, Endpoint::CallRevisions, r).await.status, 304);
    for n in ["4", "0", "x"] {
        let a = at(&f, Endpoint::CallRevisions, Method::GET, one, &[("id", &id), ("n", n)], &f.key1).await;
        assert_eq!(a.status, 404, "{n}");
    }

    // Workspace 2 asking for workspace 1's call: exactly what a missing one answers.
    let q2 = [("workspace_id", "2")];
    let missing = at_with(&f, Endpoint::CallRevisions, Method::GET, revisions, &[("id", "999999")], &f.key2, &q2).await;
    for (path, params) in [(revisions, vec![("id", id.as_str())]), (one, vec![("id", id.as_str()), ("n", "1")])] {
        let theirs = at_with(&f, Endpoint::CallRevisions, Method::GET, path, &params, &f.key2, &q2).await;
        assert_eq!(theirs.status, 404);
        assert_eq!(
            (theirs.body["type"].clone(), theirs.body["detail"].clone()),
            (missing.body["type"].clone(), missing.body["detail"].clone())
        );
        assert!(!theirs.body.to_string().contains("SECRET"));
    }
}

#[tokio::test]
async fn the_raw_body_comes_back_byte_for_byte_per_revision() {
    let f = fixture().await;
    // Pretty-printed, with an escape and a non-ASCII character: none of it survives a
    // parse and re-serialisation.
    let first = serde_json::to_string_pretty(&call_at("raw-1", 1_763_700_000))
        .unwrap()
        .replace("Hello, this", "H\\u00e9llo caf\u{e9}, this")
        .replace("  ", "\t")
        .into_bytes();
    let second = serde_json::to_vec(&call_at("raw-1", 1_763_700_001)).unwrap();
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let mut id = 0;
    for body in [&first, &second] {
        let mut r = request(Operation::CreateCall, Some(&f.key1), &q, &Value::Null);
        *r.body_mut() = lambda_http::Body::Binary(body.clone());
        let a = send(&f.backend, Operation::CreateCall, r).await;
        assert!(matches!(a.status, 200 | 201), "{}", a.body);
        id = a.body["id"].as_u64().unwrap();
    }
    let id = id.to_string();
    let raw = "/api/v1/public/call/{id}/raw";
    let fetch = |query: Vec<(&'static str, &'static str)>, key: String, headers: Vec<(&'static str, String)>| {
        let id = id.clone();
        let backend = &f.backend;
        async move {
            let mut r = read_request(Method::GET, raw, &[("id", &id)], Some(&key), &query);
            for (k, v) in headers {
                r.headers_mut().insert(k, v.parse().unwrap());
            }
            call_ingest_http::handle(backend, Endpoint::GetRawCall, r).await
        }
    };
    let current = fetch(vec![("workspace_id", "1")], f.key1.clone(), vec![]).await;
    assert_eq!(current.status(), 200);
    assert_eq!(current.body().as_ref(), &second[..]);
    assert_eq!(current.headers()["content-type"], "application/json");
    let earlier = fetch(vec![("workspace_id", "1"), ("revision", "1")], f.key1.clone(), vec![]).await;
    assert_eq!(earlier.body().as_ref(), &first[..], "byte for byte, whitespace and escapes as sent");
    let etag = earlier.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.ends_with("-raw\""), "{etag}");
    let cached =
        fetch(vec![("workspace_id", "1"), ("revision", "1")], f.key1.clone(), vec![("if-none-match", etag.clone())])
            .await;
    assert_eq!((cached.status().as_u16(), cached.headers()["etag"].to_str().unwrap()), (304, etag.as_str()));
    let other_revision =
        fetch(vec![("workspace_id", "1")], f.key1.clone(), vec![("if-none-match", etag.clone())]).await;
    assert_eq!(other_revision.status(), 200, "revision 2's body is another representation");
    // The document's tag is not the raw body's.
    let q = [("workspace_id", "1")];
    let mut r = read_request(
        Method::GET,
        "/api/v1/public/call/{id}/revisions/{n}",
        &[("id", &id), ("n", "1")],
        Some(&f.key1),
        &q,
    );
    r.headers_mut().insert("if-none-match", etag.parse().unwrap());
    assert_eq!(send(&f.backend, Endpoint::CallRevisions, r).await.status, 200);
    assert_eq!(fetch(vec![("workspace_id", "1"), ("revision", "3")], f.key1.clone(), vec![]).await.status(), 404);
    assert_eq!(fetch(vec![("workspace_id", "1"), ("revision", "zero")], f.key1.clone(), vec![]).await.status(), 422);
    let theirs = fetch(vec![("workspace_id", "2")], f.key2.clone(), vec![]).await;
    assert_eq!(theirs.status(), 404);
}

#[tokio::test]
async fn erasing_removes_every_item_and_a_later_submission_is_a_new_call() {
    let f = fixture().await;
    // A large call (its frame in S3) revised once: a head, a revision and an object.
    let big = callgen::create_call(&callgen::Options {
        size: callgen::Size::Bytes(3_000_000),
        seed: 9,
        call_id: Some("erase-me".into()),
    });
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let mut r = request(Operation::CreateCall, Some(&f.key1), &q, &Value::Null);
    *r.body_mut() = lambda_http::Body::Binary(big);
    let id = send(&f.backend, Operation::CreateCall, r).await.body["id"].as_u64().unwrap();
    post_as(&f, &f.key1, "1", "desk", &call_at("erase-me", 1_763_700_000)).await;
    post_as(&f, &f.key1, "1", "desk", &call_at("keep-me", 1_763_700_000)).await;
    let id_text = id.to_string();
    let items_of = |items: &[call_ingest_store::calls::item::Item], call_id: &str| {
        items.iter().filter(|i| get_s(i, "pk").and_then(parse_call_pk) == Some((1, call_id))).count()
    };
    let before = items_of(&f.t.scan(&f.t.calls).await, "erase-me");
    assert_eq!(before, 2, "head and revision");
    assert_eq!(f.t.objects().await.len(), 1, "the large frame is in S3");

    // Other workspaces and other scopes cannot erase it.
    let q2 = [("workspace_id", "2")];
    let theirs = at_with(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", &id_text)], &f.key2, &q2).await;
    assert_eq!((theirs.status, theirs.body["erased"].as_bool()), (200, Some(false)));
    let reader = f.backend.directory().create_api_key(1, "reader", Scopes::of([Scope::Read])).await.unwrap();
    let reader = format!("Bearer {}", reader.token);
    let denied = at(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", &id_text)], &reader).await;
    assert_eq!(
        (denied.status, denied.body["type"].as_str()),
        (403, Some("urn:call-ingest:problem:insufficient-scope"))
    );
    assert!(denied.body["detail"].as_str().unwrap().contains("erase"));
    assert_eq!(items_of(&f.t.scan(&f.t.calls).await, "erase-me"), before);

    let erased = at(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", &id_text)], &f.key1).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(erased.body, json!({"id": id, "erased": true, "items_removed": before}));
    let items = f.t.scan(&f.t.calls).await;
    // Nothing of it remains but a tombstone that names the erased id, and expires.
    let left: Vec<_> =
        items.iter().filter(|i| get_s(i, "pk").and_then(parse_call_pk) == Some((1, "erase-me"))).collect();
    assert_eq!(left.len(), 1, "nothing of it remains but its tombstone: {left:?}");
    let mut attributes: Vec<&str> = left[0].keys().map(String::as_str).collect();
    attributes.sort();
    assert_eq!(
        attributes,
        ["erased_at", "erased_ids", "expires_at", "pk", "sk", "submission"],
        "the tombstone holds no content"
    );
    assert_eq!(items_of(&items, "keep-me"), 1);
    assert_eq!(f.t.objects().await, Vec::<String>::new(), "its frame is gone from S3 too");

    // Read, list, revisions, raw: gone. Erasing again is fine and says so.
    assert_eq!(at(&f, Endpoint::GetCall, Method::GET, CALL, &[("id", &id_text)], &f.key1).await.status, 404);
    let raw = "/api/v1/public/call/{id}/raw";
    assert_eq!(at(&f, Endpoint::GetRawCall, Method::GET, raw, &[("id", &id_text)], &f.key1).await.status, 404);
    let revisions = "/api/v1/public/call/{id}/revisions";
    assert_eq!(at(&f, Endpoint::CallRevisions, Method::GET, revisions, &[("id", &id_text)], &f.key1).await.status, 404);
    assert_eq!(ids(&list(&f, &f.key1, &[("workspace_id", "1")]).await), ["keep-me"]);
    let again = at(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", &id_text)], &f.key1).await;
    assert_eq!(again.body, json!({"id": id, "erased": false, "items_removed": 0}));
    // A path that is no id at all (the document says id >= 1) is 404, as for the readers.
    for bad in ["0", "abc", "-1"] {
        let a = at(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", bad)], &f.key1).await;
        assert_eq!((a.status, a.body["type"].as_str()), (404, Some("urn:call-ingest:problem:call-not-found")), "{bad}");
    }

    // The same provider call id again: a new call, with a new id; the old id stays gone.
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let body = call_at("erase-me", 1_763_700_000);
    let resent =
        send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, Some(&f.key1), &q, &body)).await;
    assert_eq!((resent.status, resent.body["is_new"].as_bool()), (201, Some(true)));
    let new_id = resent.body["id"].as_u64().unwrap();
    assert_ne!(new_id, id);
    assert_eq!(at(&f, Endpoint::GetCall, Method::GET, CALL, &[("id", &id_text)], &f.key1).await.status, 404);
    let stale = at(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", &id_text)], &f.key1).await;
    assert_eq!(stale.body["erased"], false, "the old id does not erase the new call");
    let new = at(&f, Endpoint::GetCall, Method::GET, CALL, &[("id", &new_id.to_string())], &f.key1).await;
    assert_eq!((new.status, new.body["revision"].as_u64()), (200, Some(1)));
}

/// An erase works within the function's deadline less its margin, admission and lookup
/// included: an invocation that waited for an instance (or met a slow table) answers 503
/// with Retry-After, which the gateway's own 503 at its 30 s lacks (seed 52 of `make chaos`),
/// and the call stays whole until an erase with time left removes it.
#[tokio::test]
async fn an_erase_out_of_time_answers_503_with_retry_after_and_erases_nothing() {
    let f = fixture().await;
    let id = post_as(&f, &f.key1, "1", "desk", &call_at("slow-erase", 1_763_700_000)).await.to_string();
    let erase_with = |left_ms: u64| {
        let mut context = lambda_http::Context::default();
        context.deadline = call_ingest_store::calls::now_ms() + left_ms;
        read_request(Method::DELETE, CALL, &[("id", &id)], Some(&f.key1), &[("workspace_id", "1")])
            .with_lambda_context(context)
    };
    let late = send(&f.backend, Endpoint::EraseCall, erase_with(2_000)).await;
    assert_eq!((late.status, late.body["type"].as_str()), (503, Some("urn:call-ingest:problem:unavailable")));
    assert!(late.header("retry-after").is_some(), "{:?}", late.body);
    assert_eq!(at(&f, Endpoint::GetCall, Method::GET, CALL, &[("id", &id)], &f.key1).await.status, 200);
    let in_time = send(&f.backend, Endpoint::EraseCall, erase_with(29_000)).await;
    assert_eq!((in_time.status, in_time.body["erased"].as_bool()), (200, Some(true)), "{}", in_time.body);
}

#[tokio::test]
async fn each_reader_needs_its_scope_and_answers_405_with_its_allow() {
    let f = fixture().await;
    let id = post_as(&f, &f.key1, "1", "desk", &call_at("scoped", 1_763_700_000)).await.to_string();
    let d = f.backend.directory();
    let sender = format!("Bearer {}", d.create_api_key(1, "s", Scopes::of([Scope::Send])).await.unwrap().token);
    let eraser = format!("Bearer {}", d.create_api_key(1, "e", Scopes::of([Scope::Erase])).await.unwrap().token);
    let cases = [
        (Endpoint::ListCalls, Method::GET, CALLS, "read", "GET"),
        (Endpoint::CallRevisions, Method::GET, "/api/v1/public/call/{id}/revisions", "read", "GET"),
        (Endpoint::GetRawCall, Method::GET, "/api/v1/public/call/{id}/raw", "read", "GET"),
        (Endpoint::GetCall, Method::GET, CALL, "read", "GET, DELETE"),
        (Endpoint::EraseCall, Method::DELETE, CALL, "erase", "GET, DELETE"),
    ];
    for (endpoint, method, path, scope, allow) in cases {
        let lacking = if scope == "read" { &eraser } else { &sender };
        let a = at(&f, endpoint, method.clone(), path, &[("id", &id)], lacking).await;
        assert_eq!(a.status, 403, "{path}");
        assert!(a.body["detail"].as_str().unwrap().contains(&format!("`{scope}`")), "{}", a.body);
        let wrong = at(&f, endpoint, Method::PUT, path, &[("id", &id)], &f.key1).await;
        assert_eq!((wrong.status, wrong.header("allow")), (405, Some(allow)), "{path}");
    }
    assert_eq!(at(&f, Endpoint::GetCall, Method::GET, CALL, &[("id", &id)], &sender).await.status, 403);
}

/// The keys of a JSON object.
fn keys(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap_or_else(|| panic!("an object: {v}")).keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn the_documented_examples_have_the_fields_the_handlers_answer() {
    let f = fixture().await;
    let mut body = call_at("doc", 1_763_700_000);
    body["call_status"] = json!("ended");
    body["user_sentiment"] = json!("Positive");
    let id = post_as(&f, &f.key1, "1", "desk", &body).await.to_string();
    let text = std::fs::read_to_string(testkit::root().join("openapi.yaml")).unwrap();
    let doc: Value = serde_norway::from_str(&text).unwrap();
    let example = |name: &str| doc["components"]["responses"][name]["content"]["application/json"]["example"].clone();

    let listed = list(&f, &f.key1, &[("workspace_id", "1")]).await.body;
    assert_eq!(keys(&listed), keys(&example("ListCallsOk")));
    assert_eq!(keys(&listed["calls"][0]), keys(&example("ListCallsOk")["calls"][0]));
    let revisions = "/api/v1/public/call/{id}/revisions";
    let a = at(&f, Endpoint::CallRevisions, Method::GET, revisions, &[("id", &id)], &f.key1).await.body;
    assert_eq!(keys(&a), keys(&example("RevisionsOk")));
    assert_eq!(keys(&a["revisions"][0]), keys(&example("RevisionsOk")["revisions"][0]));
    let got = at(&f, Endpoint::GetCall, Method::GET, CALL, &[("id", &id)], &f.key1).await.body;
    assert_eq!(keys(&got), keys(&example("GetCallOk")));
    let erased = at(&f, Endpoint::EraseCall, Method::DELETE, CALL, &[("id", &id)], &f.key1).await.body;
    assert_eq!(keys(&erased), keys(&example("EraseCallOk")));
}

#[tokio::test]
async fn calls_stored_before_the_listing_indexes_are_listed_after_a_reindex() {
    let f = fixture().await;
    post_as(&f, &f.key1, "1", "desk", &call_at("old-1", 1_763_700_000)).await;
    post_as(&f, &f.key1, "1", "desk", &call_at("new-1", 1_763_700_100)).await;
    // As a head written before this version: no listing attributes.
    f.t.client
        .update_item()
        .table_name(&f.t.calls)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S("CALL#1#old-1".into()))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("HEAD".into()))
        .update_expression("REMOVE listed_ws, listed_ms, agent_key")
        .send()
        .await
        .unwrap();
    assert_eq!(ids(&list(&f, &f.key1, &[("workspace_id", "1")]).await), ["new-1"]);
    assert_eq!(f.backend.store().reindex().await.unwrap(), 1);
    assert_eq!(ids(&list(&f, &f.key1, &[("workspace_id", "1")]).await), ["new-1", "old-1"]);
    let desk = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    assert_eq!(ids(&list(&f, &f.key1, &desk).await), ["new-1", "old-1"]);
    assert_eq!(f.backend.store().reindex().await.unwrap(), 0, "idempotent");
}
