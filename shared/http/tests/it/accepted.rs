//! Durable before the answer: a valid call DynamoDB cannot commit in time is kept in S3 as
//! pending and answered 202, then committed by the sweep through the same idempotent path;
//! when S3 cannot take it either, the answer is 503 with Retry-After; an erase wins over a
//! pending submission received before it.

use std::time::{Duration, Instant};

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_store::calls::pending::{is_paced, PREFIX};
use call_ingest_store::directory::scopes::Scopes;
use serde_json::json;
use testkit::{two_workspaces, TwoWorkspaces};

pub(crate) const Q: [(&str, &str); 2] = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];

async fn post_b(f: &TwoWorkspaces, call_id: &str) -> Answer {
    post_status(f, call_id, "ended").await
}

/// Operation B for `call_id` with `call_status` set to `status` (so two contents differ).
pub(crate) async fn post_status(f: &TwoWorkspaces, call_id: &str, status: &str) -> Answer {
    let mut body = create_call_body(call_id);
    body["call_status"] = json!(status);
    send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, Some(&f.key1), &Q, &body)).await
}

/// The call's statuses: each earlier revision's, oldest first, then the current one's.
pub(crate) async fn statuses(f: &TwoWorkspaces, call_id: &str) -> Vec<String> {
    let call = f.backend.store().get_call(1, call_id, true).await.unwrap().expect("stored");
    call.revisions
        .iter()
        .chain([&call.current])
        .map(|r| r.document_value()["call"]["call_status"].as_str().unwrap_or_default().to_owned())
        .collect()
}

pub(crate) async fn pending(f: &TwoWorkspaces) -> Vec<String> {
    f.t.objects().await.into_iter().filter(|k| k.starts_with(PREFIX)).collect()
}

/// Runs the committer's sweep now.
pub(crate) async fn sweep(f: &TwoWorkspaces) -> call_ingest_store::calls::pending::Sweep {
    sweep_within(f, 20).await
}

/// Runs the committer's sweep now, for at most `seconds` (it goes round while any is left).
pub(crate) async fn sweep_within(f: &TwoWorkspaces, seconds: u64) -> call_ingest_store::calls::pending::Sweep {
    let later = call_ingest_store::calls::now_ms() + 1;
    f.backend.sweep_pending(later, Instant::now() + Duration::from_secs(seconds)).await.unwrap()
}

#[tokio::test]
async fn a_call_dynamodb_cannot_take_is_accepted_then_committed_once_it_returns() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    // The Calls table fails every request (an outage); the directory still answers.
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    let started = Instant::now();
    let a = post_b(&f, "while-down").await;
    assert!(started.elapsed() < Duration::from_secs(8), "answered within a one-shot client's patience");
    assert_eq!((a.status, a.body.clone()), (202, json!({"provider_call_id": "while-down", "status": "accepted"})));
    let keys = pending(&f).await;
    assert_eq!(keys.len(), 1, "durable in S3 before the answer");
    assert!(!is_paced(&keys[0]), "counted when it came: not paced again ({})", keys[0]);
    // Still down: the sweep leaves it pending.
    assert_eq!(sweep_within(&f, 3).await.left, 1);
    f.t.clear_faults(&f.t.calls);
    assert_eq!(sweep(&f).await.committed, 1);
    assert_eq!(pending(&f).await, Vec::<String>::new());
    // A replay now answers as usual, with the id; is_new was never given.
    let again = post_b(&f, "while-down").await;
    assert_eq!((again.status, again.body["is_new"].as_bool()), (200, Some(false)), "{}", again.body);
    let stored = f.backend.store().get_call(1, "while-down", false).await.unwrap().expect("committed");
    assert_eq!(stored.call_id, "while-down");
    assert_eq!(sweep(&f).await, Default::default(), "nothing left to commit");
    f.t.delete().await;
}

#[tokio::test]
async fn operation_a_answers_202_with_its_envelope_and_no_id() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let agent = f.backend.directory().list_agents(1).await.unwrap().remove(0);
    f.t.fault(json!({"op": "*", "fault": "throttle", "times": 1000}));
    let body = send_call_data_body(&agent.id, "a-while-throttled");
    let a =
        send(&f.backend, Operation::SendCallData, request(Operation::SendCallData, Some(&f.key1), &[], &body)).await;
    assert_eq!(a.status, 202, "{}", a.body);
    assert_eq!(
        a.body,
        json!({"success": true, "callId": "a-while-throttled", "serviceCallId": null,
               "message": "Call accepted; it is stored within a minute"})
    );
    f.t.clear_faults(&f.t.calls);
    assert_eq!(sweep(&f).await.committed, 1);
    let again =
        send(&f.backend, Operation::SendCallData, request(Operation::SendCallData, Some(&f.key1), &[], &body)).await;
    assert_eq!((again.status, again.body["serviceCallId"].is_string()), (200, true), "{}", again.body);
    f.t.delete().await;
}

#[tokio::test]
async fn with_dynamodb_and_s3_both_down_the_answer_is_503_with_retry_after_and_nothing_is_kept() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "slowdown", "times": 1000}));
    let a = post_b(&f, "both-down").await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(a.header("retry-after").is_some());
    f.t.clear_faults(&f.t.calls);
    f.t.clear_faults(&f.t.bucket);
    assert_eq!(pending(&f).await, Vec::<String>::new());
    assert!(f.backend.store().get_call(1, "both-down", false).await.unwrap().is_none());
    f.t.delete().await;
}

/// S3 refusing for a moment (SlowDown past the SDK's three attempts) while DynamoDB is down
/// is ridden out: the pending copy is tried again until S3 takes it, inside a one-shot
/// client's 10 s, and the answer is 202, not a 503 that loses the call.
#[tokio::test]
async fn with_dynamodb_down_a_moment_of_s3_refusals_is_ridden_out_and_the_call_accepted() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    f.t.fault(json!({"service": "s3", "op": "PutObject", "fault": "slowdown", "times": 5}));
    let started = Instant::now();
    let a = post_b(&f, "s3-blip").await;
    assert_eq!(a.status, 202, "{}", a.body);
    assert!(started.elapsed() < Duration::from_secs(9), "answered within a one-shot client's patience");
    f.t.clear_faults(&f.t.calls);
    assert_eq!(pending(&f).await.len(), 1);
    f.t.delete().await;
}

/// An erase wins: it deletes the call's pending submissions, and one it could not see (or a
/// copy of one) that was received before it is dropped when committed, even after the call
/// was stored anew.
#[tokio::test]
async fn an_erase_wins_over_pending_submissions_received_before_it() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    let first = post_b(&f, "erase-wins").await;
    assert_eq!(first.status, 201);
    let id = first.body["id"].as_u64().unwrap();
    // A new content of it, accepted while DynamoDB was down.
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "erase-wins", "revised").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    let key = pending(&f).await.remove(0);
    // A copy the erase will not see (as if it were still being written).
    let aside = format!("aside/{key}");
    let copy = |from: &str, to: &str| {
        let s3 = f.t.s3.clone();
        let (bucket, from, to) = (f.t.bucket.clone(), from.to_owned(), to.to_owned());
        async move { s3.copy_object().bucket(&bucket).copy_source(format!("{bucket}/{from}")).key(to).send().await.unwrap() }
    };
    copy(&key, &aside).await;
    let erased = f.backend.store().erase_call(1, "erase-wins", id).await.unwrap();
    assert!(erased.items >= 1);
    assert_eq!(pending(&f).await, Vec::<String>::new(), "the erase deleted its pending submission");
    copy(&aside, &key).await;
    // Stored anew after the erase: the pending copy (received before the erase) is not this
    // new call's either.
    let anew = post_b(&f, "erase-wins").await;
    assert_eq!((anew.status, anew.body["is_new"].as_bool()), (201, Some(true)));
    let s = sweep(&f).await;
    assert_eq!((s.erased, s.committed), (1, 0), "{s:?}");
    let now = f.backend.store().get_call(1, "erase-wins", true).await.unwrap().unwrap();
    assert_eq!((now.current.revision, now.revisions.len()), (1, 0), "the pending content never landed");
    f.t.delete().await;
}

/// The directory is in DynamoDB too. A call sent during an outage with a credential this
/// instance read in the last minutes is taken (and kept as pending); a reader is not served
/// from those items, and a credential it never read is 503.
#[tokio::test]
async fn a_call_sent_during_a_directory_outage_with_a_recently_read_credential_is_not_lost() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[("DIRECTORY_CACHE_TTL_SECS", "1")]).await;
    assert_eq!(post_b(&f, "before").await.status, 201);
    // Past the cache's lifetime: only an outage makes these items count.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for table in [&f.t.calls, &f.t.directory] {
        f.t.fault(json!({"op": "*", "fault": "internal", "times": 10_000, "table": table}));
    }
    let a = post_b(&f, "during-outage").await;
    assert_eq!((a.status, a.body["status"].as_str()), (202, Some("accepted")), "{}", a.body);
    let read = send(
        &f.backend,
        call_ingest_http::Endpoint::GetCall,
        get_request(None, Some(&f.key1), &[("workspace_id", "1"), ("provider_call_id", "before")], &[]),
    )
    .await;
    assert_eq!(read.status, 503, "a reader is not served from items past their lifetime");
    let q2 = [("workspace_id", "2"), ("agent_remote_identifier", "desk")];
    let other = send(
        &f.backend,
        Operation::CreateCall,
        request(Operation::CreateCall, Some(&f.key2), &q2, &create_call_body("x")),
    )
    .await;
    assert_eq!(other.status, 503, "a credential this instance never read");
    f.t.clear_faults(&f.t.calls);
    f.t.clear_faults(&f.t.directory);
    assert_eq!(sweep(&f).await.committed, 1);
    assert!(f.backend.store().get_call(1, "during-outage", false).await.unwrap().is_some());
    f.t.delete().await;
}

/// A pending submission committed after a newer one of its call was stored is kept as a
/// revision, and the newer content stays current; no revision number changes meaning.
#[tokio::test]
async fn an_older_pending_submission_committed_after_a_newer_one_is_kept_and_the_newer_stays_current() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "stale", "in-progress").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    // The newer submission is stored directly while the older one waits in S3.
    assert_eq!(post_status(&f, "stale", "ended").await.status, 201);
    let key = pending(&f).await.remove(0);
    // Committed twice at once (the queue's consumer and the sweep): kept once.
    let store = f.backend.store();
    let (a, b) = tokio::join!(store.commit_pending(&key), store.commit_pending(&key));
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    // Revision 1 is still what its client was answered; the late one is 2; the newer is current.
    assert_eq!(statuses(&f, "stale").await, ["ended", "in-progress", "ended"], "the last received stays current");
    // A replay of the newer one answers 200 and changes nothing.
    assert_eq!(post_status(&f, "stale", "ended").await.status, 200);
    assert_eq!(statuses(&f, "stale").await, ["ended", "in-progress", "ended"]);
    f.t.delete().await;
}

/// A pending object committed, then committed again after newer revisions (its delete was
/// lost, or the queue and the sweep raced), changes nothing: the head remembers it.
#[tokio::test]
async fn a_pending_submission_committed_again_after_newer_revisions_changes_nothing() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    assert_eq!(post_status(&f, "again", "first").await.status, 201);
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "again", "second").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    let key = pending(&f).await.remove(0);
    let copy = |from: String, to: String| {
        let (s3, bucket) = (f.t.s3.clone(), f.t.bucket.clone());
        async move { s3.copy_object().bucket(&bucket).copy_source(format!("{bucket}/{from}")).key(to).send().await.unwrap() }
    };
    copy(key.clone(), format!("aside/{key}")).await;
    assert_eq!(sweep(&f).await.committed, 1);
    assert_eq!(post_status(&f, "again", "third").await.status, 200);
    assert_eq!(statuses(&f, "again").await, ["first", "second", "third"]);
    copy(format!("aside/{key}"), key.clone()).await;
    assert!(f.backend.store().commit_pending(&key).await.is_ok());
    assert_eq!(statuses(&f, "again").await, ["first", "second", "third"], "committed once");
    f.t.delete().await;
}

#[tokio::test]
async fn a_queued_commit_commits_the_older_submissions_of_its_call_first() {
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    f.t.fault(json!({"op": "*", "fault": "internal", "times": 1000}));
    assert_eq!(post_status(&f, "queued", "first").await.status, 202);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(post_status(&f, "queued", "second").await.status, 202);
    assert_eq!(post_status(&f, "other", "x").await.status, 202);
    f.t.clear_faults(&f.t.calls);
    let keys = pending(&f).await;
    let call_of = |k: &String| k.rsplit_once('/').map(|(call, _)| call.to_owned());
    let of_two = |k: &&String| keys.iter().filter(|o| call_of(o) == call_of(k)).count() == 2;
    let newest_of_call = keys.iter().filter(of_two).max().unwrap().clone();
    // S3 announces the newer one first: the older is committed before it all the same.
    let done = f.backend.commit_notified(&newest_of_call, Instant::now() + Duration::from_secs(20)).await.unwrap();
    assert_eq!((done.sweep.committed, done.paced), (2, false), "{done:?}");
    assert_eq!(statuses(&f, "queued").await, ["first", "second"]);
    // The other call's submission was not announced: it waits for its own message or the sweep.
    assert_eq!(pending(&f).await.len(), 1);
    f.t.delete().await;
}

/// While DynamoDB is slow, an instance stops holding each send for the whole budget: once
/// a commit was slow, the next sends wait 750 ms before going to S3 (202), so instances
/// are freed sooner; a quick commit ends it.
#[tokio::test]
async fn once_a_commit_is_slow_the_next_sends_wait_less_until_a_quick_one() {
    use call_ingest_store::patience;
    let f = two_workspaces(Scopes::DEFAULT, &[], &[]).await;
    // Every put is applied but answered after 3.5 s, past the SDK's 3 s attempt timeout.
    f.t.fault(json!({"op": "PutItem", "fault": "delay", "seconds": 3.5, "times": 1000}));
    let started = Instant::now();
    let first = post_b(&f, "slow-1").await;
    assert!(matches!(first.status, 201 | 202), "{}", first.body);
    assert!(started.elapsed() >= Duration::from_secs(3), "the first waits for DynamoDB");
    assert_eq!(f.backend.patience.budget(), patience::SHORT);
    let started = Instant::now();
    let second = post_b(&f, "slow-2").await;
    assert_eq!(second.status, 202, "{}", second.body);
    assert!(started.elapsed() < Duration::from_millis(2500), "took {:?}", started.elapsed());
    f.t.clear_faults(&f.t.calls);
    assert_eq!(post_b(&f, "quick").await.status, 201, "a healthy DynamoDB fits the short budget");
    assert_eq!(f.backend.patience.budget(), patience::FULL, "and ends it");
    f.t.delete().await;
}
