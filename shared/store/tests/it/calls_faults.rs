//! The store under DynamoDB's real failure modes, injected by the local DynamoDB's fault
//! layer (`devstack/faults.py`), and with several instances (each `Store` has its
//! own id block, as each Lambda instance does). Each test names the fault it needs; nothing
//! is random.

use std::sync::Arc;
use std::time::Duration;

use call_ingest_core::call::{ingest, CallDocument, Operation};
use call_ingest_store::calls::list::Listing;
use call_ingest_store::calls::{item, tables, Outcome, Owner, Store, StoreError};
use serde_json::{json, Value};
use testkit::{small_call, Tables};

const OWNER: Owner<'static> = Owner { workspace_id: 1, agent_id: "agt_test" };

fn store(t: &Tables) -> Store {
    Store::new(t.client.clone(), t.frames(), t.calls.clone(), 10)
}

/// A call of about `bytes` bytes: its frame is far over `frames::INLINE_MAX`, so it is kept
/// in S3.
fn large_call(call_id: &str, bytes: usize) -> (CallDocument, Vec<u8>) {
    let mut body: Value = serde_json::from_slice(&callgen::create_call_bytes(bytes, 5)).unwrap();
    body["call_id"] = Value::from(call_id);
    let raw = serde_json::to_vec(&body).unwrap();
    (ingest(Operation::CreateCall, &raw).expect("valid call"), raw)
}

fn call_with(call_id: &str, change: impl FnOnce(&mut Value)) -> (CallDocument, Vec<u8>) {
    let (_, raw) = small_call(call_id, "x");
    let mut body: Value = serde_json::from_slice(&raw).unwrap();
    change(&mut body);
    let raw = serde_json::to_vec(&body).unwrap();
    (ingest(Operation::CreateCall, &raw).expect("valid call"), raw)
}

#[tokio::test]
async fn concurrent_first_submissions_of_a_large_call_give_one_id_one_new_and_one_object() {
    let t = Tables::new().await;
    let (doc, raw) = large_call("big-race", 1_800_000);
    let (doc, raw) = (Arc::new(doc), Arc::new(raw));
    // Six instances, each with its own id block.
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (store, doc, raw) = (Arc::new(store(&t)), doc.clone(), raw.clone());
            tokio::spawn(async move { store.put_call(OWNER, &doc, &raw).await })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap().expect("every submission is stored, none is told to retry"));
    }
    assert_eq!(results.iter().filter(|r| r.is_new()).count(), 1, "{results:?}");
    assert!(results.iter().all(|r| r.id == results[0].id), "{results:?}");
    let back = store(&t).get_call(1, "big-race", true).await.unwrap().unwrap();
    assert_eq!((back.current.revision, back.revisions.len()), (1, 0));
    assert_eq!(back.current.raw, *raw);
    assert_eq!(t.objects().await.len(), 1, "the same bytes are one object");
    t.delete().await;
}

#[tokio::test]
async fn a_transaction_conflict_on_the_creating_put_is_retried() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"op": "PutItem", "fault": "conflict", "times": 2}));
    let (doc, raw) = small_call("conflicted", "x");
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.expect("stored after the conflict passed");
    assert_eq!((stored.outcome, t.fired(rule)), (Outcome::Created, 2));
    t.delete().await;
}

#[tokio::test]
async fn a_conflict_that_lasts_is_try_again_not_internal() {
    let t = Tables::new().await;
    t.fault(json!({"op": "PutItem", "fault": "conflict", "times": 1000}));
    let (doc, raw) = small_call("held", "x");
    let result = store(&t).put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    t.delete().await;
}

#[tokio::test]
async fn a_transaction_cancelled_for_throttling_is_try_again() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc1, raw1) = small_call("throttled", "one");
    store.put_call(OWNER, &doc1, &raw1).await.unwrap();
    // The head put (item 1) is throttled; the revision put (item 0) passes its condition.
    t.fault(json!({"op": "TransactWriteItems", "fault": "cancel_throttle", "item": 1, "times": 1000}));
    let (doc2, raw2) = small_call("throttled", "two");
    let result = store.put_call(OWNER, &doc2, &raw2).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    t.clear_faults(&t.calls);
    assert_eq!(store.put_call(OWNER, &doc2, &raw2).await.unwrap().outcome, Outcome::Revised, "a retry succeeds");
    t.delete().await;
}

#[tokio::test]
async fn a_transaction_cancelled_for_a_conflict_is_retried() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc1, raw1) = small_call("conflict-rev", "one");
    store.put_call(OWNER, &doc1, &raw1).await.unwrap();
    let rule = t.fault(json!({"op": "TransactWriteItems", "fault": "cancel_conflict", "item": 1, "times": 3}));
    let (doc2, raw2) = small_call("conflict-rev", "two");
    let stored = store.put_call(OWNER, &doc2, &raw2).await.unwrap();
    assert_eq!((stored.outcome, stored.revision, t.fired(rule)), (Outcome::Revised, 2, 3));
    t.delete().await;
}

#[tokio::test]
async fn a_lost_reply_to_the_creating_put_still_answers_new() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"op": "PutItem", "fault": "lost_reply"}));
    let (doc, raw) = small_call("lost-create", "x");
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!(t.fired(rule), 1, "the reply was dropped once and the SDK retried");
    assert_eq!((stored.outcome, stored.revision), (Outcome::Created, 1));
    let head = store(&t).raw_head(1, "lost-create").await.unwrap().unwrap();
    assert_eq!(item::get_u64(&head, "id"), Some(stored.id));
    // Anyone else submitting it now is told it existed.
    let again = store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((again.outcome, again.id), (Outcome::Unchanged, stored.id));
    t.delete().await;
}

#[tokio::test]
async fn a_reply_delayed_past_the_attempt_timeout_still_answers_new() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"op": "PutItem", "fault": "delay", "seconds": 3.5}));
    let (doc, raw) = small_call("slow-create", "x");
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((t.fired(rule), stored.outcome), (1, Outcome::Created));
    t.delete().await;
}

#[tokio::test]
async fn a_lost_reply_to_a_large_create_still_answers_new() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"op": "PutItem", "fault": "lost_reply"}));
    let (doc, raw) = large_call("lost-big", 1_800_000);
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((t.fired(rule), stored.outcome), (1, Outcome::Created));
    let back = store(&t).get_call(1, "lost-big", false).await.unwrap().unwrap();
    assert_eq!(back.current.raw, raw);
    t.delete().await;
}

#[tokio::test]
async fn a_lost_reply_to_a_revision_still_answers_revised() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc1, raw1) = small_call("lost-rev", "one");
    store.put_call(OWNER, &doc1, &raw1).await.unwrap();
    let rule = t.fault(json!({"op": "TransactWriteItems", "fault": "lost_reply"}));
    let (doc2, raw2) = small_call("lost-rev", "two");
    let stored = store.put_call(OWNER, &doc2, &raw2).await.unwrap();
    assert_eq!((t.fired(rule), stored.outcome, stored.revision), (1, Outcome::Revised, 2));
    t.delete().await;
}

#[tokio::test]
async fn the_same_document_under_another_agent_is_a_revision() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call("moved", "x");
    let first = store.put_call(Owner { workspace_id: 1, agent_id: "agt_old" }, &doc, &raw).await.unwrap();
    let second = store.put_call(Owner { workspace_id: 1, agent_id: "agt_new" }, &doc, &raw).await.unwrap();
    assert_eq!((second.id, second.outcome, second.revision), (first.id, Outcome::Revised, 2));
    let call = store.get_call(1, "moved", true).await.unwrap().unwrap();
    assert_eq!(call.agent_id, "agt_new", "the call is now the new agent's");
    let listed = |agent_id| {
        let listing = Listing {
            workspace_id: 1,
            agent_id: Some(agent_id),
            from_ms: 0,
            to_ms: u64::MAX >> 11,
            after: None,
            limit: 10,
        };
        let store = &store;
        async move { store.list_calls(&listing).await.unwrap().calls.len() }
    };
    assert_eq!((listed("agt_new").await, listed("agt_old").await), (1, 0), "listed under the new agent only");
    // And the same again under the new agent is a replay.
    let third = store.put_call(Owner { workspace_id: 1, agent_id: "agt_new" }, &doc, &raw).await.unwrap();
    assert_eq!(third.outcome, Outcome::Unchanged);
    t.delete().await;
}

#[tokio::test]
async fn costs_dynamodb_cannot_hold_are_kept_in_the_document_only() {
    let t = Tables::new().await;
    let store = store(&t);
    for (call_id, cost) in [("huge-cost", json!(1e200)), ("tiny-cost", json!(1e-200))] {
        let (doc, raw) = call_with(call_id, |b| b["call_cost"] = cost.clone());
        let stored = store.put_call(OWNER, &doc, &raw).await.unwrap_or_else(|e| panic!("{call_id}: {e}"));
        assert!(stored.is_new());
        let head = store.raw_head(1, call_id).await.unwrap().unwrap();
        assert!(!head.contains_key("call_cost"), "{call_id}: not an indexed number");
        let back = store.get_call(1, call_id, false).await.unwrap().unwrap();
        assert_eq!(back.current.document_value()["call"]["call_cost"], cost, "{call_id}: in the document as sent");
    }
    let (doc, raw) = call_with("exact-cost", |b| b["call_cost"] = json!(9_007_199_254_740_993_u64));
    store.put_call(OWNER, &doc, &raw).await.unwrap();
    let head = store.raw_head(1, "exact-cost").await.unwrap().unwrap();
    assert_eq!(head["call_cost"].as_n().map(String::as_str), Ok("9007199254740993"), "2^53 + 1, not rounded");
    t.delete().await;
}

#[tokio::test]
async fn a_read_during_a_revision_lists_each_revision_once() {
    let t = Tables::new().await;
    let writer = Arc::new(store(&t));
    for summary in ["one", "two"] {
        let (doc, raw) = small_call("read-race", summary);
        writer.put_call(OWNER, &doc, &raw).await.unwrap();
    }
    // The reader's head read is answered a second late; revision 3 commits meanwhile.
    let rule = t.fault(json!({"op": "GetItem", "fault": "delay", "seconds": 1.0}));
    let reader = Arc::new(store(&t));
    let read = tokio::spawn(async move { reader.get_call(1, "read-race", true).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (doc3, raw3) = small_call("read-race", "three");
    assert_eq!(writer.put_call(OWNER, &doc3, &raw3).await.unwrap().revision, 3);
    let call = read.await.unwrap().unwrap().unwrap();
    assert_eq!(t.fired(rule), 1);
    assert_eq!(call.current.revision, 2, "the head as it was read");
    let listed: Vec<u64> = call.revisions.iter().map(|r| r.revision).collect();
    assert_eq!(listed, vec![1], "exactly the revisions before that head");
    t.delete().await;
}

#[tokio::test]
async fn replays_consume_no_ids() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call("replayed", "x");
    let first = store.put_call(OWNER, &doc, &raw).await.unwrap();
    for _ in 0..5 {
        assert_eq!(store.put_call(OWNER, &doc, &raw).await.unwrap().outcome, Outcome::Unchanged);
    }
    let (doc, raw) = small_call("next", "x");
    let next = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!(next.id, first.id + 1, "the replays gave their ids back");
    t.delete().await;
}

#[tokio::test]
async fn a_table_that_is_missing_or_not_active_is_try_again() {
    let t = Tables::new().await;
    let (doc, raw) = small_call("nowhere", "x");
    let missing = Store::new(t.client.clone(), t.frames(), format!("{}-missing", t.calls), 10);
    let result = missing.put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "missing table: {result:?}");
    t.fault(json!({"op": "*", "fault": "creating", "times": 1000}));
    let result = store(&t).put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "table being created: {result:?}");
    t.delete().await;
}

#[tokio::test]
async fn throttling_beyond_the_sdk_retries_is_try_again_and_writes_nothing() {
    let t = Tables::new().await;
    t.fault(json!({"op": "PutItem", "fault": "throttle", "times": 3}));
    let (doc, raw) = small_call("throttled-put", "x");
    let result = store(&t).put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    assert!(store(&t).raw_head(1, "throttled-put").await.unwrap().is_none());
    t.delete().await;
}

#[tokio::test]
async fn tables_create_waits_until_the_table_is_active() {
    let t = Tables::new().await;
    let name = format!("{}-new", t.calls);
    let rule = t.fault(json!({"op": "*", "fault": "creating", "times": 3, "table": name}));
    tables::CALLS.create(&t.client, &name).await.expect("created once active");
    assert_eq!(t.fired(rule), 3, "it asked until the table was active");
    let ttl = t.client.describe_time_to_live().table_name(&name).send().await.unwrap();
    let status = ttl.time_to_live_description().and_then(|d| d.time_to_live_status().cloned());
    assert_eq!(status, Some(aws_sdk_dynamodb::types::TimeToLiveStatus::Enabled));
    let _ = t.client.delete_table().table_name(&name).send().await;
    t.delete().await;
}

#[tokio::test]
async fn tables_create_on_an_existing_table_fails_when_it_cannot_turn_ttl_on() {
    let t = Tables::new().await;
    t.client
        .update_time_to_live()
        .table_name(&t.calls)
        .time_to_live_specification(
            aws_sdk_dynamodb::types::TimeToLiveSpecification::builder()
                .attribute_name(tables::TTL_ATTRIBUTE)
                .enabled(false)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("TTL off");
    t.fault(json!({"op": "UpdateTimeToLive", "fault": "throttle", "times": 3}));
    let result = tables::CALLS.create(&t.client, &t.calls).await;
    assert!(result.is_err(), "TTL stayed off: {result:?}");
    t.clear_faults(&t.calls);
    assert!(!tables::CALLS.create(&t.client, &t.calls).await.unwrap(), "exists");
    let ttl = t.client.describe_time_to_live().table_name(&t.calls).send().await.unwrap();
    let status = ttl.time_to_live_description().and_then(|d| d.time_to_live_status().cloned());
    assert_eq!(status, Some(aws_sdk_dynamodb::types::TimeToLiveStatus::Enabled));
    t.delete().await;
}

#[tokio::test]
async fn a_create_applied_whose_every_reply_was_lost_still_answers_new() {
    let t = Tables::new().await;
    // The first attempt applies the put; the SDK's two retries are lost as well.
    let rule = t.fault(json!({"op": "PutItem", "fault": "lost_reply", "times": 3}));
    let (doc, raw) = small_call("all-lost", "x");
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.expect("the head says this request created it");
    assert_eq!((t.fired(rule), stored.outcome), (3, Outcome::Created));
    t.delete().await;
}

#[tokio::test]
async fn a_revision_applied_whose_every_reply_was_lost_still_answers_revised() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc1, raw1) = small_call("all-lost-rev", "one");
    store.put_call(OWNER, &doc1, &raw1).await.unwrap();
    let rule = t.fault(json!({"op": "TransactWriteItems", "fault": "lost_reply", "times": 3}));
    let (doc2, raw2) = small_call("all-lost-rev", "two");
    let stored = store.put_call(OWNER, &doc2, &raw2).await.expect("the head says this request revised it");
    assert_eq!((t.fired(rule), stored.outcome, stored.revision), (3, Outcome::Revised, 2));
    t.delete().await;
}

#[tokio::test]
async fn a_5xx_without_a_known_code_is_try_again() {
    let t = Tables::new().await;
    t.fault(json!({"op": "GetItem", "fault": "gateway", "times": 10}));
    let result = store(&t).get_call(1, "any", false).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    t.delete().await;
}

#[tokio::test]
async fn a_late_copy_of_an_erases_delete_never_removes_a_revision_of_the_call_stored_after_it() {
    let t = Tables::new().await;
    let store = store(&t);
    let (a, raw_a) = call_with("reused", |_| {});
    let (b, raw_b) = call_with("reused", |b| b["call_status"] = json!("ended"));
    let first = store.put_call(OWNER, &a, &raw_a).await.unwrap();
    store.put_call(OWNER, &b, &raw_b).await.unwrap();
    // The erase's delete of revision 1 gets no reply (the SDK sends it again) and arrives
    // again two seconds later, after the call was stored anew and revised.
    let rule = t.fault(json!({"op": "DeleteItem", "fault": "late", "contains": "REV#0000000001", "seconds": 2.0}));
    let erased = store.erase_call(1, "reused", first.id).await.unwrap();
    assert_eq!(erased.items, 2, "the head and revision 1");
    let again = store.put_call(OWNER, &a, &raw_a).await.unwrap();
    assert!(again.is_new() && again.id != first.id);
    store.put_call(OWNER, &b, &raw_b).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert_eq!(t.fired(rule), 1);
    let back = store.get_call(1, "reused", true).await.unwrap().unwrap();
    assert_eq!((back.id, back.current.revision, back.revisions.len()), (again.id, 2, 1), "revision 1 is still there");
    assert_eq!(back.revisions[0].raw, raw_a);
    t.delete().await;
}

#[tokio::test]
async fn an_erase_whose_head_delete_lost_its_reply_still_says_it_erased() {
    let t = Tables::new().await;
    let store = store(&t);
    let (a, raw_a) = call_with("lost-erase", |_| {});
    let stored = store.put_call(OWNER, &a, &raw_a).await.unwrap();
    // The head is replaced by a tombstone (the only write that names `erased_ids`).
    t.fault(json!({"op": "PutItem", "fault": "lost_reply", "contains": "erased_ids"}));
    let erased = store.erase_call(1, "lost-erase", stored.id).await.unwrap();
    assert_eq!(erased.items, 1, "applied, then its retry found the tombstone: erased all the same");
    assert!(store.get_call(1, "lost-erase", false).await.unwrap().is_none());
    t.delete().await;
}

#[tokio::test]
async fn a_read_that_an_erase_overtakes_finds_no_call_rather_than_failing() {
    let t = Tables::new().await;
    let store = Arc::new(store(&t));
    let (doc, raw) = large_call("erased-while-read", 1_800_000);
    let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
    // The reader's head read is answered a second late: the whole erase (the frame, then
    // the head) happens in between, and the reader then finds no frame.
    let rule = t.fault(json!({"op": "GetItem", "fault": "delay", "seconds": 1.0}));
    let reader = {
        let store = store.clone();
        tokio::spawn(async move { store.get_call(1, "erased-while-read", false).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let erased = store.erase_call(1, "erased-while-read", stored.id).await.unwrap();
    assert_eq!(erased.items, 1, "the head: {erased:?}");
    assert_eq!(t.objects().await, Vec::<String>::new(), "its frame is gone");
    let read = reader.await.unwrap();
    assert_eq!(t.fired(rule), 1);
    assert!(matches!(read, Ok(None)), "a call erased meanwhile is not found, not an error: {read:?}");
    t.delete().await;
}

/// Issue 17, item 1: a revision that read the head before an erase must not land on the
/// call stored after it (it did: the condition was the revision number alone).
#[tokio::test]
async fn a_revision_in_flight_never_overwrites_a_call_stored_after_an_erase() {
    let t = Tables::new().await;
    let (c1, raw1) = call_with("aba-1", |b| b["call_status"] = json!("one"));
    let (c2, raw2) = call_with("aba-1", |b| b["call_status"] = json!("two"));
    let (c3, raw3) = call_with("aba-1", |b| b["call_status"] = json!("three"));
    let first = store(&t).put_call(OWNER, &c1, &raw1).await.unwrap();
    // S, on its own instance: its creating put finds C1's head, and the reply carrying it
    // is 2.5 s late. Meanwhile C1 is erased and C3 stored as a new call.
    let rule = t.fault(json!({"op": "PutItem", "fault": "delay", "seconds": 2.5, "contains": "aba-1", "times": 1}));
    let s = {
        let store = store(&t);
        tokio::spawn(async move { store.put_call(OWNER, &c2, &raw2).await })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(store(&t).erase_call(1, "aba-1", first.id).await.unwrap().items, 1);
    let third = store(&t).put_call(OWNER, &c3, &raw3).await.unwrap();
    assert!(third.is_new() && third.id != first.id, "{third:?}");
    let s = s.await.unwrap().expect("S is stored");
    assert_eq!(t.fired(rule), 1);
    assert_ne!(s.id, first.id, "S was answered with the erased id: {s:?}");

    let back = store(&t).get_call(1, "aba-1", true).await.unwrap().expect("the call stored after the erase");
    assert_eq!(back.id, third.id, "the acknowledged call lost its id");
    let contents: Vec<&[u8]> = back.revisions.iter().chain([&back.current]).map(|r| r.raw.as_slice()).collect();
    assert!(contents.contains(&raw3.as_slice()), "C3, acknowledged, is gone");
    assert!(!contents.contains(&raw1.as_slice()), "the erased content is readable again");
    assert!(store(&t).get_call_by_id(first.id, false).await.unwrap().is_none());
    t.delete().await;
}

/// A create stuck in the network, applied after its retry created the call and after the
/// call was erased, must not bring the erased id or content back.
#[tokio::test]
async fn a_late_copy_of_a_create_never_brings_an_erased_call_back() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = call_with("late-create", |_| {});
    let rule = t.fault(json!({"op": "PutItem", "fault": "late", "contains": "late-create", "seconds": 2.0}));
    let first = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert!(first.is_new());
    assert_eq!(store.erase_call(1, "late-create", first.id).await.unwrap().items, 1);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert_eq!(t.fired(rule), 1);
    assert!(store.get_call(1, "late-create", false).await.unwrap().is_none(), "the erased call is back");
    let heads: Vec<_> = t.scan(&t.calls).await.into_iter().filter(|i| i.contains_key("id")).collect();
    assert!(heads.is_empty(), "a head came back: {heads:?}");
    // Sent again by its client, it is a new call, with a new id.
    let again = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert!(again.is_new() && again.id != first.id, "{again:?}");
    t.delete().await;
}

/// The same for a large call (its frame in S3), and a second erase: the tombstone carries
/// the ids erased before it forward.
#[tokio::test]
async fn a_call_stored_over_a_tombstone_keeps_guarding_the_ids_erased_before() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = large_call("twice", 1_800_000);
    let first = store.put_call(OWNER, &doc, &raw).await.unwrap();
    store.erase_call(1, "twice", first.id).await.unwrap();
    let second = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert!(second.is_new() && second.id != first.id);
    store.erase_call(1, "twice", second.id).await.unwrap();
    let tombstone = store.raw_head(1, "twice").await.unwrap().expect("a tombstone");
    for id in [first.id, second.id] {
        assert!(item::names_erased(&tombstone, id), "{id} is not guarded: {tombstone:?}");
    }
    let third = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert!(third.is_new() && ![first.id, second.id].contains(&third.id));
    t.delete().await;
}

/// Issue 17, item 5: a call whose erase stopped part-way (a revision's delete failed, after
/// the frames were deleted) reads as
/// no call, every time, not as an error; the next erase finishes it.
#[tokio::test]
async fn a_call_whose_erase_stopped_part_way_is_not_found_until_the_erase_is_sent_again() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = large_call("half-erased", 1_800_000);
    let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
    let (doc2, raw2) = large_call("half-erased", 1_700_000);
    store.put_call(OWNER, &doc2, &raw2).await.unwrap();
    // Every attempt at deleting its revision fails (the SDK's retries too).
    let rule = t.fault(json!({"op": "DeleteItem", "fault": "internal", "contains": "REV#", "times": 100}));
    let erased = store.erase_call(1, "half-erased", stored.id).await;
    assert!(matches!(erased, Err(StoreError::Unavailable(_))), "{erased:?}");
    assert!(t.fired(rule) >= 3);
    for _ in 0..2 {
        assert!(store.get_call(1, "half-erased", false).await.unwrap().is_none());
        assert!(store.get_call(1, "half-erased", true).await.unwrap().is_none());
        assert!(store.get_call_at(1, "half-erased", Some(1)).await.unwrap().is_none());
        assert!(store.revisions(1, "half-erased").await.unwrap().is_none());
    }
    t.clear_faults(&t.calls);
    let erased = store.erase_call(1, "half-erased", stored.id).await.unwrap();
    assert!(erased.items >= 1, "{erased:?}");
    let left: Vec<_> = t.scan(&t.calls).await.into_iter().filter(|i| !item::is_tombstone(i)).collect();
    assert!(left.iter().all(|i| item::get_s(i, "pk") == Some("COUNTER")), "left behind: {left:?}");
    assert_eq!(t.objects().await, Vec::<String>::new(), "frames left behind");
    t.delete().await;
}

/// An erase whose head write was applied, its reply lost, and its retry met a transaction
/// conflict says what happened: the call is erased.
#[tokio::test]
async fn an_erase_whose_head_write_met_a_conflict_after_a_lost_reply_reports_it_erased() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = call_with("conflicted-erase", |_| {});
    let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
    let lost = t.fault(json!({"op": "PutItem", "fault": "lost_reply", "contains": "erased_ids", "times": 1}));
    let conflict = t.fault(json!({"op": "PutItem", "fault": "conflict", "contains": "erased_ids", "times": 1}));
    let erased = store.erase_call(1, "conflicted-erase", stored.id).await.unwrap();
    assert_eq!((t.fired(lost), t.fired(conflict)), (1, 1));
    assert_eq!(erased.items, 1, "the head was erased, and the answer must say so");
    t.delete().await;
}

/// A create that read a tombstone, then lost the race to another create and its erase,
/// carries the ids of the newer tombstone forward, not the stale ones it read: else a
/// late copy of the other call's create could bring that erased call back.
#[tokio::test]
async fn a_create_over_a_tombstone_carries_the_ids_erased_since_it_was_read() {
    let t = Tables::new().await;
    let (a, raw_a) = call_with("tomb-race", |b| b["call_status"] = json!("a"));
    let (b, raw_b) = call_with("tomb-race", |b| b["call_status"] = json!("b"));
    let (c, raw_c) = call_with("tomb-race", |b| b["call_status"] = json!("c"));
    let first = store(&t).put_call(OWNER, &a, &raw_a).await.unwrap();
    store(&t).erase_call(1, "tomb-race", first.id).await.unwrap();
    // S's first create is answered late, with the first tombstone.
    let rule = t.fault(json!({"op": "PutItem", "fault": "delay", "seconds": 2.0, "contains": "tomb-race", "times": 1}));
    let s = {
        let store = store(&t);
        tokio::spawn(async move { store.put_call(OWNER, &b, &raw_b).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let third = store(&t).put_call(OWNER, &c, &raw_c).await.unwrap();
    store(&t).erase_call(1, "tomb-race", third.id).await.unwrap();
    let s = s.await.unwrap().unwrap();
    assert_eq!(t.fired(rule), 1);
    assert!(s.is_new(), "{s:?}");
    let head = store(&t).raw_head(1, "tomb-race").await.unwrap().unwrap();
    for id in [first.id, third.id] {
        assert!(item::names_erased(&head, id), "{id} is no longer guarded: {head:?}");
    }
    t.delete().await;
}

/// S3 answering 503 SlowDown once: the SDK's retry stores the frame, and the call.
#[tokio::test]
async fn a_slowdown_on_a_frame_put_is_retried_and_the_call_stored() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"service": "s3", "op": "PutObject", "fault": "slowdown"}));
    let (doc, raw) = large_call("slow-s3", 1_800_000);
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((t.fired(rule), stored.outcome), (1, Outcome::Created));
    assert_eq!(t.objects().await.len(), 1);
    assert_eq!(store(&t).get_call(1, "slow-s3", false).await.unwrap().unwrap().current.raw, raw);
    t.delete().await;
}

/// S3 failing every attempt: try again (503), and no item points at a frame that is not
/// there. Sent again once S3 is back, the call is stored.
#[tokio::test]
async fn s3_down_is_try_again_and_no_item_points_at_a_missing_frame() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"service": "s3", "op": "PutObject", "fault": "internal", "times": 100}));
    let (doc, raw) = large_call("s3-down", 1_800_000);
    let result = store(&t).put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    assert!(t.fired(rule) >= 3, "the SDK retried");
    assert!(store(&t).raw_head(1, "s3-down").await.unwrap().is_none(), "a head without its frame");
    t.clear_faults(&t.bucket);
    assert!(store(&t).put_call(OWNER, &doc, &raw).await.unwrap().is_new());
    t.delete().await;
}

/// A frame PUT applied by S3 whose reply was lost: the SDK's retry finds the same bytes
/// under the same key (412), and the call is stored with one object.
#[tokio::test]
async fn a_lost_reply_to_a_frame_put_writes_one_object() {
    let t = Tables::new().await;
    let rule = t.fault(json!({"service": "s3", "op": "PutObject", "fault": "lost_reply"}));
    let (doc, raw) = large_call("lost-s3", 1_800_000);
    let stored = store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((t.fired(rule), stored.outcome), (1, Outcome::Created));
    assert_eq!(t.objects().await.len(), 1);
    t.delete().await;
}

/// A frame that cannot be read (S3 failing) is try again, not an internal error, and not
/// "no such call".
#[tokio::test]
async fn a_frame_s3_cannot_serve_is_try_again() {
    let t = Tables::new().await;
    let (doc, raw) = large_call("unreadable-s3", 1_800_000);
    store(&t).put_call(OWNER, &doc, &raw).await.unwrap();
    t.fault(json!({"service": "s3", "op": "GetObject", "fault": "slowdown", "times": 100}));
    let read = store(&t).get_call(1, "unreadable-s3", false).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    t.delete().await;
}

/// The directory down while held reports wait (every lookup of their agent fails after a
/// second): the release looks their agent up once, leaves them all for the next one, and
/// returns within its deadline. (Each report waiting on the lookup tried again in turn:
/// 16 calls at once queued one failed second after another, past the deadline and the
/// function's timeout.)
#[tokio::test]
async fn a_release_whose_agent_lookup_fails_leaves_every_report_within_its_deadline() {
    use call_ingest_store::calls::held::Hold;
    use call_ingest_store::calls::Receipt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let t = Tables::new().await;
    let store = store(&t);
    let calls = 20;
    for i in 0..calls {
        let call_id = format!("held-{i}");
        let hold = Hold {
            workspace_id: 1,
            hook_id: "hook_1",
            named: Some("remote"),
            operation: Operation::CreateCall,
            call_id: &call_id,
        };
        let (_, raw) = small_call(&call_id, "x");
        store.put_held(hold, &raw, &Receipt::now().unwrap()).await.unwrap();
    }
    let lookups = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let deadline = started + Duration::from_secs(4);
    let release = store
        .release_held(deadline, |_| async {
            lookups.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(1)).await;
            Err(StoreError::Unavailable("the directory is down".into()))
        })
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    assert_eq!(lookups.load(Ordering::SeqCst), 1, "one lookup per hook and named agent");
    assert_eq!((release.released, release.left), (0, calls), "{release:?}");
    assert_eq!(store.held(1).await.unwrap().len(), calls, "every report still held");
    t.delete().await;
}

/// A held report released becomes a paced copy: it was counted when it came, but a
/// release of many long-held reports is committed at its workspace's rate, not at once.
#[tokio::test]
async fn a_held_report_released_is_pending_as_a_paced_copy() {
    use call_ingest_store::calls::held::Hold;
    use call_ingest_store::calls::pending::{is_paced, PREFIX};
    use call_ingest_store::calls::Receipt;
    let t = Tables::new().await;
    let store = store(&t);
    let hold =
        Hold { workspace_id: 1, hook_id: "hook_1", named: None, operation: Operation::CreateCall, call_id: "held" };
    let (_, raw) = small_call("held", "x");
    store.put_held(hold, &raw, &Receipt::now().unwrap()).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let released = store.release_held(deadline, |_| async { Ok(Some(OWNER.agent_id.to_owned())) }).await.unwrap();
    assert_eq!(released.released, 1, "{released:?}");
    let pending: Vec<String> = t.objects().await.into_iter().filter(|k| k.starts_with(PREFIX)).collect();
    assert!(pending.len() == 1 && is_paced(&pending[0]), "{pending:?}");
    t.delete().await;
}

/// A held report released while its call is erased: the erase marks the call and lists
/// `pending/` (answered late: the report is still held then), the release moves the report
/// to `pending/`, and the erase lists `held/` (the report has left it). The release finds
/// the erase's mark and deletes the copy: nothing received before the erase is left in
/// the bucket when it answers. (A review found the copy left behind, erased content kept
/// until a commit dropped it.)
#[tokio::test]
async fn a_held_report_released_while_its_call_is_erased_is_not_left_pending() {
    released_while_erased("released", false).await;
}

/// The same, the release's read of the call failing for all of the SDK's attempts: the
/// release reads again (a failed read left the copy in `pending/` until its commit).
#[tokio::test]
async fn a_held_report_whose_release_cannot_read_its_call_at_first_is_not_left_pending() {
    released_while_erased("unread", true).await;
}

async fn released_while_erased(call_id: &str, read_fails: bool) {
    use call_ingest_store::calls::held::Hold;
    use call_ingest_store::calls::Receipt;
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call(call_id, "x");
    let id = store.put_call(OWNER, &doc, &raw).await.unwrap().id;
    let hold = Hold { workspace_id: 1, hook_id: "hook_1", named: None, operation: Operation::CreateCall, call_id };
    let (_, report) = small_call(call_id, "y");
    store.put_held(hold, &report, &Receipt::now().unwrap()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    // The erase's first listing (its call's pending copies) is answered 1.5 s late.
    let listing =
        t.fault(json!({"service": "s3", "op": "ListObjectsV2", "fault": "delay", "seconds": 1.5, "times": 1}));
    let erase = store.erase_call(1, call_id, id);
    let release = async {
        while t.fired(listing) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let read = t.fault(json!({"op": "GetItem", "fault": "internal", "contains": format!("CALL#1#{call_id}"),
                                  "times": if read_fails { 3 } else { 0 }}));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let released = store.release_held(deadline, |_| async { Ok(Some(OWNER.agent_id.to_owned())) }).await;
        (released.unwrap(), t.fired(read))
    };
    let (erased, (released, failed_reads)) = tokio::join!(erase, release);
    assert_eq!(failed_reads, if read_fails { 3 } else { 0 });
    assert!(erased.is_ok(), "{erased:?}");
    assert_eq!(released.erased, 1, "{released:?}");
    assert_eq!(t.objects().await, Vec::<String>::new(), "nothing of the erased call is left");
    t.delete().await;
}
