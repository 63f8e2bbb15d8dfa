//! Retention (issue 32): the sweep erases the calls past their workspace's `retention_days`
//! (counted from `created_at`) through the erase path, and nothing else: the clock is moved
//! ahead by handing the sweep a later "now", against the local DynamoDB and S3.

use std::time::{Duration, Instant};

use crate::requests::*;
use call_ingest_core::privacy::Policy;
use call_ingest_core::Operation;
use call_ingest_store::directory::scopes::Scopes;
use serde_json::json;
use testkit::two_workspaces;

const DAY_MS: u64 = 86_400_000;

#[tokio::test]
async fn calls_past_retention_are_erased_with_their_frames_and_nothing_else() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[("RATE_LIMIT_PER_SECOND", "1000")]).await;
    let d = f.backend.directory();
    d.set_policy(1, Policy { retention_days: Some(30), ..Policy::default() }, None).await.unwrap();
    let post = |key: &str, workspace: &'static str, call_id: &str, large: bool| {
        let mut body = create_call_body(call_id);
        if large {
            // Incompressible: its frame is kept in S3, not inline.
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            let noise: String = (0..200_000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect();
            body["call_analysis"] = json!({"notes": noise});
        }
        let q = [("workspace_id", workspace), ("agent_remote_identifier", "desk")];
        let request = request(Operation::CreateCall, Some(key), &q, &body);
        let backend = &f.backend;
        async move { send(backend, Operation::CreateCall, request).await }
    };
    for (key, ws, call_id, large) in
        [(&f.key1, "1", "kept-a-while", false), (&f.key1, "1", "large", true), (&f.key2, "2", "no-retention", false)]
    {
        let a = post(key, ws, call_id, large).await;
        assert_eq!(a.status, 201, "{call_id}: {}", a.body);
    }
    let frames = || async { f.t.objects().await.into_iter().filter(|k| k.starts_with("frames/")).count() };
    assert_eq!(frames().await, 1, "the large call's frame is in S3");
    let store = f.backend.store();
    let deadline = || Instant::now() + Duration::from_secs(20);
    let now = call_ingest_store::calls::now_ms();

    // 29 days on: nothing is past 30 days.
    let sweep = f.backend.sweep_retention(now + 29 * DAY_MS, deadline()).await.unwrap();
    assert_eq!((sweep.workspaces, sweep.erased, sweep.failed), (1, 0, 0), "{sweep:?}");
    assert!(store.get_call(1, "kept-a-while", false).await.unwrap().is_some());

    // 31 days on: workspace 1's calls are erased, frames too; workspace 2 keeps its call.
    let sweep = f.backend.sweep_retention(now + 31 * DAY_MS, deadline()).await.unwrap();
    assert_eq!((sweep.erased, sweep.failed, sweep.unfinished), (2, 0, false), "{sweep:?}");
    for call_id in ["kept-a-while", "large"] {
        assert!(store.get_call(1, call_id, false).await.unwrap().is_none(), "{call_id} erased");
    }
    assert!(store.get_call(2, "no-retention", false).await.unwrap().is_some(), "no retention, kept");
    assert_eq!(frames().await, 0, "no frame left in S3");
    // Erased as an erase by id erases: the provider call id stores a new call.
    let again = post(&f.key1, "1", "kept-a-while", false).await;
    assert_eq!((again.status, again.body["is_new"].clone()), (201, json!(true)), "{}", again.body);

    // A retention removed: the sweep passes the workspace by.
    d.set_policy(1, Policy::default(), None).await.unwrap();
    let sweep = f.backend.sweep_retention(now + 400 * DAY_MS, deadline()).await.unwrap();
    assert_eq!((sweep.workspaces, sweep.erased), (0, 0), "{sweep:?}");
    f.t.delete().await;
}

/// A call sent long after it started (a backfill) is listed by its start, below where the
/// raw sweep's passes stand: it is noted when it is created (`RAWLATE#…`), and the sweep
/// removes its raw body once due (a day of two seconds here, `RETENTION_DAY_SECONDS`).
/// Without the note its raw body was kept for ever; a call of today gets no note.
#[tokio::test]
async fn a_backfilled_call_loses_its_raw_body_too() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[("RATE_LIMIT_PER_SECOND", "1000"), ("RETENTION_DAY_SECONDS", "2")])
        .await;
    let d = f.backend.directory();
    d.set_policy(1, Policy { raw_retention_days: Some(1), ..Policy::default() }, None).await.unwrap();
    let post = |call_id: &str, start_ms: Option<u64>| {
        let mut body = create_call_body(call_id);
        if let Some(start) = start_ms {
            body["start_timestamp"] = json!(start);
            body["end_timestamp"] = json!(start + 42_000);
        }
        let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
        let request = request(Operation::CreateCall, Some(&f.key1), &q, &body);
        let backend = &f.backend;
        async move { send(backend, Operation::CreateCall, request).await }
    };
    let store = f.backend.store();
    let removed = |call_id: &'static str| async move {
        let head = store.raw_head(1, call_id).await.unwrap().expect("stored");
        head.contains_key(call_ingest_store::calls::rewrite::RAW_REMOVED_AT)
    };
    let notes = || async {
        let far = call_ingest_store::calls::now_ms() + 1_000_000;
        store.raw_late(1, far, None).await.unwrap().into_iter().map(|n| n.call_id).collect::<Vec<_>>()
    };
    let sweep = || async {
        let deadline = Instant::now() + Duration::from_secs(20);
        f.backend.sweep_retention(call_ingest_store::calls::now_ms(), deadline).await.unwrap()
    };
    let day = || tokio::time::sleep(Duration::from_millis(2_200));

    // A call of today: no note; past its day, the sweep's pass removes its raw body.
    assert_eq!(post("today", Some(call_ingest_store::calls::now_ms())).await.status, 201);
    assert!(notes().await.is_empty());
    day().await;
    let first = sweep().await;
    assert!(removed("today").await, "{first:?}");

    // A call that started a year ago, sent now: below every pass's start, but noted.
    assert_eq!(post("backfilled", None).await.status, 201);
    assert_eq!(notes().await, ["backfilled"]);
    assert!(!removed("backfilled").await);
    day().await;
    let later = sweep().await;
    assert!(removed("backfilled").await, "the note's call is done: {later:?}");
    assert!(notes().await.is_empty(), "and its note settled");
    assert!(f.backend.store().get_call(1, "backfilled", false).await.unwrap().is_some(), "the call still reads");

    // A note whose call is not there (its head not put yet: the note goes first) is kept
    // while young, and settled once old (a reviewer's find: settled at once, a head put
    // just after kept its raw body).
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let ghost = |noted_at: u64| {
        f.t.client
            .put_item()
            .table_name(&f.t.calls)
            .item("pk", V::S("RAWLATE#1".into()))
            .item("sk", V::S(format!("{:020}#ghost", 1_000)))
            .item("call_id", V::S("ghost".into()))
            .item("ids", V::Ns(vec!["999999".into()]))
            .item("noted_at", V::N(noted_at.to_string()))
            .send()
    };
    ghost(call_ingest_store::calls::now_ms()).await.unwrap();
    sweep().await;
    assert_eq!(notes().await, ["ghost"], "young: kept");
    ghost(call_ingest_store::calls::now_ms() - 16 * 60 * 1000).await.unwrap();
    sweep().await;
    assert!(notes().await.is_empty(), "old: settled");

    // An erase takes the call's note with it.
    assert_eq!(post("erased-late", None).await.status, 201);
    assert_eq!(notes().await, ["erased-late"]);
    f.backend.store().erase_everything(1, "erased-late", stored_id(&f, "erased-late").await).await.unwrap();
    assert!(notes().await.is_empty(), "the erase forgot it");
    f.t.delete().await;
}

/// The interleavings at the line (a reviewer's find): a call started just under a day
/// before, whose head becomes visible only after a pass went by its start (its put landing
/// late, or the sweep's instance's clock ahead), is noted all the same, since the note is
/// written from three quarters of a day; and a note none of whose ids is the call (each
/// named a creation that lost, a retry's while the first put was on its way) has the call
/// that won rewritten. Without either, the call kept its raw body for good.
#[tokio::test]
async fn a_call_put_after_a_pass_went_by_its_start_loses_its_raw_body() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[("RATE_LIMIT_PER_SECOND", "1000"), ("RETENTION_DAY_SECONDS", "2")])
        .await;
    let d = f.backend.directory();
    d.set_policy(1, Policy { raw_retention_days: Some(1), ..Policy::default() }, None).await.unwrap();
    let store = f.backend.store();
    let now = call_ingest_store::calls::now_ms;
    let post = |call_id: &str, start: u64| {
        let mut body = create_call_body(call_id);
        body["start_timestamp"] = json!(start);
        body["end_timestamp"] = json!(start + 1_000);
        let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
        let request = request(Operation::CreateCall, Some(&f.key1), &q, &body);
        let backend = &f.backend;
        async move { send(backend, Operation::CreateCall, request).await.status }
    };
    let removed = |call_id: &'static str| async move {
        let head = store.raw_head(1, call_id).await.unwrap().expect("stored");
        head.contains_key(call_ingest_store::calls::rewrite::RAW_REMOVED_AT)
    };
    let backend = &f.backend;
    let sweep = |at: u64| async move {
        let deadline = Instant::now() + Duration::from_secs(20);
        backend.sweep_retention(at, deadline).await.unwrap()
    };

    // Started 1.6 s (of a 2 s day) before; a sweep 0.6 s ahead goes by its start before
    // its head is there.
    let start = now() - 1_600;
    let ahead = sweep(now() + 600).await;
    assert_eq!(post("at-the-line", start).await, 201);
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let due = sweep(now()).await;
    assert!(removed("at-the-line").await, "noted, so swept once due: {ahead:?} {due:?}");

    // A call listed past the passes (its start ahead), with a note naming an id that is not
    // its own: the note's due, the call is rewritten, and the note settled.
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let throwaway = |call_id: &'static str, at: u64| {
        f.t.client
            .put_item()
            .table_name(&f.t.calls)
            .item("pk", V::S("RAWLATE#1".into()))
            .item("sk", V::S(format!("{at:020}#{call_id}")))
            .item("call_id", V::S(call_id.into()))
            .item("ids", V::Ns(vec!["999999".into()]))
            .item("noted_at", V::N(now().to_string()))
            .send()
    };
    let notes = || async { store.raw_late(1, now() + 1_000_000, None).await.unwrap() };
    assert_eq!(post("raced", now() + 1_500).await, 201);
    throwaway("raced", now()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let swept = sweep(now()).await;
    assert!(removed("raced").await, "the call that won is rewritten: {swept:?}");
    assert!(notes().await.is_empty(), "and the note settled");

    // The same, with the note due before the call that won is: that call is noted under its
    // own creation, and swept when it is due.
    throwaway("raced-later", now() - 5_000).await.unwrap();
    assert_eq!(post("raced-later", now() + 1_500).await, 201);
    sweep(now()).await;
    let left = notes().await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].call_id, "raced-later");
    assert_eq!(left[0].ids, [stored_id(&f, "raced-later").await], "noted under its own creation");
    assert!(!removed("raced-later").await, "not due yet");
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    sweep(now()).await;
    assert!(removed("raced-later").await, "swept once due");
    f.t.delete().await;
}

async fn stored_id(f: &testkit::TwoWorkspaces, call_id: &str) -> u64 {
    f.backend.store().get_call(1, call_id, false).await.unwrap().expect("stored").id
}
