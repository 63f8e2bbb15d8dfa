//! The store against a real DynamoDB protocol (the local moto server): idempotency under
//! concurrency, revisions, large calls, ids, and an unreachable server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use call_ingest_core::call::{ingest, Operation};
use call_ingest_store::calls::{item, Outcome, Owner, Store, StoreError};
use serde_json::Value;
use testkit::{small_call, Tables};

const OWNER: Owner<'static> = Owner { workspace_id: 1, agent_id: "agt_test" };

fn store(t: &Tables) -> Store {
    Store::new(t.client.clone(), t.calls.clone(), 10)
}

fn heads(items: &[item::Item]) -> usize {
    items.iter().filter(|i| item::get_s(i, "sk") == Some("HEAD")).count()
}

#[tokio::test]
async fn fifty_concurrent_creations_yield_one_new_call_and_one_id() {
    let t = Tables::new().await;
    // Five instances, each with its own id block, as five Lambda instances.
    let stores: Vec<Arc<Store>> = (0..5).map(|_| Arc::new(store(&t))).collect();
    let (doc, raw) = small_call("race-1", "same");
    let (doc, raw) = (Arc::new(doc), Arc::new(raw));
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let (store, doc, raw) = (stores[i % 5].clone(), doc.clone(), raw.clone());
            tokio::spawn(async move { store.put_call(OWNER, &doc, &raw).await })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap().expect("stored"));
    }
    assert_eq!(results.iter().filter(|r| r.is_new()).count(), 1);
    let id = results[0].id;
    assert!(results.iter().all(|r| r.id == id), "one id for all");
    assert!(results.iter().all(|r| r.outcome != Outcome::Revised));
    assert_eq!(heads(&t.scan(&t.calls).await), 1);
    t.delete().await;
}

#[tokio::test]
async fn same_call_id_in_two_workspaces_is_two_calls() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call("shared-id", "x");
    let a = store.put_call(Owner { workspace_id: 1, agent_id: "a1" }, &doc, &raw).await.unwrap();
    let b = store.put_call(Owner { workspace_id: 2, agent_id: "a2" }, &doc, &raw).await.unwrap();
    assert!(a.is_new() && b.is_new());
    assert_ne!(a.id, b.id);
    let in_1 = store.get_call(1, "shared-id", false).await.unwrap().unwrap();
    let in_2 = store.get_call(2, "shared-id", false).await.unwrap().unwrap();
    assert_eq!((in_1.id, in_1.agent_id.as_str()), (a.id, "a1"));
    assert_eq!((in_2.id, in_2.agent_id.as_str()), (b.id, "a2"));
    assert!(store.get_call(3, "shared-id", false).await.unwrap().is_none());
    t.delete().await;
}

#[tokio::test]
async fn identical_replay_writes_nothing_and_costs_one_request() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call("replay-1", "same");
    let first = store.put_call(OWNER, &doc, &raw).await.unwrap();
    let before = store.raw_head(1, "replay-1").await.unwrap().unwrap();
    // Same content with keys reordered and white space: the same normalised document.
    let mut value: serde_json::Map<String, Value> = serde_json::from_slice(&raw).unwrap();
    let reordered: serde_json::Map<String, Value> = std::mem::take(&mut value).into_iter().rev().collect();
    let raw2 = serde_json::to_vec_pretty(&reordered).unwrap();
    let doc2 = ingest(Operation::CreateCall, &raw2).unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let again = store.put_call(OWNER, &doc2, &raw2).await.unwrap();
    assert_eq!((again.id, again.outcome, again.requests, again.bytes_written), (first.id, Outcome::Unchanged, 1, 0));
    let after = store.raw_head(1, "replay-1").await.unwrap().unwrap();
    assert_eq!(before, after, "the head item is untouched (same updated_at, same body)");
    t.delete().await;
}

#[tokio::test]
async fn new_call_costs_one_request_when_an_id_block_is_at_hand() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call("first", "x");
    let first = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!(first.requests, 2, "the first call reserves a block of ids");
    let (doc, raw) = small_call("second", "x");
    let second = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((second.outcome, second.requests), (Outcome::Created, 1));
    t.delete().await;
}

#[tokio::test]
async fn different_content_becomes_revision_two_and_keeps_revision_one_byte_for_byte() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc1, raw1) = small_call("rev-1", "first summary");
    let (doc2, raw2) = small_call("rev-1", "analysis ready");
    let first = store.put_call(OWNER, &doc1, &raw1).await.unwrap();
    let second = store.put_call(OWNER, &doc2, &raw2).await.unwrap();
    assert_eq!((second.id, second.outcome, second.revision), (first.id, Outcome::Revised, 2));
    let call = store.get_call(1, "rev-1", true).await.unwrap().unwrap();
    assert_eq!(call.current.revision, 2);
    assert_eq!(call.current.raw, raw2);
    assert_eq!(call.revisions.len(), 1);
    assert_eq!(call.revisions[0].revision, 1);
    assert_eq!(call.revisions[0].raw, raw1, "revision 1 kept byte for byte");
    assert_eq!(call.revisions[0].document_value(), serde_json::to_value(&doc1).unwrap());
    assert_eq!(call.current.document_value()["call"]["call_analysis"]["call_summary"], "analysis ready");
    t.delete().await;
}

#[tokio::test]
async fn ten_concurrent_different_submissions_are_all_kept() {
    let t = Tables::new().await;
    let stores: Vec<Arc<Store>> = (0..5).map(|_| Arc::new(store(&t))).collect();
    let store = stores[0].clone();
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = stores[i % 5].clone();
            tokio::spawn(async move {
                let (doc, raw) = small_call("busy", &format!("version {i}"));
                store.put_call(OWNER, &doc, &raw).await.map(|s| (s, raw))
            })
        })
        .collect();
    let mut raws = Vec::new();
    for task in tasks {
        let (stored, raw) = task.await.unwrap().expect("stored");
        raws.push(raw);
        assert!(stored.outcome != Outcome::Unchanged);
    }
    let call = store.get_call(1, "busy", true).await.unwrap().unwrap();
    assert_eq!(call.current.revision, 10);
    assert_eq!(call.revisions.iter().map(|r| r.revision).collect::<Vec<_>>(), (1..10).collect::<Vec<_>>());
    let mut kept: Vec<Vec<u8>> =
        call.revisions.iter().map(|r| r.raw.clone()).chain([call.current.raw.clone()]).collect();
    kept.sort();
    raws.sort();
    assert_eq!(kept, raws, "every submission is stored, none lost");
    t.delete().await;
}

#[tokio::test]
async fn a_largest_call_is_chunked_and_reads_back_equal() {
    let t = Tables::new().await;
    let store = store(&t);
    let raw = callgen::create_call_bytes(5_800_000, 3);
    let doc = ingest(Operation::CreateCall, &raw).unwrap();
    let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert!(stored.is_new());
    let head = store.raw_head(1, doc.call_id()).await.unwrap().unwrap();
    assert!(item::get_u64(&head, "chunks").unwrap_or(0) >= 1, "stored in chunks");
    let call = store.get_call(1, doc.call_id(), false).await.unwrap().unwrap();
    assert_eq!(call.current.raw, raw, "raw body byte for byte");
    assert_eq!(call.current.document_value(), serde_json::to_value(&doc).unwrap(), "document field for field");
    let items = t.scan(&t.calls).await;
    assert!(items.iter().all(|i| !i.contains_key("expires_at")), "chunks of the current head never expire");
    // A replay of a large call reads the head once and writes nothing.
    let again = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((again.outcome, again.requests), (Outcome::Unchanged, 1));
    let by_id = store.get_call_by_id(stored.id, false).await.unwrap().unwrap();
    assert_eq!(by_id.call_id, doc.call_id());
    let size: usize = items.iter().map(item::item_size).sum();
    eprintln!(
        "5.8 MB call: request {} B, stored {} B ({:.1}%), {} items, {} write units, {} requests",
        raw.len(),
        size,
        100.0 * size as f64 / raw.len() as f64,
        items.len(),
        items.iter().map(|i| item::write_units(item::item_size(i))).sum::<usize>(),
        stored.requests
    );
    assert!(size * 100 <= raw.len() * 30, "stored at most 30% of the request size");
    t.delete().await;
}

#[tokio::test]
async fn unreachable_dynamodb_answers_try_again_within_a_bounded_time() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener); // nothing listens there now
    let client = testkit::client_at(&format!("http://127.0.0.1:{port}")).await;
    let store = Store::new(client, "calls", 10);
    let (doc, raw) = small_call("lost", "x");
    let started = Instant::now();
    let result = store.put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn ids_from_two_instances_sharing_a_table_never_collide() {
    let t = Tables::new().await;
    let a = Arc::new(Store::new(t.client.clone(), t.calls.clone(), 7));
    let b = Arc::new(Store::new(t.client.clone(), t.calls.clone(), 7));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let (doc, raw) = small_call(&format!("ids-{i}"), "x");
            store.put_call(OWNER, &doc, &raw).await.unwrap().id
        }));
    }
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap());
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids.iter().all(|&id| id > 0 && id < (1 << 53)));
    t.delete().await;
}

#[tokio::test]
async fn storage_figures_for_ten_and_sixty_minute_calls() {
    let t = Tables::new().await;
    let store = store(&t);
    for (name, raw) in
        [("10-minute", callgen::create_call_minutes(10.0, 1)), ("60-minute", callgen::create_call_minutes(60.0, 1))]
    {
        let doc = ingest(Operation::CreateCall, &raw).unwrap();
        let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
        let head = store.raw_head(1, doc.call_id()).await.unwrap().unwrap();
        let size = item::item_size(&head);
        eprintln!(
            "{name} call: request {} B, stored {} B ({:.1}%), {} write units, {} requests",
            raw.len(),
            size,
            100.0 * size as f64 / raw.len() as f64,
            item::write_units(size),
            stored.requests
        );
        assert!(size * 100 <= raw.len() * 30, "{name}: stored at most 30% of the request size");
        let back = store.get_call(1, doc.call_id(), false).await.unwrap().unwrap();
        assert_eq!(back.current.raw, raw);
    }
    t.delete().await;
}
