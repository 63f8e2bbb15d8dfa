//! Who a credential is (`GET /api/v1/public/me`): any valid credential may ask, whatever its
//! scopes; nothing else answers but 401 and 405.

use std::time::Duration;

use crate::requests::*;
use call_ingest_http::Endpoint;
use call_ingest_store::directory::scopes::{Scope, Scopes};
use lambda_http::http::{Method, Request};
use lambda_http::Body;
use serde_json::json;
use testkit::two_workspaces;

fn me(auth: Option<&str>, method: Method) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri("/api/v1/public/me");
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    builder.body(Body::Empty).unwrap()
}

#[tokio::test]
async fn a_key_learns_its_workspace_scopes_and_public_id_a_session_its_workspaces() {
    let f = two_workspaces(Scopes::of([Scope::Send]), &[], &[]).await;
    let d = f.backend.directory();
    let a = send(&f.backend, Endpoint::Me, me(Some(&f.key2), Method::GET)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let token = f.key2.trim_start_matches("Bearer ");
    let public_id = call_ingest_store::directory::credentials::public_id(token);
    let everything = json!({"storage": "everything", "retention_days": null, "raw_retention_days": null, "pii_model": null,
        "pii_entities": ["phone_number", "email", "credit_card", "ssn", "iban", "date_of_birth"]});
    let policies = |ids: &[u64]| -> Vec<serde_json::Value> {
        ids.iter().map(|id| json!({"workspace_id": id, "policy": everything.clone()})).collect()
    };
    assert_eq!(
        a.body,
        json!({"kind": "api_key", "public_id": public_id, "workspaces": [2], "scopes": ["send"],
               "data_policies": policies(&[2])})
    );
    assert_eq!(a.header("cache-control"), Some("no-store"));

    let reader = d.create_api_key(1, "reader", Scopes::of([Scope::Read, Scope::Erase])).await.unwrap();
    let a = send(&f.backend, Endpoint::Me, me(Some(&format!("Bearer {}", reader.token)), Method::GET)).await;
    assert_eq!((a.body["workspaces"].clone(), a.body["scopes"].clone()), (json!([1]), json!(["read", "erase"])));

    let session = d.create_session("ada", &[2, 1], Duration::from_secs(600)).await.unwrap();
    let a = send(&f.backend, Endpoint::Me, me(Some(&format!("Bearer {}", session.token)), Method::GET)).await;
    assert_eq!(
        a.body,
        json!({"kind": "session", "workspaces": [1, 2], "scopes": ["send", "read", "erase", "traces", "manage"],
               "data_policies": policies(&[1, 2])})
    );
    f.t.delete().await;
}

#[tokio::test]
async fn no_unknown_or_revoked_credential_is_401_and_other_methods_405() {
    let f = two_workspaces(Scopes::of([Scope::Read]), &[], &[("DIRECTORY_CACHE_TTL_SECS", "0")]).await;
    for auth in [None, Some("Bearer cik_0000000000000000000000000000000000000000000000000"), Some("Basic abc")] {
        let a = send(&f.backend, Endpoint::Me, me(auth, Method::GET)).await;
        assert_eq!(
            (a.status, a.body["type"].as_str()),
            (401, Some("urn:call-ingest:problem:unauthorized")),
            "{auth:?}"
        );
    }
    f.backend.directory().revoke(f.key1.trim_start_matches("Bearer ")).await.unwrap();
    assert_eq!(send(&f.backend, Endpoint::Me, me(Some(&f.key1), Method::GET)).await.status, 401);
    let a = send(&f.backend, Endpoint::Me, me(Some(&f.key2), Method::POST)).await;
    assert_eq!((a.status, a.header("allow")), (405, Some("GET")));
    f.t.delete().await;
}
