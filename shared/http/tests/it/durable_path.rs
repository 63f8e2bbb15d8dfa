//! The durable path's promises under the interleavings a review found broken (issue 28),
//! each reproduced with the fault layer: a commit whose budget cannot be taken, a stale or
//! late erase, content sent again after a pending detour, a direct write applied after its
//! answer, a pending copy an erase drops, an erase stopped part-way, one clock for order,
//! a sweep's listing pages, and how long tombstones and pending copies live; then what a
//! second review found: a direct write landed after an erase, two erases at once, replays
//! ordered among pending sends, a send an erase removed though received after it began, and
//! a send creating the call anew while the erase finished; and the frame an unchanged
//! pending copy's direct write left (the history checker).

use std::time::{Duration, Instant};

use crate::accepted::{pending, post_status, statuses, sweep, sweep_within, Q};
use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_store::calls::pending::{is_paced, MayCommit, EXPIRES_AFTER, FAILED_PREFIX, PACED};
use call_ingest_store::calls::StoreError;
use call_ingest_store::calls::{now_ms, Owner, Receipt};
use call_ingest_store::directory::scopes::Scopes;
use serde_json::{json, Value};
use testkit::{two_workspaces, TwoWorkspaces};

/// Operation B of a callgen call of about 60 KB: its frame is kept in S3.
fn large_body(call_id: &str, seed: u64) -> Value {
    let mut body: Value = serde_json::from_slice(&callgen::create_call_bytes(60_000, seed)).unwrap();
    body["call_id"] = json!(call_id);
    body
}

async fn post(f: &TwoWorkspaces, body: &Value) -> Answer {
    send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, Some(&f.key1), &Q, body)).await
}

/// Whether the call reads back whole, with `body` as its current content.
async fn reads_as(f: &TwoWorkspaces, call_id: &str, body: &Value) -> bool {
    match f.backend.store().get_call(1, call_id, false).await {
        Ok(Some(call)) => call.current.raw == serde_json::to_vec(body).unwrap(),
        _ => false,
    }
}

async fn owner_agent(f: &TwoWorkspaces) -> String {
    f.backend.directory().list_agents(1).await.unwrap().remove(0).id
}

async fn copy(f: &TwoWorkspaces, from: &str, to: &str) {
    let source = format!("{}/{from}", f.t.bucket);
    f.t.s3.copy_object().bucket(&f.t.bucket).copy_source(source).key(to).send().await.unwrap();
}

/// Finding 1: a paced copy's commit takes a send of its workspace's budget; a counter it
/// cannot write (in AWS: refused, the committer had no right on it) is a failure that
/// brings the queue's message back, never "paced" (the message deleted, the call never
/// stored). A copy left by an outage asks no budget: the broken counter does not hold it.
#[tokio::test]
async fn a_commit_whose_budget_cannot_be_taken_fails_and_is_never_counted_as_paced() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "unpaced", "a").await.status, 202);
    let outage = pending(&f).await.remove(0);
    assert_eq!(post_status(&f, "paced", "b").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    // The second as a send over its workspace's budget would have left it.
    let sent = pending(&f).await.into_iter().find(|k| *k != outage).unwrap();
    assert!(!is_paced(&sent), "{sent}");
    let key = format!("{sent}{PACED}");
    copy(&f, &sent, &key).await;
    f.t.s3.delete_object().bucket(&f.t.bucket).key(&sent).send().await.unwrap();
    f.t.fault(json!({"op": "UpdateItem", "fault": "invalid", "table": f.t.directory, "times": 1000}));
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = f.backend.commit_notified(&outage, deadline).await.unwrap();
    assert_eq!((done.sweep.committed, done.paced), (1, false), "{done:?}");
    assert!(f.backend.commit_notified(&key, deadline).await.is_err(), "the message must come back");
    let swept = sweep_within(&f, 1).await;
    assert_eq!((swept.committed, swept.left), (0, 1), "{swept:?}");
    f.t.clear_faults(&f.t.directory);
    let done = f.backend.commit_notified(&key, Instant::now() + Duration::from_secs(20)).await.unwrap();
    assert_eq!((done.sweep.committed, done.paced), (1, false), "{done:?}");
    assert_eq!(
        (statuses(&f, "unpaced").await, statuses(&f, "paced").await),
        (vec!["a".to_owned()], vec!["b".to_owned()])
    );
    f.t.delete().await;
}

/// Finding 2a: the erase's DeleteObject of a frame is applied late (after the SDK's retry
/// succeeded and the same bytes were stored as a new call); it must not reach the new call.
#[tokio::test]
async fn a_late_delete_of_an_erased_calls_frame_never_reaches_the_call_stored_after_it() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let body = large_body("late-delete", 1);
    let first = post(&f, &body).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let rule = json!({"service": "s3", "op": "DeleteObject", "fault": "late", "seconds": 2.0,
                      "contains": "/frames/", "times": 1});
    f.t.fault(rule);
    f.backend.store().erase_call(1, "late-delete", id).await.unwrap();
    let again = post(&f, &body).await;
    assert_eq!((again.status, again.body["is_new"].as_bool()), (201, Some(true)), "{}", again.body);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert!(reads_as(&f, "late-delete", &body).await, "the call stored after the erase reads whole");
    f.t.delete().await;
}

/// Finding 2b: two erases at once (a client's retry), one stalled after reading the call:
/// neither the call stored after the first finished nor a pending submission received
/// after it may be touched by the stalled one.
#[tokio::test]
async fn a_stalled_erase_never_reaches_a_call_or_a_pending_send_that_came_after_the_first() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let body = large_body("stalled", 2);
    let first = post(&f, &body).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    // The first erase pauses just after marking the call (its listing of pending/ waits);
    // the second reads the marked call meanwhile, and its reply comes 2.5 s late.
    f.t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 1.0, "times": 1}));
    f.t.fault(json!({"op": "Query", "fault": "delay", "seconds": 2.5, "skip": 1, "times": 1}));
    let store = f.backend.store();
    let stalled = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        store.erase_call(1, "stalled", id).await
    };
    let first_then_more = async {
        let erased = store.erase_call(1, "stalled", id).await;
        let anew = post(&f, &body).await;
        let (_, raw) = testkit::small_call("stalled", "sent after the erase");
        let owner = Owner { workspace_id: 1, agent_id: &agent };
        let receipt = Receipt::now().unwrap();
        let key = store.put_pending(owner, Operation::CreateCall, "stalled", &raw, &receipt, false).await.unwrap();
        (erased, anew, key)
    };
    let ((erased, anew, key), stale) = tokio::join!(first_then_more, stalled);
    assert!(erased.is_ok() && stale.is_ok(), "{erased:?} {stale:?}");
    assert_eq!((anew.status, anew.body["is_new"].as_bool()), (201, Some(true)), "{}", anew.body);
    assert!(reads_as(&f, "stalled", &body).await, "the call stored after the first erase reads whole");
    assert_eq!(pending(&f).await, vec![key], "the send received after the first erase is still pending");
    f.t.delete().await;
}

/// Finding 3: A accepted (202), B stored, A committed below B; A sent again is new content
/// again (A, B, A without the detour) and becomes current.
#[tokio::test]
async fn content_sent_again_after_a_pending_detour_is_stored_again() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "detour", "a").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    assert_eq!(post_status(&f, "detour", "b").await.status, 201);
    assert_eq!(sweep(&f).await.committed, 1);
    assert_eq!(statuses(&f, "detour").await, ["b", "a", "b"]);
    let again = post_status(&f, "detour", "a").await;
    assert_eq!((again.status, again.body["is_new"].as_bool()), (200, Some(false)), "{}", again.body);
    assert_eq!(statuses(&f, "detour").await, ["b", "a", "b", "a"], "sent again, stored again, current");
    f.t.delete().await;
}

/// Finding 4: a direct write applied after its answer gave up (202) shares its identity
/// with its pending copy: committed after other content landed, the copy changes nothing.
#[tokio::test]
async fn a_direct_write_applied_after_its_answer_is_not_stored_again_by_its_pending_copy() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    // The instance's last commit was slow: it waits 750 ms for DynamoDB.
    f.backend.patience.record(Duration::from_secs(5), false);
    // The create is applied at once; its reply comes after 1.5 s.
    f.t.fault(json!({"op": "PutItem", "fault": "delay", "seconds": 1.5, "times": 1}));
    assert_eq!(post_status(&f, "late-direct", "a").await.status, 202);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(statuses(&f, "late-direct").await, ["a"], "the write the answer gave up on was applied");
    assert_eq!(post_status(&f, "late-direct", "b").await.status, 200);
    let swept = sweep(&f).await;
    assert_eq!(swept.committed, 1, "{swept:?}");
    assert_eq!(statuses(&f, "late-direct").await, ["a", "b"], "one submission, one revision");
    f.t.delete().await;
}

/// Finding 5: a pending copy the erase missed is dropped when committed without leaving its
/// content in a new S3 object; and copies kept under failed/ are erased with their call.
#[tokio::test]
async fn an_erased_calls_pending_copy_leaves_no_frame_and_its_failed_copies_are_erased() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("leftover", 3)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post(&f, &large_body("leftover", 4)).await.status, 202);
    f.t.clear_faults(&f.t.calls);
    let key = pending(&f).await.remove(0);
    let aside = format!("aside/{key}");
    let failed = key.replacen("pending/", FAILED_PREFIX, 1);
    copy(&f, &key, &aside).await;
    copy(&f, &key, &failed).await;
    f.backend.store().erase_call(1, "leftover", id).await.unwrap();
    copy(&f, &aside, &key).await;
    let swept = sweep(&f).await;
    assert_eq!((swept.erased, swept.committed), (1, 0), "{swept:?}");
    let left: Vec<String> = f.t.objects().await.into_iter().filter(|k| !k.starts_with("aside/")).collect();
    assert_eq!(left, Vec::<String>::new(), "no frame, pending or failed copy of the erased call is left");
    f.t.delete().await;
}

/// The pending copy of an erased call is dropped when committed, and its frame blanked; when
/// S3 refuses that marker, the copy is kept (not deleted with the frame left, which nothing
/// would look for again), and the next sweep blanks the frame and drops it.
#[tokio::test]
async fn a_dropped_copy_whose_frame_cannot_be_blanked_is_kept_until_it_is() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("unblanked", 3)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post(&f, &large_body("unblanked", 4)).await.status, 202);
    f.t.clear_faults(&f.t.calls);
    let key = pending(&f).await.remove(0);
    let aside = format!("aside/{key}");
    copy(&f, &key, &aside).await;
    f.backend.store().erase_call(1, "unblanked", id).await.unwrap();
    // The copy comes back after the erase's listing (its PUT arrived late).
    copy(&f, &aside, &key).await;
    f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "internal", "contains": "frames/", "times": 1000,
                     "table": f.t.bucket}));
    let swept = sweep_within(&f, 1).await;
    assert_eq!((swept.erased, swept.left), (0, 1), "{swept:?}");
    assert_eq!(pending(&f).await, std::slice::from_ref(&key), "the copy is kept while its frame holds content");
    f.t.clear_faults(&f.t.bucket);
    let swept = sweep(&f).await;
    assert_eq!((swept.erased, swept.committed), (1, 0), "{swept:?}");
    let left: Vec<String> = f.t.objects().await.into_iter().filter(|k| !k.starts_with("aside/")).collect();
    assert_eq!(left, Vec::<String>::new(), "no frame or copy of the erased call is left");
    f.t.delete().await;
}

/// An erase answered 503 part-way leaves the call marked: a different submission then waits
/// (202) instead of reviving the erased content as a readable revision; the erase, retried,
/// takes it too (it was sent before the retry).
#[tokio::test]
async fn a_send_to_a_call_whose_erase_stopped_part_way_waits_and_never_revives_it() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post_status(&f, "half", "a").await;
    let id = first.body["id"].as_u64().unwrap();
    // The erase marks the call, then cannot bury it.
    f.t.fault(json!({"op": "PutItem", "fault": "internal", "times": 1000}));
    assert!(f.backend.store().erase_call(1, "half", id).await.is_err());
    f.t.clear_faults(&f.t.calls);
    let b = post_status(&f, "half", "b").await;
    assert_eq!(b.status, 202, "{}", b.body);
    assert!(matches!(f.backend.store().get_call(1, "half", true).await, Ok(None)), "the erased call stays unread");
    assert_eq!(sweep_within(&f, 1).await.left, 1, "it waits for the erase to be finished");
    f.backend.store().erase_call(1, "half", id).await.unwrap();
    assert_eq!(pending(&f).await, Vec::<String>::new(), "sent before the retried erase: erased too");
    assert!(matches!(f.backend.store().get_call(1, "half", true).await, Ok(None)));
    f.t.delete().await;
}

/// One clock for order, the time of receipt: a pending submission received after a direct
/// one (whose compression was slow, so it committed later) is current whatever the order
/// they commit in.
#[tokio::test]
async fn a_pending_send_received_after_a_direct_one_is_current_whenever_it_commits() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let (doc_a, raw_a) = testkit::small_call("clock", "received first");
    let (_, raw_b) = testkit::small_call("clock", "received second");
    let received = now_ms() - 5_000;
    let (direct, later) = (Receipt::new(received).unwrap(), Receipt::new(received + 50).unwrap());
    let store = f.backend.store();
    store.put_pending(owner, Operation::CreateCall, "clock", &raw_b, &later, false).await.unwrap();
    store.put_call_within(owner, &doc_a, &raw_a, &direct, Duration::from_secs(4)).await.unwrap();
    assert_eq!(sweep(&f).await.committed, 1);
    let call = store.get_call(1, "clock", true).await.unwrap().unwrap();
    assert_eq!(call.current.raw, raw_b, "the last received is current");
    assert_eq!(call.revisions.len(), 1, "and nothing was inserted below it");
    f.t.delete().await;
}

/// The same clock when a direct send received first commits last: C (received first)
/// lands over D (received last), and the pending copy P (received between them) is then
/// kept below the head, never over D. (The head's own receipt, C's, made P look newer: P
/// became current above D, content sent before D stored over it: the history checker,
/// seed 1 of `make test`.)
#[tokio::test]
async fn a_pending_copy_stays_below_a_later_send_a_slower_direct_one_landed_over() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let (doc_a, raw_a) = testkit::small_call("slower", "first");
    let (doc_c, raw_c) = testkit::small_call("slower", "received first, committed last");
    let (_, raw_p) = testkit::small_call("slower", "received between, pending");
    let (doc_d, raw_d) = testkit::small_call("slower", "received last");
    let t0 = now_ms() - 5_000;
    let within = Duration::from_secs(4);
    let receipt = |at: u64| Receipt::new(at).unwrap();
    store.put_call_within(owner, &doc_a, &raw_a, &receipt(t0 - 100), within).await.unwrap();
    store.put_pending(owner, Operation::CreateCall, "slower", &raw_p, &receipt(t0 + 10), false).await.unwrap();
    store.put_call_within(owner, &doc_d, &raw_d, &receipt(t0 + 20), within).await.unwrap();
    let c = store.put_call_within(owner, &doc_c, &raw_c, &receipt(t0), within).await.unwrap();
    assert_eq!(c.revision, 3, "C lands over D: {c:?}");
    assert_eq!(sweep(&f).await.committed, 1);
    let call = store.get_call(1, "slower", true).await.unwrap().unwrap();
    assert_eq!(call.current.raw, raw_c, "C stays current: P is kept below it");
    let order: Vec<&[u8]> = call.revisions.iter().map(|r| r.raw.as_slice()).collect();
    let (d, p) = (order.iter().position(|r| *r == raw_d), order.iter().position(|r| *r == raw_p));
    assert!(matches!((d, p), (Some(d), Some(p)) if d < p), "P is kept, above D only as a late insert under C");
    f.t.delete().await;
}

/// A pending copy replays only the content current when it was received: the content that
/// became current last at or before its receipt. Each case: direct sends (receipt times in
/// ms after `t0`), one pending copy, then the sweep; the copies of the pending bytes the
/// call holds afterwards. A replay's note says until when content was current, not since
/// when (review of 8a386d5), and a slower send landed over later content counts as current
/// from that content's receipt.
#[tokio::test]
async fn a_pending_copy_is_a_replay_only_of_the_content_current_at_its_receipt() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let t0 = now_ms() - 5_000;
    let within = Duration::from_secs(4);
    // (case, direct sends as (content, receipt), the pending copy's content and receipt,
    // copies of its content expected afterwards)
    type Case<'a> = (&'a str, &'a [(&'a str, u64)], (&'a str, u64), usize);
    let cases: [Case; 4] = [
        // E (received before X) landed over X, then Y: at 20 E was current, not X.
        ("slower", &[("x", 10), ("e", 0), ("y", 30)], ("x", 20), 2),
        // B was current at 30; B's replay at 50 does not hide it.
        ("replayed-b", &[("a", 10), ("b", 20), ("b", 50)], ("a", 30), 2),
        // A was current at 30 (replayed at 50, then Y): the copy adds nothing.
        ("replayed-a", &[("a", 10), ("a", 50), ("y", 60)], ("a", 30), 1),
        // E landed over X, then E was replayed: at 20 E was current, from 10.
        ("slower-replayed", &[("x", 10), ("e", 0), ("e", 50)], ("x", 20), 2),
    ];
    for (call_id, sends, (pending, at), expected) in cases {
        let raw = |content: &str| testkit::small_call(call_id, content);
        for (content, received) in sends {
            let (doc, bytes) = raw(content);
            store.put_call_within(owner, &doc, &bytes, &Receipt::new(t0 + received).unwrap(), within).await.unwrap();
        }
        let (_, copy) = raw(pending);
        store
            .put_pending(owner, Operation::CreateCall, call_id, &copy, &Receipt::new(t0 + at).unwrap(), false)
            .await
            .unwrap();
        assert_eq!(sweep(&f).await.committed, 1, "{call_id}");
        let call = store.get_call(1, call_id, true).await.unwrap().unwrap();
        let last_sent = raw(sends.last().unwrap().0).1;
        assert_eq!(call.current.raw, last_sent, "{call_id}: the last send stays current");
        let copies = call.revisions.iter().filter(|r| r.raw == copy).count();
        assert_eq!(copies, expected, "{call_id}: copies of {pending:?}");
    }
    f.t.delete().await;
}

/// The sweep reads the whole listing before it groups a call's submissions: a call whose
/// copies fall on two pages of S3's listing commits them in order, and a copy that fails
/// holds back the ones after it.
#[tokio::test]
async fn a_calls_pending_copies_on_two_listing_pages_commit_in_order() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let (_, older) = testkit::small_call("paged", "older");
    let (_, newer) = testkit::small_call("paged", "newer");
    let received = now_ms() - 10_000;
    let receipt = Receipt::new(received).unwrap();
    let first = store.put_pending(owner, Operation::CreateCall, "paged", &older, &receipt, false).await.unwrap();
    let second = Receipt::new(received + 1).unwrap();
    store.put_pending(owner, Operation::CreateCall, "paged", &newer, &second, false).await.unwrap();
    // 999 keys that sort before the call's and are not due yet: the call's two copies are
    // the 1,000th and 1,001st keys of the listing, on two pages.
    let (folder, _) = first.rsplit_once('/').unwrap();
    let (_, hash) = folder.rsplit_once('/').unwrap();
    let before = format!("{}{}", &hash[..hash.len() - 1], if hash.ends_with('0') { "" } else { "0" });
    let filler = now_ms() + 3_600_000;
    use futures_util::stream::{self, StreamExt};
    stream::iter(0..999)
        .for_each_concurrent(8, |i| {
            let key = format!("pending/1/{before}/{filler:013}-{i:04}");
            let (s3, bucket) = (f.t.s3.clone(), f.t.bucket.clone());
            async move {
                s3.put_object().bucket(bucket).key(key).body(b"{}".to_vec().into()).send().await.unwrap();
            }
        })
        .await;
    // The older copy cannot be read this time.
    let tail = first.rsplit('/').next().unwrap().to_owned();
    f.t.fault(json!({"service": "s3", "op": "GetObject", "fault": "internal", "contains": tail, "times": 4}));
    let swept = sweep_within(&f, 1).await;
    assert_eq!((swept.committed, swept.left), (0, 2), "the newer one waits for the older: {swept:?}");
    assert_eq!(sweep(&f).await.committed, 2);
    assert_eq!(statuses(&f, "paged").await.len(), 2);
    let call = store.get_call(1, "paged", false).await.unwrap().unwrap();
    assert_eq!(call.current.raw, newer, "committed in the order received");
    f.t.delete().await;
}

/// A tombstone outlives every pending copy that could name its call: copies are moved to
/// failed/ after 7 days pending, reports held 30 days first, and tombstones live 38.
#[tokio::test]
async fn tombstones_outlive_every_pending_copy_and_old_copies_go_to_failed() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post_status(&f, "aged", "a").await;
    let id = first.body["id"].as_u64().unwrap();
    f.backend.store().erase_call(1, "aged", id).await.unwrap();
    let items = f.t.scan(&f.t.calls).await;
    let tombstone = items.iter().find(|i| i.get("erased_at").is_some()).expect("a tombstone");
    let expires: u64 = tombstone["expires_at"].as_n().unwrap().parse().unwrap();
    assert!(expires >= now_ms() / 1000 + 38 * 24 * 3600 - 60, "a tombstone lives 38 days");
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let (_, raw) = testkit::small_call("aged-2", "x");
    let old = Receipt::new(now_ms() - EXPIRES_AFTER.as_millis() as u64 - 1000).unwrap();
    f.backend.store().put_pending(owner, Operation::CreateCall, "aged-2", &raw, &old, false).await.unwrap();
    let swept = sweep(&f).await;
    assert_eq!((swept.unreadable, swept.committed), (1, 0), "{swept:?}");
    let objects = f.t.objects().await;
    assert!(objects.iter().all(|k| k.starts_with(FAILED_PREFIX)) && objects.len() == 1, "{objects:?}");
    f.t.delete().await;
}

/// A send received while an erase runs (the call marked, not yet buried) waits as pending
/// and is stored as a new call once the erase is done: it came after the erase began, so
/// the erase is not over it (its tombstone's `erased_at` is when it began).
#[tokio::test]
async fn a_send_received_while_an_erase_runs_is_stored_as_a_new_call_after_it() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post_status(&f, "during", "a").await;
    let id = first.body["id"].as_u64().unwrap();
    // The erase pauses just after marking the call.
    f.t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 1.5, "times": 1}));
    let store = f.backend.store();
    let erase = store.erase_call(1, "during", id);
    let send = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        post_status(&f, "during", "b").await
    };
    let (erased, b) = tokio::join!(erase, send);
    assert!(erased.is_ok(), "{erased:?}");
    assert_eq!(b.status, 202, "{}", b.body);
    let swept = sweep(&f).await;
    assert_eq!((swept.committed, swept.erased), (1, 0), "{swept:?}");
    assert_eq!(statuses(&f, "during").await, ["b"], "a new call, with only what was sent after the erase began");
    f.t.delete().await;
}

/// S3 applies a frame's PUT late (its connection dropped, the SDK's retry stored it, then the
/// first copy arrives): after an erase, that copy must not write the erased content back.
/// The erase overwrites the frame with an empty marker, on which the conditional PUT fails.
#[tokio::test]
async fn a_late_put_of_an_erased_frame_never_writes_its_content_back() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let rule = json!({"service": "s3", "op": "PutObject", "fault": "late", "seconds": 2.0,
                      "contains": "/frames/", "times": 1});
    f.t.fault(rule);
    let first = post(&f, &large_body("late-put", 5)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    f.backend.store().erase_call(1, "late-put", id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert_eq!(f.t.objects().await, Vec::<String>::new(), "no object holds the erased call");
    assert!(matches!(f.backend.store().get_call(1, "late-put", false).await, Ok(None)));
    f.t.delete().await;
}

/// Call `call_id` stored, then `copies` sends of it pending (a busy client while its erase
/// is stopped part-way): answers its id.
async fn crowded(f: &TwoWorkspaces, call_id: &str, copies: usize) -> u64 {
    use futures_util::stream::{self, StreamExt};
    let id = post_status(f, call_id, "a").await.body["id"].as_u64().unwrap();
    let agent = owner_agent(f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let (_, raw) = testkit::small_call(call_id, "waiting");
    let store = f.backend.store();
    stream::iter(0..copies)
        .for_each_concurrent(8, |_| async {
            let receipt = Receipt::now().unwrap();
            store.put_pending(owner, Operation::CreateCall, call_id, &raw, &receipt, false).await.unwrap();
        })
        .await;
    id
}

/// A call whose erase stopped part-way gathers every send of it as pending (hundreds, from a
/// busy client): the erase, sent again, still finishes, sending its deletes a few at a time
/// (all at once they queued past the SDK's timeouts, and the erase answered 503 for ever;
/// the history checker, seed 11).
#[tokio::test]
async fn an_erase_finishes_over_hundreds_of_pending_sends() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let id = crowded(&f, "crowded", 300).await;
    let store = f.backend.store();
    assert_eq!(pending(&f).await.len(), 300);
    store.erase_call(1, "crowded", id).await.expect("the erase finishes");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// An erase cut short keeps what it did: each pending copy goes right after its frame's
/// marker, so each request deletes some and a thousand copies are erased over several
/// requests. (With every marker written first, a request cut short before the deletes
/// deleted nothing, and the erase answered 503 for ever: the history checker, seed 31.)
#[tokio::test]
async fn an_erase_cut_short_keeps_the_copies_it_deleted() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let id = crowded(&f, "cut-short", 200).await;
    let store = f.backend.store();
    // A slow S3: each marker's PUT answers 100 ms late, so the markers alone take longer
    // than the erase is given.
    f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "delay", "seconds": 0.1, "times": 100_000}));
    let cut = tokio::time::timeout(Duration::from_millis(800), store.erase_call(1, "cut-short", id)).await;
    assert!(cut.is_err(), "cut short");
    let left = pending(&f).await.len();
    assert!(left < 200, "the copies deleted before it was cut short stay deleted: {left} left");
    f.t.clear_faults(&f.t.bucket);
    store.erase_call(1, "cut-short", id).await.expect("the erase finishes");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// An erase that reaches its deadline while it buries the call still finishes the clean-up
/// that follows: a copy set aside under failed/ meanwhile is erased. (Cut there, the buried
/// call could no longer be found by its id, and the copy of the erased call was left.)
#[tokio::test]
async fn an_erase_at_its_deadline_while_burying_still_erases_a_copy_set_aside_meanwhile() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("buried-late", 3)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post(&f, &large_body("buried-late", 4)).await.status, 202);
    f.t.clear_faults(&f.t.calls);
    let key = pending(&f).await.remove(0);
    let aside = format!("aside/{key}");
    copy(&f, &key, &aside).await;
    // The burial's reply comes 2 s late, past the erase's deadline (1.5 s); at the deadline
    // the pending copy is set aside under failed/, long after the erase deleted the copies
    // it listed and before its burial answers.
    f.t.fault(json!({"op": "PutItem", "fault": "delay", "seconds": 2.0, "times": 1}));
    let store = f.backend.store();
    let until = tokio::time::Instant::now() + Duration::from_millis(1500);
    let set_aside = async {
        tokio::time::sleep_until(until).await;
        copy(&f, &aside, &key.replacen("pending/", FAILED_PREFIX, 1)).await;
    };
    let (erased, ()) = tokio::join!(store.erase_call_until(1, "buried-late", id, Some(until)), set_aside);
    assert!(erased.is_ok_and(|e| e.items > 0), "the erase buried the call and finished");
    let left: Vec<String> = f.t.objects().await.into_iter().filter(|k| !k.starts_with("aside/")).collect();
    assert_eq!(left, Vec::<String>::new(), "no pending or failed copy of the erased call is left");
    f.t.delete().await;
}

/// A frame an erase cannot find by an item, nor yet in S3: a pending copy's frame whose PUT
/// lands after the erase (a late copy of a timed-out write, seed 24), and the frame of a
/// send answered 503 (S3 took the frame, not the pending copy, seed 23). The first finds the
/// erase's marker at its key (the key is the copy's token) and writes nothing; the second,
/// older than the erase, is removed by it.
#[tokio::test]
async fn an_erase_reaches_frames_no_item_names_written_before_it_and_a_late_one_writes_nothing() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let store = f.backend.store();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    // The 503'd send's frame: no item and no pending copy name it.
    let orphan = call_ingest_store::calls::Frames::key(1, "unseen", "0a1b2c3d4e5f60718293a4b5c6d7e8f9");
    store.frames().put(&orphan, b"a 503'd send's frame".to_vec().into(), owner, "unseen", now_ms()).await.unwrap();
    // A send answered 202 whose frame is not written yet.
    let (_, raw) = testkit::small_call("unseen", "pending");
    let receipt = Receipt::new(now_ms()).unwrap();
    store.put_pending(owner, Operation::CreateCall, "unseen", &raw, &receipt, false).await.unwrap();
    // Older than the erase by more than a send may still be in flight (FRAME_SKEW, 20 s;
    // S3's clock keeps seconds).
    tokio::time::sleep(Duration::from_millis(21_200)).await;
    let first = post_status(&f, "unseen", "stored").await;
    let id = first.body["id"].as_u64().unwrap();
    store.erase_call(1, "unseen", id).await.unwrap();
    // The late copy of the pending copy's frame PUT, after the erase.
    let late = call_ingest_store::calls::Frames::key(1, "unseen", &receipt.token);
    store.frames().put(&late, b"the late frame".to_vec().into(), owner, "unseen", receipt.received_ms).await.unwrap();
    let objects = f.t.objects().await;
    assert!(objects.is_empty(), "nothing of the erased call is left: {objects:?}");
    f.t.delete().await;
}

/// A send received before an erase began, whose direct write reached DynamoDB after the
/// erase finished (its answer had given up: 202) and created the call anew over the
/// tombstone: its pending copy finds the erase came after it was received, and a call that
/// is its own. It changes nothing; it must not blank the call's frame (a review of the
/// durable path after the history runs: the call read 404 from then on).
#[tokio::test]
async fn a_pending_copy_whose_direct_write_landed_after_an_erase_keeps_the_call_it_created() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("over-tomb", 6)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let body = large_body("over-tomb", 7);
    let raw = serde_json::to_vec(&body).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
    let receipt = Receipt::new(now_ms() - 3_000).unwrap();
    let store = f.backend.store();
    store.erase_call(1, "over-tomb", id).await.unwrap();
    let stored = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(4)).await.unwrap();
    assert!(stored.is_new());
    store.put_pending(owner, Operation::CreateCall, "over-tomb", &raw, &receipt, false).await.unwrap();
    let swept = sweep(&f).await;
    assert_eq!((swept.erased, swept.left), (0, 0), "{swept:?}");
    assert!(reads_as(&f, "over-tomb", &body).await, "the call its direct write created reads whole");
    f.t.delete().await;
}

/// A replay that waited as pending (202) while different content was stored is committed
/// after it: it replays what was current when it was received, so it is no revision (it
/// was inserted below the head as one: a, b, a, b).
#[tokio::test]
async fn a_pending_replay_committed_after_newer_content_adds_no_revision() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    assert_eq!(post_status(&f, "late-replay", "a").await.status, 201);
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "late-replay", "a").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(post_status(&f, "late-replay", "b").await.status, 200);
    let swept = sweep(&f).await;
    assert_eq!(swept.left, 0, "{swept:?}");
    assert_eq!(statuses(&f, "late-replay").await, ["a", "b"], "the replay is no revision");
    f.t.delete().await;
}

/// A replay of the current content, received after a different send that waits as pending,
/// is the last content received: the pending send goes below it when committed (it became
/// current over the replay, though received before it).
#[tokio::test]
async fn a_replay_stays_current_over_a_pending_send_received_before_it() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    assert_eq!(post_status(&f, "replayed", "a").await.status, 201);
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "replayed", "b").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let replay = post_status(&f, "replayed", "a").await;
    assert_eq!(replay.status, 200, "{}", replay.body);
    let swept = sweep(&f).await;
    assert_eq!(swept.left, 0, "{swept:?}");
    assert_eq!(statuses(&f, "replayed").await, ["a", "b", "a"], "b kept below the replay's content");
    f.t.delete().await;
}

/// The same content sent again after the call went a, b (pending, kept below a replay of a),
/// a: it is new content again, whatever older revision holds the same bytes (a pending copy
/// was judged against the revision last received before it, b, and dropped as a replay).
#[tokio::test]
async fn content_sent_again_after_a_replay_went_over_it_is_stored_again() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let pending_status = |status: &'static str| {
        let f = &f;
        async move {
            f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
            assert_eq!(post_status(f, "flip-flop", status).await.status, 202);
            f.t.clear_faults(&f.t.calls);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    assert_eq!(post_status(&f, "flip-flop", "a").await.status, 201);
    pending_status("b").await;
    assert_eq!(post_status(&f, "flip-flop", "a").await.status, 200);
    assert_eq!(sweep(&f).await.left, 0);
    assert_eq!(statuses(&f, "flip-flop").await, ["a", "b", "a"]);
    pending_status("b").await;
    assert_eq!(sweep(&f).await.left, 0);
    assert_eq!(statuses(&f, "flip-flop").await, ["a", "b", "a", "b"], "b again is new content, and current");
    f.t.delete().await;
}

/// Two erases of one call at once (a client's retry): the later marks the call with when it
/// began, and the earlier, burying it, keeps that time on the tombstone. A send received
/// between them is then dropped when committed, as the later erase deletes its copy. (With
/// the earlier erase's own time on the tombstone, the send was stored as a new call; then the
/// later erase, which had listed its copy, blanked that call's frame: it read 404 for good.)
#[tokio::test]
async fn two_erases_at_once_drop_the_send_received_between_them() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("twice", 8)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    // Each erase marks the call, then its first listing of S3 is answered late: the
    // earlier's after 1.5 s, the later's after 2.8 s, so the earlier buries the call first.
    let listing = |seconds: f64| json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": seconds, "times": 1});
    let tables = &f.t;
    let fired = |rule: u64| async move {
        while tables.fired(rule) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let held = f.t.fault(listing(1.5));
    let earlier = store.erase_call(1, "twice", id);
    let between = async {
        fired(held).await;
        let receipt = Receipt::new(now_ms()).unwrap();
        let raw = serde_json::to_vec(&large_body("twice", 9)).unwrap();
        store.put_pending(owner, Operation::CreateCall, "twice", &raw, &receipt, false).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        f.t.fault(listing(2.8));
        let later = store.erase_call(1, "twice", id).await;
        (receipt.received_ms, later)
    };
    let (earlier, (received, later)) = tokio::join!(earlier, between);
    assert!(earlier.is_ok() && later.is_ok(), "{earlier:?} {later:?}");
    let tombstone = store.raw_head(1, "twice").await.unwrap().expect("a tombstone");
    let erased_at = call_ingest_store::calls::item::get_u64(&tombstone, "erased_at").unwrap();
    assert!(erased_at > received, "the send between the erases is before the tombstone's time");
    sweep(&f).await;
    assert!(matches!(store.get_call(1, "twice", false).await, Ok(None)), "erased, and nothing stored over it");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// A send received after an erase began, whose direct write landed before the erase marked
/// the call (the erase read the call first, then found the new revision and erased it
/// too): its pending copy, received after the erase began, is of content the erase
/// removed. It is dropped when committed, as the tombstone's time is the latest receipt the
/// erase removed. (With the erase's own start on the tombstone, the copy was committed over
/// it as a new call whose frame the erase had blanked: the call read 404 for good.)
#[tokio::test]
async fn a_send_the_erase_removed_is_not_committed_again_by_its_pending_copy() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("removed", 10)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    // The erase's first reading of the call is answered 1.5 s late: the send lands meanwhile.
    let held = f.t.fault(json!({"service": "dynamodb", "op": "Query", "fault": "delay", "seconds": 1.5, "times": 1}));
    let erase = store.erase_call(1, "removed", id);
    let send = async {
        while f.t.fired(held) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        let raw = serde_json::to_vec(&large_body("removed", 11)).unwrap();
        let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
        let receipt = Receipt::new(now_ms()).unwrap();
        // The direct write lands, but its answer gave up (202): the copy is kept after it.
        let stored = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(4)).await.unwrap();
        store.put_pending(owner, Operation::CreateCall, "removed", &raw, &receipt, false).await.unwrap();
        stored
    };
    let (erased, stored) = tokio::join!(erase, send);
    assert!(erased.is_ok(), "{erased:?}");
    assert_eq!(stored.revision, 2, "the send landed as a revision before the erase marked the call");
    let swept = sweep(&f).await;
    assert_eq!(swept.committed, 0, "the copy is deleted or dropped: {swept:?}");
    let head = store.raw_head(1, "removed").await.unwrap().expect("a tombstone");
    assert!(call_ingest_store::calls::item::is_tombstone(&head), "nothing stored over the erase: {head:?}");
    assert!(matches!(store.get_call(1, "removed", false).await, Ok(None)));
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// A send received before an erase, whose pending copy (202) was written while the erase ran
/// and whose direct write then created the call anew over the tombstone: the erase, once it
/// buried the call, must not blank that send's frame. (Its second look listed `pending/` too
/// and wrote its marker at the copy's frame; the new call then named the marker and read 404
/// for good: a third reader's find.)
#[tokio::test]
async fn a_send_creating_the_call_anew_after_the_burial_keeps_its_frame() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post(&f, &large_body("anew", 12)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let body = large_body("anew", 13);
    let raw = serde_json::to_vec(&body).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
    let receipt = Receipt::new(now_ms()).unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    // The erase's first listing of the call's copies is answered late: the copy is written
    // after it was read.
    let listing =
        f.t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 1.5, "times": 1}));
    let erase = store.erase_call(1, "anew", id);
    let copy = async {
        while f.t.fired(listing) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        store.put_pending(owner, Operation::CreateCall, "anew", &raw, &receipt, false).await.unwrap();
    };
    let (erased, ()) = tokio::join!(erase, copy);
    assert!(erased.is_ok(), "{erased:?}");
    // Its direct write, stuck until now, creates the call anew over the tombstone.
    let stored = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(4)).await.unwrap();
    assert!(stored.is_new(), "{stored:?}");
    sweep(&f).await;
    assert!(reads_as(&f, "anew", &body).await, "the call it created reads whole");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// The same send, but its pending copy is committed (and dropped: received before the
/// erase) before its direct write, stuck until then, lands over the tombstone. The drop must
/// leave that write nothing to land on: it blanks the frame the write names. (A fresh
/// reader's find: the new call read 404 for good.) The drop is noted on the tombstone, and
/// a write over a tombstone that noted its own submission fails: the send is the erase's.
#[tokio::test]
async fn a_direct_write_landing_after_its_copy_was_dropped_creates_nothing() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let late = dropped_copy_then_its_direct_write(&f, "dropped", None, false).await;
    assert!(late.is_err(), "the erase took the send: {late:?}");
    let head = f.backend.store().raw_head(1, "dropped").await.unwrap().expect("a tombstone");
    assert!(call_ingest_store::calls::item::is_tombstone(&head), "nothing created over the erase: {head:?}");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// The same, with another client's call created after the erase (201) before the copy is
/// dropped: the drop is noted on that call's head, and the send's write cannot revise it
/// into naming the blank frame (the new call, acknowledged, would read 404): neither one
/// sent before the note and applied after it (`late`), nor one that reads the note.
#[tokio::test]
async fn a_direct_write_landing_after_its_copy_was_dropped_leaves_a_newer_call_readable() {
    for (call_id, late_write) in [("dropped-b", true), ("dropped-c", false)] {
        let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
        let newer = large_body(call_id, 14);
        let late = dropped_copy_then_its_direct_write(&f, call_id, Some(&newer), late_write).await;
        assert!(late.as_ref().map_or(true, |s| !s.is_new()), "{late:?}");
        assert!(reads_as(&f, call_id, &newer).await, "{call_id}: the newer call reads whole: {late:?}");
        assert_eq!(pending(&f).await, Vec::<String>::new());
        f.t.delete().await;
    }
}

/// A call stored, then a large send received, whose pending copy is written while an erase
/// runs; then `newer` (if any) stored as a new call, the copy committed (dropped), and
/// last the send's direct write: its answer. With `late_write`, that write is sent before
/// the copy is committed, and each of its transactions is applied 3 s after its attempt
/// (the copy dropped meanwhile).
async fn dropped_copy_then_its_direct_write(
    f: &TwoWorkspaces,
    call_id: &str,
    newer: Option<&Value>,
    late_write: bool,
) -> Result<call_ingest_store::calls::Stored, call_ingest_store::calls::StoreError> {
    let first = post(f, &large_body(call_id, 12)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let raw = serde_json::to_vec(&large_body(call_id, 13)).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
    let receipt = Receipt::new(now_ms()).unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let listing =
        f.t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 1.5, "times": 1}));
    let erase = store.erase_call(1, call_id, id);
    let copy = async {
        while f.t.fired(listing) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        store.put_pending(owner, Operation::CreateCall, call_id, &raw, &receipt, false).await.unwrap();
    };
    let (erased, ()) = tokio::join!(erase, copy);
    assert!(erased.is_ok(), "{erased:?}");
    if let Some(newer) = newer {
        let created = post(f, newer).await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    if late_write {
        let late = f.t.fault(json!({"op": "TransactWriteItems", "fault": "late", "seconds": 3.0,
                                    "contains": call_id, "times": 3}));
        let answer = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(2)).await;
        assert!(f.t.fired(late) > 0, "the write reached DynamoDB: {answer:?}");
        let swept = sweep(f).await;
        assert_eq!(pending(f).await, Vec::<String>::new(), "{swept:?}");
        tokio::time::sleep(Duration::from_secs(4)).await;
        return answer;
    }
    // The queue commits the copy first: received before the erase, it is dropped.
    let swept = sweep(f).await;
    assert_eq!(pending(f).await, Vec::<String>::new(), "{swept:?}");
    store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(4)).await
}

/// A large send whose revision landed with its reply lost; the SDK's retry failed its
/// condition (the head was its own by then), and while that answer was on its way the call
/// was erased, its frames with it, this send's among them. The send then created the call
/// anew naming that frame, and the call read "no such call" for good (the history checker,
/// seed 107). It answers "not yet" now (its pending copy, received before the erase, is
/// dropped), and the call stays erased.
#[tokio::test]
async fn a_send_whose_revision_was_erased_before_its_answer_does_not_create_the_call_anew() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let call_id = "revised-then-erased";
    let first = post(&f, &large_body(call_id, 12)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let raw = serde_json::to_vec(&large_body(call_id, 13)).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
    let lost = f.t.fault(json!({"op": "TransactWriteItems", "fault": "lost_reply", "contains": call_id, "times": 1}));
    let held = f
        .t
        .fault(json!({"op": "TransactWriteItems", "fault": "delay", "seconds": 2.0, "contains": call_id, "times": 1}));
    let receipt = Receipt::new(now_ms()).unwrap();
    let send = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(10));
    let erase = async {
        while f.t.fired(held) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        store.erase_call(1, call_id, id).await
    };
    let (sent, erased) = tokio::join!(send, erase);
    assert_eq!(f.t.fired(lost), 1, "the revision landed, its reply lost");
    assert!(erased.unwrap().items > 0);
    let read = store.get_call(1, call_id, true).await.unwrap();
    match sent {
        Ok(stored) => assert!(read.is_some(), "answered {stored:?}, and the call reads no such call"),
        Err(e) => {
            assert!(matches!(e, call_ingest_store::calls::StoreError::Unavailable(_)), "{e:?}");
            assert!(read.is_none(), "erased, and nothing stored over it");
        }
    }
    f.t.delete().await;
}

/// A large send D whose content was stored meanwhile by another request of the same bytes
/// (between D's frame and its revision): its verdict is "unchanged", its frame unused. Its
/// budget ran out while S3 was removing that frame: it answered 202 and its pending copy
/// (the same token) was kept, the removal landed, and the copy, committed below a later
/// send, named the removed frame: the call read "no such call" (a fresh reader's find).
/// The removal is no longer cut: D keeps its verdict, and no copy is made.
#[tokio::test]
async fn a_send_whose_budget_ends_while_its_unused_frame_is_removed_keeps_its_verdict() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let call_id = "unused-frame-cut";
    let first = post(&f, &large_body(call_id, 12)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let a = serde_json::to_vec(&large_body(call_id, 13)).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &a).unwrap();
    let receipt = Receipt::new(now_ms()).unwrap();
    // D's frame waits 1 s (the other request of A lands meanwhile); its removal 3 s.
    let put = |seconds: f64| {
        f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "delay", "seconds": seconds,
                         "contains": receipt.token, "times": 1}))
    };
    let (frame, removal) = (put(1.0), put(3.0));
    let d = store.put_call_within(owner, &doc, &a, &receipt, Duration::from_secs(2));
    let other = async {
        while f.t.fired(frame) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        store.put_call(owner, &doc, &a).await.unwrap()
    };
    let (d, other) = tokio::join!(d, other);
    assert_eq!(other.revision, 2, "{other:?}");
    assert_eq!(f.t.fired(removal), 1, "D's frame was removed: {d:?}");
    if d.is_err() {
        store.put_pending(owner, Operation::CreateCall, call_id, &a, &receipt, false).await.unwrap();
    }
    let later = post(&f, &large_body(call_id, 14)).await;
    assert_eq!(later.status, 200, "{}", later.body);
    sweep(&f).await;
    assert!(
        store.get_call(1, call_id, true).await.unwrap().is_some(),
        "D answered {d:?}, and the call reads no such call"
    );
    f.t.delete().await;
}

/// A large send of `body` received at `received` (epoch ms), whose direct write wrote its
/// frame (any bytes: it is never read) and then gave up (202): its pending copy is kept.
/// Answers its receipt and its frame's key.
async fn left_by_a_direct_write(f: &TwoWorkspaces, call_id: &str, body: &Value, received: u64) -> (Receipt, String) {
    let agent = owner_agent(f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let receipt = Receipt::new(received).unwrap();
    let key = call_ingest_store::calls::Frames::key(1, call_id, &receipt.token);
    let frame = b"its direct write's frame".to_vec().into();
    f.backend.store().frames().put(&key, frame, owner, call_id, received).await.unwrap();
    copy_again(f, call_id, body, &receipt).await;
    (receipt, key)
}

/// The pending copy of send `receipt` of `body`, kept (again: its delete failed, or a second
/// commit of it runs late).
async fn copy_again(f: &TwoWorkspaces, call_id: &str, body: &Value, receipt: &Receipt) {
    let agent = owner_agent(f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let raw = serde_json::to_vec(body).unwrap();
    f.backend.store().put_pending(owner, Operation::CreateCall, call_id, &raw, receipt, false).await.unwrap();
}

/// Whether the call reads whole, revisions included, with `current` as its content and
/// `revisions` earlier ones.
async fn reads_with(f: &TwoWorkspaces, call_id: &str, current: &Value, revisions: usize) -> bool {
    match f.backend.store().get_call(1, call_id, true).await {
        Ok(Some(call)) => call.current.raw == serde_json::to_vec(current).unwrap() && call.revisions.len() == revisions,
        _ => false,
    }
}

/// A send whose direct write wrote its frame, then gave up (202) before DynamoDB took it,
/// while another send stored the same content: its pending copy is committed unchanged, and
/// the frame no item names is erased once the copy's token is noted on the head (it left an
/// orphan frame: the history checker, seed 37).
#[tokio::test]
async fn an_unchanged_pending_copy_erases_the_frame_its_direct_write_left() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let body = large_body("twice", 14);
    let first = post(&f, &body).await;
    assert_eq!(first.status, 201, "{}", first.body);
    // Received before the stored send, and after it.
    let (_, before) = left_by_a_direct_write(&f, "twice", &body, now_ms() - 25_000).await;
    let (_, after) = left_by_a_direct_write(&f, "twice", &body, now_ms()).await;
    let swept = sweep(&f).await;
    assert_eq!((swept.committed, swept.left), (2, 0), "{swept:?}");
    let objects = f.t.objects().await;
    assert!(!objects.contains(&before) && !objects.contains(&after), "the copies' frames are erased: {objects:?}");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    assert!(reads_with(&f, "twice", &body, 0).await, "the call reads whole");
    f.t.delete().await;
}

/// A large send whose frame was written while another send stored the same content, so it
/// ends `unchanged`, and every Query of the call fails. Its create found the other send's
/// call: no item of it can name the frame, which is erased (200).
#[tokio::test]
async fn a_direct_send_that_ended_unchanged_erases_the_frame_it_wrote() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    assert_eq!(unsure(&f, "unsure-a", false).await, 200);
    f.t.delete().await;
}

/// The same, its first create answered "conflict" (it may have been applied): the send
/// cannot tell whether an item of it names the frame. Kept, the frame was named by nothing
/// and outlived an erase (the history checker, seed 77): the send answers 202 instead, and
/// its pending copy erases the frame once its verdict is noted.
#[tokio::test]
async fn a_direct_send_that_cannot_tell_whether_its_frame_is_named_leaves_it_to_its_copy() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    assert_eq!(unsure(&f, "unsure-b", true).await, 202);
    f.t.delete().await;
}

/// Sends the same large call twice, the first one's frame PUT answered 3 s late, so the
/// second stores it first; every Query of the call fails, and with `conflict`, the first's
/// create is answered "conflict". Checks that only the stored send's frame is left once
/// the pending copies are committed; answers the first send's status.
async fn unsure(f: &TwoWorkspaces, call_id: &str, conflict: bool) -> u16 {
    let body = large_body(call_id, 22);
    let pk = format!("CALL#1#{call_id}");
    let put = f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "delay", "seconds": 3.0,
                               "contains": "/frames/", "times": 1}));
    // The first PutItem of the call is the second send's create.
    let create = f.t.fault(json!({"op": "PutItem", "fault": "conflict", "contains": pk, "skip": 1,
                                  "times": u32::from(conflict)}));
    f.t.fault(json!({"op": "Query", "fault": "internal", "contains": pk, "times": 1000}));
    let second = async {
        while f.t.fired(put) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        post(f, &body).await
    };
    let (first, second) = tokio::join!(post(f, &body), second);
    assert_eq!(second.status, 201, "{}", second.body);
    assert_eq!(f.t.fired(create), u64::from(conflict));
    f.t.clear_faults(&f.t.calls);
    let swept = sweep(f).await;
    assert_eq!((swept.committed, swept.left), (usize::from(first.status == 202), 0), "{swept:?}");
    let frames: Vec<String> = f.t.objects().await.into_iter().filter(|k| k.starts_with("frames/")).collect();
    assert_eq!(frames.len(), 1, "only the stored send's frame is left: {frames:?}");
    assert!(reads_with(f, call_id, &body, 0).await, "the call reads whole");
    first.status
}

/// The copy of the last test, its frame erased, is committed again (its delete failed, or
/// its instance was killed) after other content came: it changes nothing, and no revision
/// names the erased frame. (With the frame erased on the verdict alone, the copy was kept
/// below the new content as a revision naming the erase's marker, which read 404: a review
/// of the fix.)
#[tokio::test]
async fn an_unchanged_copy_committed_again_after_new_content_changes_nothing() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let body = large_body("again", 15);
    assert_eq!(post(&f, &body).await.status, 201);
    let (receipt, frame) = left_by_a_direct_write(&f, "again", &body, now_ms() - 25_000).await;
    assert_eq!(sweep(&f).await.committed, 1);
    assert!(!f.t.objects().await.contains(&frame), "erased: nothing names it");
    copy_again(&f, "again", &body, &receipt).await;
    let newer = large_body("again", 16);
    assert_eq!(post(&f, &newer).await.status, 200);
    let swept = sweep(&f).await;
    assert_eq!((swept.committed, swept.left), (1, 0), "{swept:?}");
    assert!(reads_with(&f, "again", &newer, 1).await, "the call reads whole; the copy added no revision");
    f.t.delete().await;
}

/// New content whose direct write read the head before an unchanged copy's token was noted
/// on it, and writes after: its write fails on the note, reads the head again, and carries
/// the token on. The copy committed again then finds itself committed, and names no erased
/// frame. (Without the condition, the new head dropped the token: a review of the fix.)
#[tokio::test]
async fn a_write_that_read_the_head_before_a_copys_note_carries_the_note_on() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let body = large_body("inflight", 19);
    assert_eq!(post(&f, &body).await.status, 201);
    let (receipt, _) = left_by_a_direct_write(&f, "inflight", &body, now_ms() - 25_000).await;
    // The new content's read of the head is answered 2.5 s late; the copy is committed
    // meanwhile.
    let read = f.t.fault(json!({"op": "GetItem", "fault": "delay", "seconds": 2.5,
                                "contains": "CALL#1#inflight", "times": 1}));
    let newer = large_body("inflight", 20);
    let commit = async {
        while f.t.fired(read) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        sweep(&f).await
    };
    let (answer, swept) = tokio::join!(post(&f, &newer), commit);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!((swept.committed, swept.left), (1, 0), "{swept:?}");
    copy_again(&f, "inflight", &body, &receipt).await;
    let swept = sweep(&f).await;
    assert_eq!((swept.committed, swept.left), (1, 0), "{swept:?}");
    assert!(reads_with(&f, "inflight", &newer, 1).await, "the call reads whole; the copy added no revision");
    f.t.delete().await;
}

/// An erase that read the call before an unchanged copy's token was noted on it: its
/// tombstone keeps the note (the burial is conditioned on the noted tokens it read, so it
/// reads the call again), and the copy committed again after the erase writes nothing over
/// the tombstone. (The tombstone dropped the note: the copy, received after the erase began,
/// created the call anew naming its erased frame, a call that read "no such call" for
/// good: a review of the fix.)
#[tokio::test]
async fn an_erase_keeps_the_noted_copies_and_a_noted_copy_never_names_its_erased_frame() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let body = large_body("noted", 21);
    let first = post(&f, &body).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let store = f.backend.store();
    // The erase's first reading of the call is answered 2.5 s late (under the SDK's 3 s).
    let read = f.t.fault(json!({"op": "Query", "fault": "delay", "seconds": 2.5,
                                "contains": "CALL#1#noted", "times": 1}));
    let erase = store.erase_call(1, "noted", id);
    let copy = async {
        while f.t.fired(read) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A send of the same content received since.
        let (receipt, _) = left_by_a_direct_write(&f, "noted", &body, now_ms()).await;
        (receipt, sweep_within(&f, 2).await)
    };
    let (erased, (receipt, swept)) = tokio::join!(erase, copy);
    assert!(erased.is_ok(), "{erased:?}");
    assert_eq!(swept.committed, 1, "noted as committed into the call: {swept:?}");
    copy_again(&f, "noted", &body, &receipt).await;
    let swept = sweep(&f).await;
    assert_eq!((swept.committed, swept.left), (0, 0), "{swept:?}");
    let head = store.raw_head(1, "noted").await.unwrap().expect("a tombstone");
    assert!(call_ingest_store::calls::item::is_tombstone(&head), "nothing created over the erase: {head:?}");
    assert_eq!(pending(&f).await, Vec::<String>::new());
    f.t.delete().await;
}

/// Retell's webhooks of one call: the provider mapping's fixtures.
const RETELL: Operation = Operation::ProviderWebhook(call_ingest_core::providers::Provider::Retell);
const RETELL_ENDED: &[u8] = include_bytes!("../../../core/tests/fixtures/providers/retell_call_ended.json");
const RETELL_ANALYZED: &[u8] = include_bytes!("../../../core/tests/fixtures/providers/retell_call_analyzed.json");

/// Retell's `call_ended` and `call_analyzed` of one call stored (the analysis current), the
/// call erased, then both sent again, in `order`: the outcome of each, in that order.
async fn stages_after_an_erase(order: [&str; 2]) -> Vec<call_ingest_store::calls::Outcome> {
    use call_ingest_core::providers::ingest_any;
    use call_ingest_store::calls::Outcome;
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let raw = |stage: &str| match stage {
        "call_ended" => RETELL_ENDED,
        _ => RETELL_ANALYZED,
    };
    let record = |stage: &str| ingest_any(RETELL, raw(stage)).unwrap();
    let call_id = record("call_ended").call_id().to_owned();
    let first = store.put_call(owner, &record("call_ended"), raw("call_ended")).await.unwrap();
    let analysis = store.put_call(owner, &record("call_analyzed"), raw("call_analyzed")).await.unwrap();
    assert_eq!(analysis.outcome, Outcome::Revised);
    store.erase_call(1, &call_id, first.id).await.unwrap();
    let mut outcomes = Vec::new();
    for stage in order {
        outcomes.push(store.put_call(owner, &record(stage), raw(stage)).await.unwrap().outcome);
    }
    let head = store.raw_head(1, &call_id).await.unwrap().expect("a head");
    assert!(!call_ingest_store::calls::item::is_tombstone(&head), "{head:?}");
    f.t.delete().await;
    outcomes
}

/// Two `call_analyzed` reports A1 and A2 (received in that order) answered 202, then a
/// `call_ended` E received after both stored first. A1, committed over E by its stage, must
/// not take E's later receipt as its own: A2, the later analysis, is then kept below it.
/// (The history checker, seed 95: a later report of the head's own stage kept below it.)
#[tokio::test]
async fn a_stage_landing_over_a_later_report_leaves_later_reports_of_its_stage_on_top() {
    use call_ingest_core::providers::ingest_any;
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let (operation, ended_raw, a1) = (RETELL, RETELL_ENDED, RETELL_ANALYZED.to_vec());
    let mut second: Value = serde_json::from_slice(&a1).unwrap();
    second["call"]["call_analysis"]["call_summary"] = json!("A second analysis.");
    let a2 = serde_json::to_vec(&second).unwrap();
    let ended = ingest_any(operation, ended_raw).unwrap();
    let call_id = ended.call_id().to_owned();
    for raw in [&a1, &a2] {
        let receipt = Receipt::new(now_ms()).unwrap();
        store.put_pending(owner, operation, &call_id, raw, &receipt, false).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(store.put_call(owner, &ended, ended_raw).await.unwrap().is_new());
    let swept = sweep(&f).await;
    assert_eq!(swept.committed, 2, "{swept:?}");
    let call = store.get_call(1, &call_id, false).await.unwrap().expect("the call");
    assert!(call.current.raw == a2, "the later analysis is current (revision {})", call.current.revision);
    f.t.delete().await;
}

/// API sends and Retell's webhooks on one call id: `call_analyzed` stored, a Create Call Y
/// answered 202 (its copy pending), then `call_ended`, received after Y, kept below the
/// analysis; Y commits last. Receipt puts `call_ended` over Y, Y over the analysis, and the
/// stage puts the analysis over `call_ended`: the rules go round, and the contract lets any
/// of the three be current (DESIGN.md, "Retell's two events are one call"; the history
/// checker's `_Order`). What it does promise: each is stored, once. (A fresh reader's find;
/// raising the head's `seen_at` instead kept a later report of one stage below an earlier.)
#[tokio::test]
async fn an_api_send_between_a_providers_stages_is_stored_once_beside_both() {
    use call_ingest_core::providers::ingest_any;
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let (ended_raw, analyzed_raw) = (RETELL_ENDED, RETELL_ANALYZED);
    let (ended, analyzed) = (ingest_any(RETELL, ended_raw).unwrap(), ingest_any(RETELL, analyzed_raw).unwrap());
    let call_id = ended.call_id().to_owned();
    assert!(store.put_call(owner, &analyzed, analyzed_raw).await.unwrap().is_new());
    tokio::time::sleep(Duration::from_millis(5)).await;
    let y = serde_json::to_vec(&large_body(&call_id, 15)).unwrap();
    store
        .put_pending(owner, Operation::CreateCall, &call_id, &y, &Receipt::new(now_ms()).unwrap(), false)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store.put_call(owner, &ended, ended_raw).await.unwrap();
    assert_eq!(sweep(&f).await.committed, 1);
    let call = store.get_call(1, &call_id, true).await.unwrap().expect("the call");
    let all: Vec<&[u8]> =
        call.revisions.iter().map(|r| r.raw.as_slice()).chain([call.current.raw.as_slice()]).collect();
    let count = |raw: &[u8]| all.iter().filter(|r| **r == raw).count();
    assert_eq!((count(&y), count(ended_raw)), (1, 1), "Y and call_ended each stored once");
    assert!(count(analyzed_raw) >= 1, "and the analysis kept");
    // Today Y, committed last, is current; any of the three keeps the contract.
    assert!(call.current.raw == y, "revision {} is current", call.current.revision);
    f.t.delete().await;
}

/// A provider's earlier stage kept below a later one (Retell's `call_ended` under
/// `call_analyzed`: a late mark among the head's committed tokens) belongs to the erased
/// call. Sent again after the erase, `call_analyzed` then `call_ended` are both stored. (The
/// tombstone carried the late mark into the new call, and the second `call_ended` was taken
/// for a replay of a stage kept, and stored nothing: a review of the noted copies.)
#[tokio::test]
async fn an_erase_forgets_the_provider_stages_its_call_kept() {
    use call_ingest_store::calls::Outcome;
    let outcomes = stages_after_an_erase(["call_analyzed", "call_ended"]).await;
    // call_ended is stored again, below the analysis.
    assert_eq!(outcomes, [Outcome::Created, Outcome::Revised]);
}

/// The other order: both sent again as Retell sends them. The first is a new call (201),
/// the second revises it: nothing the erased call kept (its committed tokens, its stages)
/// may answer `unchanged` for a report the new call never stored.
#[tokio::test]
async fn stages_sent_again_in_order_after_an_erase_are_both_stored() {
    use call_ingest_store::calls::Outcome;
    let outcomes = stages_after_an_erase(["call_ended", "call_analyzed"]).await;
    assert_eq!(outcomes, [Outcome::Created, Outcome::Revised]);
}

/// A call accepted while storage failed was counted against its workspace's send budget
/// when it came in: its commit takes nothing from the budget, so a backlog an outage left
/// is committed at once, even while the workspace's budget is spent (its new sends use
/// it). Only paced copies (sent over the budget) wait for room.
#[tokio::test]
async fn a_backlog_left_by_an_outage_is_committed_without_waiting_for_the_send_budget() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let store = f.backend.store();
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let mut paced = Vec::new();
    for (call_id, over_budget) in
        [("down-0", false), ("down-1", false), ("down-2", false), ("over-0", true), ("over-1", true)]
    {
        let (_, raw) = testkit::small_call(call_id, "kept while it could not be committed");
        let receipt = Receipt::now().unwrap();
        let key = store.put_pending(owner, Operation::CreateCall, call_id, &raw, &receipt, over_budget).await.unwrap();
        assert_eq!(is_paced(&key), over_budget, "{key}");
        if over_budget {
            paced.push(key);
        }
    }
    // The workspace's budget has no room for the whole sweep.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let spent: &MayCommit<'_> = &|_| {
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(async { Ok::<_, StoreError>(false) })
    };
    let sweep = store.sweep_pending(now_ms() + 1, Instant::now() + Duration::from_secs(4), spent).await.unwrap();
    assert_eq!((sweep.committed, sweep.left), (3, 2), "{sweep:?}");
    assert!(asked.load(std::sync::atomic::Ordering::Relaxed) > 0, "the paced copies asked the budget");
    let mut left = pending(&f).await;
    left.sort();
    paced.sort();
    assert_eq!(left, paced, "only the paced copies wait");
    for call_id in ["down-0", "down-1", "down-2"] {
        assert!(store.get_call(1, call_id, false).await.unwrap().is_some(), "{call_id} committed");
    }
    // With room, the paced ones follow.
    let room: &MayCommit<'_> = &|_| Box::pin(async { Ok::<_, StoreError>(true) });
    let sweep = store.sweep_pending(now_ms() + 1, Instant::now() + Duration::from_secs(20), room).await.unwrap();
    assert_eq!((sweep.committed, sweep.left), (2, 0), "{sweep:?}");
    f.t.delete().await;
}

/// One call with an older paced copy and a newer unpaced one: the newer waits behind the
/// older while the budget is spent (their order is kept), and with room both are committed
/// in order, the newer current. A sweep of unpaced copies alone never asks the budget.
#[tokio::test]
async fn a_calls_unpaced_copy_waits_behind_its_older_paced_one() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let store = f.backend.store();
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let t0 = now_ms();
    for (at, status, paced) in [(0, "older", true), (10, "newer", false)] {
        let mut body = create_call_body("mixed");
        body["call_status"] = json!(status);
        let raw = serde_json::to_vec(&body).unwrap();
        store
            .put_pending(owner, Operation::CreateCall, "mixed", &raw, &Receipt::new(t0 + at).unwrap(), paced)
            .await
            .unwrap();
    }
    let spent: &MayCommit<'_> = &|_| Box::pin(async { Ok::<_, StoreError>(false) });
    let sweep = store.sweep_pending(t0 + 11, Instant::now() + Duration::from_secs(3), spent).await.unwrap();
    assert_eq!((sweep.committed, sweep.left), (0, 2), "{sweep:?}");
    let room: &MayCommit<'_> = &|_| Box::pin(async { Ok::<_, StoreError>(true) });
    let sweep = store.sweep_pending(t0 + 11, Instant::now() + Duration::from_secs(20), room).await.unwrap();
    assert_eq!((sweep.committed, sweep.left), (2, 0), "{sweep:?}");
    assert_eq!(statuses(&f, "mixed").await, ["older", "newer"]);

    let (_, raw) = testkit::small_call("unpaced-only", "x");
    store
        .put_pending(owner, Operation::CreateCall, "unpaced-only", &raw, &Receipt::now().unwrap(), false)
        .await
        .unwrap();
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let counting: &MayCommit<'_> = &|_| {
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(async { Ok::<_, StoreError>(true) })
    };
    let sweep = store.sweep_pending(now_ms() + 1, Instant::now() + Duration::from_secs(20), counting).await.unwrap();
    assert_eq!((sweep.committed, asked.load(std::sync::atomic::Ordering::Relaxed)), (1, 0), "{sweep:?}");
    f.t.delete().await;
}

/// A large send S of a new call reads no call, and writes its frame (answered late);
/// meanwhile T creates the call and an erase of it begins and marks it. S's create finds the
/// call being erased and S waits (202). S's instance's clock runs 2 s ahead: its receipt
/// is after the erase's boundary, so its pending copy is not the erase's to drop and is
/// stored anew once the erase is done, with its frame, under the same key. S must not remove
/// that frame as it waits: a DELETE of it arriving late would take the frame of a stored
/// call. (Before, S removed it, and the DELETE, arriving 8 s late, left the call unreadable.)
#[tokio::test]
async fn a_send_that_waits_for_an_erase_not_covering_it_leaves_its_frame_for_its_copy() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let call_id = "waits-not-covered";
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let body = large_body(call_id, 23);
    let raw = serde_json::to_vec(&body).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
    // Far enough ahead that the erase, however slow this machine, begins before it.
    let receipt = Receipt::new(now_ms() + 2_000).unwrap();
    // S's frame is written at once and answered 1.2 s late; its DELETE, if it sends one,
    // arrives a second time 8 s late. The erase waits 4 s on a listing once it has marked.
    f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "delay", "seconds": 1.2,
                     "contains": receipt.token, "times": 1}));
    f.t.fault(json!({"service": "s3", "op": "DeleteObject", "fault": "late", "seconds": 8.0,
                     "contains": receipt.token, "times": 1}));
    f.t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 4.0, "times": 1}));
    let created_then_erased = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (t_doc, t_raw) = testkit::small_call(call_id, "T, created while S writes its frame");
        let t = store.put_call(owner, &t_doc, &t_raw).await.unwrap();
        store.erase_call(1, call_id, t.id).await
    };
    let s = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(8));
    let (s, erased) = tokio::join!(s, created_then_erased);
    assert!(erased.is_ok(), "{erased:?}");
    assert!(matches!(s, Err(StoreError::Unavailable(_))), "S must wait: {s:?}");
    // The handler's pending copy of S, committed now the erase is done: stored anew.
    let key = store.put_pending(owner, Operation::CreateCall, call_id, &raw, &receipt, false).await.unwrap();
    let committed = store.commit_pending(&key).await.unwrap();
    assert!(matches!(committed, call_ingest_store::calls::pending::Committed::Stored(_)), "{committed:?}");
    assert!(reads_as(&f, call_id, &body).await, "S's copy reads back");
    // A late DELETE, had S sent one, has arrived by now.
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert!(reads_as(&f, call_id, &body).await, "a late DELETE took the frame of a stored call");
    f.t.delete().await;
}

/// The queue's notice of a call's newer unpaced copy, while an older paced copy of the
/// same call waits for a spent budget: nothing is committed (the newer would otherwise be
/// overwritten by the older, committed later), the answer says paced (the message is done
/// with: the sweep commits both at the workspace's rate), and both copies are kept. With
/// room, the notice commits both, oldest first.
#[tokio::test]
async fn a_notice_of_a_newer_copy_waits_behind_its_calls_older_paced_copy() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = owner_agent(&f).await;
    let store = f.backend.store();
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let t0 = now_ms();
    let mut keys = Vec::new();
    for (at, status, paced) in [(0, "older", true), (10, "newer", false)] {
        let mut body = create_call_body("noticed");
        body["call_status"] = json!(status);
        let raw = serde_json::to_vec(&body).unwrap();
        let receipt = Receipt::new(t0 + at).unwrap();
        keys.push(store.put_pending(owner, Operation::CreateCall, "noticed", &raw, &receipt, paced).await.unwrap());
    }
    let deadline = || Instant::now() + Duration::from_secs(20);
    let spent: &MayCommit<'_> = &|_| Box::pin(async { Ok::<_, StoreError>(false) });
    // Each notice reaches its own copy and the older ones of its call.
    for (key, upto) in keys.iter().zip([1, 2]).rev() {
        let done = store.commit_notified(key, deadline(), spent).await.unwrap();
        assert_eq!((done.sweep.committed, done.sweep.left, done.paced), (0, upto, true), "{key}: {done:?}");
    }
    assert_eq!(pending(&f).await.len(), 2, "both copies are kept for the sweep");
    assert!(store.get_call(1, "noticed", false).await.unwrap().is_none(), "nothing was committed");
    let room: &MayCommit<'_> = &|_| Box::pin(async { Ok::<_, StoreError>(true) });
    let done = store.commit_notified(&keys[1], deadline(), room).await.unwrap();
    assert_eq!((done.sweep.committed, done.sweep.left, done.paced), (2, 0, false), "{done:?}");
    assert_eq!(statuses(&f, "noticed").await, ["older", "newer"]);
    f.t.delete().await;
}

/// An erase that runs while a paced copy of its call waits for the send budget: the copy
/// was received before the erase began, so the erase removes it, and the commit the budget
/// then lets through finds nothing to store. The call stays erased; nothing is left pending.
#[tokio::test]
async fn an_erase_while_a_paced_copy_waits_for_the_budget_leaves_the_call_erased() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let call_id = "erased-while-paced";
    let first = post(&f, &create_call_body(call_id)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let store = f.backend.store();
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let mut body = create_call_body(call_id);
    body["call_status"] = json!("revised over the budget");
    let raw = serde_json::to_vec(&body).unwrap();
    let key =
        store.put_pending(owner, Operation::CreateCall, call_id, &raw, &Receipt::now().unwrap(), true).await.unwrap();
    assert!(is_paced(&key), "{key}");
    let erases = std::sync::atomic::AtomicUsize::new(0);
    // The budget answers only once the erase has run.
    let erase_then_room: &MayCommit<'_> = &|_| {
        Box::pin(async {
            erases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            store.erase_call(1, call_id, id).await.map(|_| true)
        })
    };
    let sweep =
        store.sweep_pending(now_ms() + 1, Instant::now() + Duration::from_secs(20), erase_then_room).await.unwrap();
    assert_eq!(erases.load(std::sync::atomic::Ordering::Relaxed), 1, "{sweep:?}");
    // The erase took the copy (gone); were it left, the commit would still find the call
    // erased since it was received (erased), as a late commit does.
    assert_eq!((sweep.committed, sweep.gone, sweep.left), (0, 1, 0), "{sweep:?}");
    assert!(store.get_call(1, call_id, false).await.unwrap().is_none(), "the erased call came back");
    assert!(pending(&f).await.is_empty(), "a copy was left pending");
    f.t.delete().await;
}

/// A large send S of the call's current content, whose first read of the head answers late
/// while another send revises the call and an erase marks it: reading the head again,
/// S finds other content being erased. It waits (202 at the handler) and writes no frame.
/// Before, only its first read was checked: it wrote its frame, then removed it as it
/// waited, and that DELETE, applied late, could take the frame its pending copy wrote
/// again once committed (a fresh reader's find).
#[tokio::test]
async fn a_send_that_finds_the_call_being_erased_when_it_reads_it_again_writes_no_frame() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let call_id = "erasing-on-reread";
    let body = large_body(call_id, 21);
    let first = post(&f, &body).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["id"].as_u64().unwrap();
    let agent = owner_agent(&f).await;
    let owner = Owner { workspace_id: 1, agent_id: &agent };
    let store = f.backend.store();
    let raw = serde_json::to_vec(&body).unwrap();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, &raw).unwrap();
    let receipt = Receipt::new(now_ms()).unwrap();
    // S's first read of the head answers 1 s late (the call as it was); the erase, once it
    // has marked the call, waits on its listing.
    f.t.fault(json!({"op": "GetItem", "fault": "delay", "seconds": 1.0, "contains": format!("CALL#1#{call_id}"),
                     "times": 1}));
    f.t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 4.0, "times": 1}));
    let frame = f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "delay", "seconds": 0.0,
                                 "contains": receipt.token, "times": 1}));
    let s = store.put_call_within(owner, &doc, &raw, &receipt, Duration::from_secs(4));
    let revised_then_erased = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (other, other_raw) = testkit::small_call(call_id, "other content");
        store.put_call(owner, &other, &other_raw).await.unwrap();
        store.erase_call(1, call_id, id).await
    };
    let (s, erased) = tokio::join!(s, revised_then_erased);
    assert!(matches!(s, Err(StoreError::Unavailable(_))), "{s:?}");
    assert!(erased.is_ok(), "{erased:?}");
    assert_eq!(f.t.fired(frame), 0, "a send that must wait wrote its frame");
    f.t.delete().await;
}
