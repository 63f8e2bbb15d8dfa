//! The strictest data policy a call had binds its later revisions (issue 32,
//! `Store::commit_bound`), and a submission is still stored once: committed directly and
//! again from its pending copy (a 202 whose direct write outlived its answer), bound or not.

use call_ingest_core::call::{ingest, CallDocument, Operation};
use call_ingest_core::privacy::{self, Kinds, Storage};
use call_ingest_store::calls::pending::Committed;
use call_ingest_store::calls::{item, Frames, Outcome, Owner, Receipt, Store};
use serde_json::Value;
use testkit::Tables;

const OWNER: Owner<'static> = Owner { workspace_id: 1, agent_id: "agt_test" };

fn store(t: &Tables) -> Store {
    Store::new(t.client.clone(), t.frames(), t.calls.clone(), 10)
}

/// A call of about `bytes` bytes (over 4 KB: its frame in S3), its status `status`.
fn call(call_id: &str, bytes: usize, status: &str) -> (CallDocument, Vec<u8>) {
    let mut body: Value = serde_json::from_slice(&callgen::create_call_bytes(bytes, 5)).unwrap();
    body["call_id"] = Value::from(call_id);
    body["call_status"] = Value::from(status);
    let raw = serde_json::to_vec(&body).unwrap();
    (ingest(Operation::CreateCall, &raw).expect("valid call"), raw)
}

/// `doc` as a request with `X-Data-Policy: metadata_only` stores it.
fn metadata_only(mut doc: CallDocument) -> (CallDocument, Vec<u8>) {
    privacy::restrict(&mut doc, Storage::MetadataOnly, Kinds::all());
    let raw = privacy::stored_raw(&doc, b"").into_owned();
    (doc, raw)
}

async fn commit_copy(store: &Store, doc: &CallDocument, raw: &[u8], receipt: &Receipt) -> Committed {
    let key = store.put_pending(OWNER, Operation::CreateCall, doc.call_id(), raw, receipt, false).await.unwrap();
    store.commit_pending(&key).await.unwrap()
}

/// A submission stored as sent, then a stricter revision over it: its pending copy
/// committed afterwards finds it stored (its token on a revision) before it looks at the
/// head's policy; it is not stored a second time, restricted (a reviewer's find: a large
/// call's path looked at the policy first).
#[tokio::test]
async fn a_copy_of_a_submission_stored_before_the_call_tightened_is_unchanged() {
    let t = Tables::new().await;
    let s = store(&t);
    let (doc, raw) = call("bound-stored-1", 40_000, "ended");
    let first = Receipt::new(call_ingest_store::calls::now_ms()).unwrap();
    s.put_call_within(OWNER, &doc, &raw, &first, std::time::Duration::from_secs(10)).await.unwrap();
    let (strict, strict_raw) = metadata_only(call("bound-stored-1", 40_000, "transferred").0);
    assert_eq!(s.put_call(OWNER, &strict, &strict_raw).await.unwrap().outcome, Outcome::Revised);
    match commit_copy(&s, &doc, &raw, &first).await {
        Committed::Stored(stored) => assert_eq!((stored.outcome, stored.revision), (Outcome::Unchanged, 2)),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.get_call(1, "bound-stored-1", true).await.unwrap().unwrap().current.revision, 2);
}

/// A send found bound is committed restricted under its own token, marked: the direct
/// write's commit and its pending copy's are one submission, and the frame the direct
/// write put of the content as sent (its reply lost, then 202) is erased, not left
/// holding what the policy removes.
#[tokio::test]
async fn a_bound_send_is_one_submission_and_its_unrestricted_frame_is_erased() {
    let t = Tables::new().await;
    let s = store(&t);
    let (strict, strict_raw) = metadata_only(call("bound-send-1", 40_000, "ended").0);
    assert_eq!(s.put_call(OWNER, &strict, &strict_raw).await.unwrap().outcome, Outcome::Created);
    let (doc, raw) = call("bound-send-1", 40_000, "transferred");
    let receipt = Receipt::new(call_ingest_store::calls::now_ms()).unwrap();
    // The direct write: bound, stored restricted under the send's token, marked.
    let direct = s.put_call_within(OWNER, &doc, &raw, &receipt, std::time::Duration::from_secs(10)).await.unwrap();
    assert_eq!((direct.outcome, direct.revision), (Outcome::Revised, 2));
    let head = s.raw_head(1, "bound-send-1").await.unwrap().unwrap();
    assert_eq!(item::get_s(&head, "submission"), Some(format!("{}b", receipt.token).as_str()));
    // The frame of the content as sent, as a direct write that put it and then lost its
    // answer leaves it.
    let key = Frames::key(1, "bound-send-1", &receipt.token);
    let packed = call_ingest_store::calls::codec::pack(&raw, &doc.to_json()).unwrap();
    s.frames().put(&key, packed.frame.into(), OWNER, "bound-send-1", receipt.received_ms).await.unwrap();
    // Its pending copy: one submission with the direct write's commit.
    match commit_copy(&s, &doc, &raw, &receipt).await {
        Committed::Stored(stored) => assert_eq!((stored.outcome, stored.revision), (Outcome::Unchanged, 2)),
        other => panic!("{other:?}"),
    }
    let got = s.get_call(1, "bound-send-1", true).await.unwrap().unwrap();
    assert_eq!(got.current.revision, 2);
    assert!(got.current.document.get().contains(r#""storage":"metadata_only""#));
    assert_eq!(s.frames().get(&key).await.unwrap(), None, "the unrestricted frame is erased");
}
