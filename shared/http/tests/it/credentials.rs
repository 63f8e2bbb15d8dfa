//! Every row of the contract's credential table, for both operations, through the handler
//! and a real DynamoDB protocol; and no secret at rest.

use std::time::Duration;

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_http::Backend;
use call_ingest_store::directory::admin::Issued;
use call_ingest_store::directory::scopes::Scopes;
use testkit::Tables;

struct Fixture {
    t: Tables,
    backend: Backend,
    key1: Issued,
    key2: Issued,
    agent1: String,
    agent2: String,
}

const REMOTE1: &str = "agent-one";
const REMOTE2: &str = "agent-two";

async fn fixture(cache_secs: &str) -> Fixture {
    let t = Tables::new().await;
    let backend = t.backend(&[("DIRECTORY_CACHE_TTL_SECS", cache_secs)]);
    let d = &backend.directory();
    let w1 = d.create_workspace("one").await.unwrap();
    let w2 = d.create_workspace("two").await.unwrap();
    d.create_workspace("three").await.unwrap();
    assert_eq!((w1.id, w2.id), (1, 2));
    let agent1 = d.create_agent(1, REMOTE1, None, None).await.unwrap().id;
    let agent2 = d.create_agent(2, REMOTE2, None, None).await.unwrap().id;
    let key1 = d.create_api_key(1, "k1", Scopes::DEFAULT).await.unwrap();
    let key2 = d.create_api_key(2, "k2", Scopes::DEFAULT).await.unwrap();
    Fixture { t, backend, key1, key2, agent1, agent2 }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn post_b(f: &Fixture, auth: Option<&str>, workspace: &str, remote: &str, call_id: &str) -> Answer {
    let q = [("workspace_id", workspace), ("agent_remote_identifier", remote)];
    send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, auth, &q, &create_call_body(call_id))).await
}

async fn post_a(f: &Fixture, auth: Option<&str>, agent: &str, call_id: &str) -> Answer {
    send(
        &f.backend,
        Operation::SendCallData,
        request(Operation::SendCallData, auth, &[], &send_call_data_body(agent, call_id)),
    )
    .await
}

fn assert_unauthorized(a: &Answer) {
    assert_eq!(a.status, 401, "{}", a.body);
    assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    assert!(a.header("x-request-id").is_some());
    assert_safe_headers(a);
}

fn assert_safe_headers(a: &Answer) {
    assert_eq!(a.header("cache-control"), Some("no-store"), "{}", a.status);
    assert_eq!(a.header("x-content-type-options"), Some("nosniff"), "{}", a.status);
}

#[tokio::test]
async fn an_overlong_agent_remote_identifier_is_401_without_a_valid_key_and_422_with_one() {
    // With DynamoDB's key limit enforced (the fault layer), a key built from it is refused.
    let f = fixture("60").await;
    let long = "a".repeat(2100);
    let unknown = bearer("cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6");
    assert_unauthorized(&post_b(&f, Some(&unknown), "1", &long, "c-long").await);
    let valid = bearer(&f.key1.token);
    let a = post_b(&f, Some(&valid), "1", &long, "c-long").await;
    assert_eq!(a.status, 422, "{}", a.body);
    assert_eq!(a.body["errors"][0]["pointer"], "/query/agent_remote_identifier");
    let a = post_b(&f, Some(&valid), "1", &"a".repeat(201), "c-long").await;
    assert_eq!(a.status, 422, "{}", a.body);
    let a = post_b(&f, Some(&valid), "1", REMOTE1, "c-ok").await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_safe_headers(&a);
    f.t.delete().await;
}

#[tokio::test]
async fn missing_malformed_and_unknown_credentials_are_401_on_both_operations() {
    let f = fixture("60").await;
    for auth in [None, Some("Bearer"), Some("Basic abc"), Some("Bearer cik_not_a_real_key_at_all")] {
        assert_unauthorized(&post_b(&f, auth, "1", REMOTE1, "c1").await);
        assert_unauthorized(&post_a(&f, auth, &f.agent1, "c1").await);
    }
    f.t.delete().await;
}

#[tokio::test]
async fn a_valid_key_is_accepted_in_any_scheme_case_and_as_x_api_key() {
    let f = fixture("60").await;
    let lower = format!("  bearer   {}  ", f.key1.token);
    assert_eq!(post_b(&f, Some(&lower), "1", REMOTE1, "c-lower").await.status, 201);
    assert_eq!(post_a(&f, Some(&bearer(&f.key1.token)), &f.agent1, "c-a").await.status, 201);
    let mut req = request(Operation::SendCallData, None, &[], &send_call_data_body(&f.agent1, "c-x"));
    req.headers_mut().insert("x-api-key", f.key1.token.parse().unwrap());
    assert_eq!(send(&f.backend, Operation::SendCallData, req).await.status, 201);
    f.t.delete().await;
}

#[tokio::test]
async fn a_key_of_workspace_two_sent_for_workspace_one_is_403() {
    let f = fixture("60").await;
    let a = post_b(&f, Some(&bearer(&f.key2.token)), "1", REMOTE1, "c1").await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(a.body["type"], "urn:call-ingest:problem:forbidden");
    f.t.delete().await;
}

#[tokio::test]
async fn a_session_works_for_its_workspaces_only_and_never_for_operation_a() {
    let f = fixture("60").await;
    let session = f.backend.directory().create_session("ada", &[1, 2], Duration::from_secs(3600)).await.unwrap();
    let auth = bearer(&session.token);
    assert_eq!(post_b(&f, Some(&auth), "1", REMOTE1, "s1").await.status, 201);
    assert_eq!(post_b(&f, Some(&auth), "2", REMOTE2, "s2").await.status, 201);
    assert_eq!(post_b(&f, Some(&auth), "3", REMOTE1, "s3").await.status, 403);
    assert_unauthorized(&post_a(&f, Some(&auth), &f.agent1, "s4").await);
    // X-API-Key carries API keys only.
    let mut req = request(Operation::SendCallData, None, &[], &send_call_data_body(&f.agent1, "s5"));
    req.headers_mut().insert("x-api-key", session.token.parse().unwrap());
    assert_unauthorized(&send(&f.backend, Operation::SendCallData, req).await);
    f.t.delete().await;
}

#[tokio::test]
async fn an_expired_session_is_401() {
    let f = fixture("0").await;
    let session = f.backend.directory().create_session("bob", &[1], Duration::from_secs(1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_unauthorized(&post_b(&f, Some(&bearer(&session.token)), "1", REMOTE1, "late").await);
    f.t.delete().await;
}

#[tokio::test]
async fn a_revoked_key_is_401_once_its_cache_entry_expires() {
    let f = fixture("1").await;
    let auth = bearer(&f.key1.token);
    assert_eq!(post_b(&f, Some(&auth), "1", REMOTE1, "before").await.status, 201);
    f.backend.directory().revoke(&f.key1.public_id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_unauthorized(&post_b(&f, Some(&auth), "1", REMOTE1, "after").await);
    assert_unauthorized(&post_a(&f, Some(&auth), &f.agent1, "after-a").await);
    let keys = f.backend.directory().list_keys(1).await.unwrap();
    assert!(keys.iter().any(|k| k.public_id == f.key1.public_id && k.revoked_at.is_some()));
    f.t.delete().await;
}

#[tokio::test]
async fn an_agent_of_another_workspace_is_404_exactly_like_a_missing_one() {
    let f = fixture("60").await;
    let auth = bearer(&f.key1.token);
    let other = post_b(&f, Some(&auth), "1", REMOTE2, "x").await;
    let missing = post_b(&f, Some(&auth), "1", "no-such-agent", "x").await;
    assert_eq!((other.status, missing.status), (404, 404));
    let strip = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("request_id");
        v
    };
    assert_eq!(strip(other.body), strip(missing.body));
    let other_a = post_a(&f, Some(&auth), &f.agent2, "y").await;
    let missing_a = post_a(&f, Some(&auth), "agt_nope", "y").await;
    assert_eq!((other_a.status, missing_a.status), (404, 404));
    assert_eq!(strip(other_a.body), strip(missing_a.body));
    f.t.delete().await;
}

#[tokio::test]
async fn credentials_are_checked_before_the_body() {
    let f = fixture("60").await;
    let q = [("workspace_id", "1"), ("agent_remote_identifier", REMOTE1)];
    let bad = serde_json::json!({"call_id": 7});
    let a = send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, None, &q, &bad)).await;
    assert_unauthorized(&a);
    assert!(a.body.get("errors").is_none(), "an anonymous caller learns nothing of the schema");
    let a = send(
        &f.backend,
        Operation::SendCallData,
        request(Operation::SendCallData, Some("Bearer cik_wrong"), &[], &bad),
    )
    .await;
    assert_unauthorized(&a);
    f.t.delete().await;
}

#[tokio::test]
async fn no_secret_is_stored_in_the_directory() {
    let f = fixture("60").await;
    let session = f.backend.directory().create_session("carol", &[1], Duration::from_secs(60)).await.unwrap();
    let secrets: Vec<String> = [&f.key1.token, &f.key2.token, &session.token].iter().map(|t| t.to_string()).collect();
    let dump = format!("{:?}", f.t.scan(&f.t.directory).await);
    for token in &secrets {
        assert!(!dump.contains(token.as_str()), "a token is stored");
        // The secret part: everything after the public id.
        assert!(!dump.contains(&token[12..]), "a secret part is stored");
    }
    f.t.delete().await;
}

#[tokio::test]
async fn another_workspaces_agent_is_read_every_time_never_cached_for_a_caller_it_was_not_authorised_for() {
    let f = fixture("60").await;
    // Counts the directory reads that ask for workspace 2's agent.
    let reads = f.t.fault(serde_json::json!({
        "op": "BatchGetItem", "fault": "observe", "times": 1000, "table": f.t.directory, "contains": "REMOTE#agent-two"
    }));
    let key1 = bearer(&f.key1.token);
    for _ in 0..2 {
        assert_eq!(post_b(&f, Some(&key1), "2", REMOTE2, "c-probe").await.status, 403);
    }
    assert_eq!(f.t.fired(reads), 2, "the second answer came from a cache: its speed tells the agent exists");
    // Authorised, the agent is cached: the second call reads nothing for it.
    let key2 = bearer(&f.key2.token);
    for call_id in ["c-own-1", "c-own-2"] {
        assert_eq!(post_b(&f, Some(&key2), "2", REMOTE2, call_id).await.status, 201);
    }
    assert_eq!(f.t.fired(reads), 3);
    f.t.delete().await;
}

#[tokio::test]
async fn a_public_id_already_taken_never_fails_creating_a_key_or_a_session() {
    let t = Tables::new().await;
    let backend = t.backend(&[]);
    let d = backend.directory();
    d.create_workspace("one").await.unwrap();
    for attempt in 0..2 {
        // The public id's pointer item (transaction item 1) exists: twice in a row.
        let rule = t.fault(serde_json::json!({
            "op": "TransactWriteItems", "fault": "cancel_condition", "item": 1, "times": 2, "table": t.directory
        }));
        let issued = if attempt == 0 {
            d.create_api_key(1, "k", Scopes::DEFAULT).await.expect("a key, with another public id")
        } else {
            d.create_session("ada", &[1], Duration::from_secs(600)).await.expect("a session, with another public id")
        };
        assert_eq!(t.fired(rule), 2);
        let lookup = d.lookup(&issued.token, None).await.unwrap();
        assert!(lookup.authenticate(call_ingest_store::directory::Sessions::Accepted).is_ok(), "the credential works");
        assert_eq!(issued.public_id, issued.token[..12]);
    }
    t.delete().await;
}

/// Operation A's body with `agentId` written last, after `padding` bytes of transcript.
fn send_call_data_agent_last(agent: &str, call_id: &str, padding: usize) -> Vec<u8> {
    let mut body = send_call_data_body(agent, call_id);
    let object = body.as_object_mut().unwrap();
    object.remove("agentId");
    object["transcript"][0]["content"] = serde_json::Value::from("x".repeat(padding));
    let mut bytes = serde_json::to_vec(&body).unwrap();
    bytes.pop();
    bytes.extend_from_slice(format!(r#","agentId":"{agent}"}}"#).as_bytes());
    bytes
}

#[tokio::test]
async fn operation_a_reads_its_credential_and_agent_in_one_round_trip_when_the_agent_comes_first() {
    let f = fixture("60").await;
    // The workspace's limit is read only when a request is counted (not a workspace's
    // first of a second), and alongside the count's write: not a round trip of these. The
    // first rule that matches a request fires, so these reads fire this one alone.
    f.t.fault(serde_json::json!({
        "op": "BatchGetItem", "fault": "observe", "times": 1000, "table": f.t.directory, "contains": "\"WS#"
    }));
    let other_reads = f.t.fault(serde_json::json!({
        "op": "BatchGetItem", "fault": "observe", "times": 1000, "table": f.t.directory
    }));
    let reads = || f.t.fired(other_reads);
    let key1 = bearer(&f.key1.token);
    // Sorted keys put agentId first: one read for both, before anything else.
    assert_eq!(post_a(&f, Some(&key1), &f.agent1, "c-first").await.status, 201);
    assert_eq!(reads(), 1);
    // Then none: the credential and the agent are cached.
    assert_eq!(post_a(&f, Some(&key1), &f.agent1, "c-first-2").await.status, 201);
    assert_eq!(reads(), 1);
    // On a fresh instance, an agentId beyond the first bytes costs a read of its own...
    let fresh = f.t.backend(&[("DIRECTORY_CACHE_TTL_SECS", "60")]);
    let body = send_call_data_agent_last(&f.agent1, "c-last", 5000);
    let post = |body: Vec<u8>| {
        let mut r = request(Operation::SendCallData, Some(&key1), &[], &serde_json::json!({}));
        *r.body_mut() = lambda_http::Body::from(body);
        send(&fresh, Operation::SendCallData, r)
    };
    assert_eq!(post(body.clone()).await.status, 201);
    assert_eq!(reads(), 3);
    // ...and then none.
    assert_eq!(post(body).await.status, 200);
    assert_eq!(reads(), 3);
    // The agent judged is the one of the whole body, not the peeked one.
    let mut twice = send_call_data_agent_last(&f.agent2, "c-two", 10);
    twice.splice(1..1, format!(r#""agentId":"{}","#, f.agent1).bytes());
    let answer = post(twice).await;
    assert!([404, 400, 422].contains(&answer.status), "{}: {}", answer.status, answer.body);
    f.t.delete().await;
}

#[tokio::test]
async fn a_500_says_whether_the_credential_or_the_call_failed() {
    let f = fixture("60").await;
    let key1 = bearer(&f.key1.token);
    let refuse = |table: &str| serde_json::json!({"op": "*", "fault": "invalid", "times": 1, "table": table});
    f.t.fault(refuse(&f.t.directory));
    let a = post_b(&f, Some(&key1), "1", REMOTE1, "c-500-directory").await;
    assert_eq!(a.status, 500, "{}", a.body);
    assert!(a.body["detail"].as_str().unwrap().starts_with("the credential or agent could not be read"), "{}", a.body);
    f.t.fault(refuse(&f.t.calls));
    let a = post_b(&f, Some(&key1), "1", REMOTE1, "c-500-store").await;
    assert_eq!(a.status, 500, "{}", a.body);
    assert!(a.body["detail"].as_str().unwrap().starts_with("the call could not be stored"), "{}", a.body);
    f.t.delete().await;
}
