//! The store against a real DynamoDB protocol (the local moto server): idempotency under
//! concurrency, revisions, large calls, ids, and an unreachable server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use call_ingest_core::call::{ingest, Operation};
use call_ingest_store::calls::{frames, item, tables, Frames, Outcome, Owner, Part, Store, StoreError};
use serde_json::Value;
use testkit::{small_call, Tables};

const OWNER: Owner<'static> = Owner { workspace_id: 1, agent_id: "agt_test" };

fn store(t: &Tables) -> Store {
    Store::new(t.client.clone(), t.frames(), t.calls.clone(), 10)
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
async fn identical_replay_writes_no_revision_and_notes_only_when_it_came() {
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
    // The conditional put finds the head, then one small update notes the replay's receipt
    // (a pending send received before it must not become current over it).
    assert_eq!((again.id, again.outcome, again.requests, again.bytes_written), (first.id, Outcome::Unchanged, 2, 0));
    let mut after = store.raw_head(1, "replay-1").await.unwrap().unwrap();
    let seen = item::get_u64(&after, item::SEEN_AT).expect("the replay's receipt");
    assert!(seen > item::get_u64(&before, "updated_at").unwrap());
    after.remove(item::SEEN_AT);
    assert_eq!(before, after, "nothing else of the head changes (same updated_at, same body)");
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
async fn a_span_of_a_large_call_is_read_from_its_own_pieces_only() {
    let t = Tables::new().await;
    let store = store(&t);
    let raw = callgen::create_call_bytes(3_000_000, 4);
    let doc = ingest(Operation::CreateCall, &raw).unwrap();
    store.put_call(OWNER, &doc, &raw).await.unwrap();
    let head = store.raw_head(1, doc.call_id()).await.unwrap().unwrap();
    let key = item::get_s(&head, item::FRAME_KEY).unwrap().to_owned();
    let table = item::get_b(&head, item::PIECES).expect("a large frame is in pieces, its table on the head");
    let first_end = u32::from_le_bytes(table[4..8].try_into().unwrap()) as usize;
    let at = store.call_at(1, doc.call_id(), None).await.unwrap().unwrap();
    let document = serde_json::to_vec(&doc).unwrap();
    assert_eq!((at.len(Part::Raw), at.len(Part::Document)), (raw.len() as u64, document.len() as u64));
    let whole = store.get_call(1, doc.call_id(), false).await.unwrap().unwrap();
    assert_eq!(whole.current.document.get().as_bytes(), document, "the document as stored");

    // The first piece (the body's start) is spoilt in S3: a span past it still reads, so
    // only its own pieces were fetched and decompressed; a whole read fails.
    let s3 = t.s3.clone();
    let mut frame =
        s3.get_object().bucket(&t.bucket).key(&key).send().await.unwrap().body.collect().await.unwrap().to_vec();
    frame[32..first_end].fill(0x55);
    s3.put_object().bucket(&t.bucket).key(&key).body(frame.into()).send().await.unwrap();
    let (a, b) = (document.len() as u64 - 2_000_000, document.len() as u64 - 1);
    let span = store.span(&at, Part::Document, a, b).await.unwrap().unwrap();
    assert!(span == document[a as usize..=b as usize], "the span, byte for byte");
    let tail = store.span(&at, Part::Raw, raw.len() as u64 - 10, raw.len() as u64 - 1).await.unwrap().unwrap();
    assert_eq!(tail, &raw[raw.len() - 10..]);
    assert!(store.span(&at, Part::Raw, 0, 9).await.is_err(), "the spoilt piece is read for the body's start");
    assert!(store.get_call(1, doc.call_id(), false).await.is_err(), "a whole read meets the spoilt piece");
    assert!(store.span(&at, Part::Raw, 0, raw.len() as u64).await.is_err(), "a span past the part is refused");
    t.delete().await;
}

#[tokio::test]
async fn a_largest_call_is_kept_in_s3_and_reads_back_equal() {
    let t = Tables::new().await;
    let store = store(&t);
    let raw = callgen::create_call_bytes(5_800_000, 3);
    let doc = ingest(Operation::CreateCall, &raw).unwrap();
    let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert!(stored.is_new());
    let head = store.raw_head(1, doc.call_id()).await.unwrap().unwrap();
    let key = item::get_s(&head, item::FRAME_KEY).expect("the head points at its frame").to_owned();
    assert!(!head.contains_key("body"), "the frame is not inline");
    assert_eq!(t.objects().await, vec![key.clone()], "one object: the frame");
    let call = store.get_call(1, doc.call_id(), false).await.unwrap().unwrap();
    assert_eq!(call.current.raw, raw, "raw body byte for byte");
    assert_eq!(call.current.document_value(), serde_json::to_value(&doc).unwrap(), "document field for field");
    let items = t.scan(&t.calls).await;
    // A replay of a large call reads the head once, writes no object and notes its receipt.
    let again = store.put_call(OWNER, &doc, &raw).await.unwrap();
    assert_eq!((again.outcome, again.requests), (Outcome::Unchanged, 2));
    assert_eq!(t.objects().await, vec![key], "a replay writes no second object");
    let by_id = store.get_call_by_id(stored.id, false).await.unwrap().unwrap();
    assert_eq!(by_id.call_id, doc.call_id());
    let size: usize = items.iter().map(item::item_size).sum();
    let frame = item::get_u64(&head, "frame_bytes").unwrap_or_default() as usize;
    eprintln!(
        "5.8 MB call: request {} B, frame in S3 {} B ({:.1}%), {} items of {} B, {} write units, {} requests",
        raw.len(),
        frame,
        100.0 * frame as f64 / raw.len() as f64,
        items.len(),
        size,
        items.iter().map(|i| item::write_units(item::item_size(i))).sum::<usize>(),
        stored.requests
    );
    // In pieces (for ranged reads), the document no longer matches against the body: 41 %
    // of the request, where one frame took 24 % (a 25 MB call: 41 % either way, its body
    // is past one frame's window).
    assert!(frame * 100 <= raw.len() * 45, "stored at most 45% of the request size");
    assert!(size <= 2048, "the items hold no frame: {size} B");
    t.delete().await;
}

#[tokio::test]
async fn unreachable_dynamodb_answers_try_again_within_a_bounded_time() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener); // nothing listens there now
    let client = testkit::client_at(&format!("http://127.0.0.1:{port}")).await;
    // A small call: its frame stays inline, so no bucket is needed.
    let store = Store::new(client, Frames::new(testkit::s3_client(), "unused"), "calls", 10);
    let (doc, raw) = small_call("lost", "x");
    let started = Instant::now();
    let result = store.put_call(OWNER, &doc, &raw).await;
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn ids_from_two_instances_sharing_a_table_never_collide() {
    let t = Tables::new().await;
    let a = Arc::new(Store::new(t.client.clone(), t.frames(), t.calls.clone(), 7));
    let b = Arc::new(Store::new(t.client.clone(), t.frames(), t.calls.clone(), 7));
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

/// What a new call costs to store, by size: the head item (write units), the frame (in S3
/// above `frames::INLINE_MAX`, one PUT), and the bytes kept. Prints the figures the cost
/// table in the README comes from.
#[tokio::test]
async fn storage_figures_for_two_ten_and_sixty_minute_calls() {
    let t = Tables::new().await;
    let store = store(&t);
    for minutes in [2.0, 10.0, 60.0] {
        let raw = callgen::create_call_minutes(minutes, 1);
        let doc = ingest(Operation::CreateCall, &raw).unwrap();
        let stored = store.put_call(OWNER, &doc, &raw).await.unwrap();
        let head = store.raw_head(1, doc.call_id()).await.unwrap().unwrap();
        let size = item::item_size(&head);
        let in_s3 = item::get_s(&head, item::FRAME_KEY).is_some();
        let frame = match in_s3 {
            true => item::get_u64(&head, "frame_bytes").unwrap_or_default() as usize,
            false => item::get_b(&head, "body").map_or(0, <[u8]>::len),
        };
        eprintln!(
            "{minutes}-minute call: request {} B, frame {} B ({:.1}%) {}, head item {} B = {} write units, {} requests",
            raw.len(),
            frame,
            100.0 * frame as f64 / raw.len() as f64,
            if in_s3 { "in S3 (1 PUT)" } else { "inline" },
            size,
            item::write_units(size),
            stored.requests
        );
        // Storage a month per million such calls: the frame in S3 Standard ($0.023 a GB),
        // and in DynamoDB ($0.25 a GB, 100 bytes of overhead an item) the head and what the
        // two indexes project of it.
        let projected = |names: &[&str]| {
            let kept: item::Item =
                head.iter().filter(|(k, _)| names.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
            item::item_size(&kept) + 100
        };
        let keys = ["pk", "sk"];
        let by_id = projected(&[&keys[..], &["id"]].concat());
        let by_ws = projected(&[&keys[..], &["listed_ws", "listed_ms"], tables::SUMMARY].concat());
        let dynamodb = size + 100 + by_id + by_ws;
        let dollars = (frame as f64 * 0.023 + dynamodb as f64 * 0.25) * 1e6 / 1e9;
        eprintln!(
            "{minutes}-minute call: per million a month, S3 {:.1} GB + DynamoDB {:.2} GB (head {} B, by-id {by_id} B, by-workspace-listed {by_ws} B) = ${dollars:.3}",
            frame as f64 / 1e3,
            dynamodb as f64 / 1e3,
            size + 100,
        );
        if minutes == 10.0 {
            assert!(dollars <= 1.0, "the goal: at most $1 a month per million 10-minute calls: ${dollars:.3}");
        }
        assert!(frame * 100 <= raw.len() * 30, "{minutes} min: the frame is at most 30% of the request");
        assert!(in_s3 == (frame > frames::INLINE_MAX), "{minutes} min: inline exactly when small");
        assert!(!in_s3 || size <= 2048, "{minutes} min: a head pointing at S3 holds no frame: {size} B");
        let back = store.get_call(1, doc.call_id(), false).await.unwrap().unwrap();
        assert_eq!(back.current.raw, raw);
    }
    t.delete().await;
}

/// Rewrites the stored (inline) call `call_id` the way large calls were kept before their
/// frames moved to S3: the frame in chunk items `CHUNK#<submission>#<i>`, the head counting
/// them.
async fn make_chunked(t: &Tables, call_id: &str) {
    use aws_sdk_dynamodb::types::AttributeValue;
    let mut head = store(t).raw_head(1, call_id).await.unwrap().unwrap();
    let Some(AttributeValue::B(frame)) = head.remove("body") else { panic!("an inline frame") };
    let token = item::get_s(&head, "submission").unwrap().to_owned();
    let parts: Vec<&[u8]> = frame.as_ref().chunks(frame.as_ref().len() / 2 + 1).collect();
    for (i, part) in parts.iter().enumerate() {
        let chunk = t.client.put_item().table_name(&t.calls).item("pk", head["pk"].clone());
        let chunk = chunk.item("sk", AttributeValue::S(format!("CHUNK#{token}#{i:05}")));
        chunk.item("data", AttributeValue::B(part.to_vec().into())).send().await.unwrap();
    }
    head.insert("chunks".into(), AttributeValue::N(parts.len().to_string()));
    t.client.put_item().table_name(&t.calls).set_item(Some(head)).send().await.unwrap();
}

/// Calls stored before frames moved to S3 stay readable, and `move_chunks_to_s3` (callctl
/// tables move-frames) moves them: the same call reads back, its chunks are gone, its frame
/// is one object, and running it again moves nothing.
#[tokio::test]
async fn calls_kept_in_chunks_stay_readable_and_move_to_s3() {
    let t = Tables::new().await;
    let store = store(&t);
    let (doc, raw) = small_call("legacy", "one");
    store.put_call(OWNER, &doc, &raw).await.unwrap();
    let (doc2, raw2) = small_call("legacy", "two");
    store.put_call(OWNER, &doc2, &raw2).await.unwrap();
    make_chunked(&t, "legacy").await;
    let chunks =
        |items: &[item::Item]| items.iter().filter(|i| item::get_s(i, "sk").unwrap().starts_with("CHUNK#")).count();
    assert_eq!(chunks(&t.scan(&t.calls).await), 2, "the current revision is kept in two chunks");
    let before = store.get_call(1, "legacy", true).await.unwrap().expect("a chunked call reads");
    assert_eq!((before.current.raw.clone(), before.revisions[0].raw.clone()), (raw2.clone(), raw.clone()));

    assert_eq!(store.move_chunks_to_s3().await.unwrap(), 1);
    let items = t.scan(&t.calls).await;
    assert_eq!(chunks(&items), 0, "its chunks are gone");
    let head = items.iter().find(|i| item::get_s(i, "sk") == Some("HEAD")).unwrap();
    assert!(item::get_s(head, item::FRAME_KEY).is_some() && !head.contains_key("chunks"), "{head:?}");
    assert_eq!(t.objects().await.len(), 1);
    let after = store.get_call(1, "legacy", true).await.unwrap().expect("a moved call reads");
    assert_eq!(after, before);
    assert_eq!(store.move_chunks_to_s3().await.unwrap(), 0, "nothing left to move");
    // Erasing a moved call removes its object.
    store.erase_call(1, "legacy", after.id).await.unwrap();
    assert_eq!(t.objects().await, Vec::<String>::new());
    t.delete().await;
}
