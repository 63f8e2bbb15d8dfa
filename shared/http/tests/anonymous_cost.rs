//! What an anonymous request can make a function do: with a well-formed key that was never
//! issued, a 6 MiB operation A body is answered 401 without being parsed. Measured as the
//! bytes allocated while the handler runs (parsing the body allocates more than its size).
//! Its own test binary: the allocator counts every thread of the process.

mod requests;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::requests::*;
use call_ingest_core::Operation;
use testkit::Tables;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size.saturating_sub(layout.size()), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// A 6 MiB operation A body of many transcript lines, `agentId` where `agent_first` says.
fn big_body(agent_first: bool) -> Vec<u8> {
    let line = serde_json::json!({"role": "user", "content": "word ".repeat(40), "timestamp": "2026-11-21T10:00:01Z"});
    let mut transcript = Vec::new();
    let mut size = 0;
    while size < 6 * 1024 * 1024 - 4096 {
        size += line.to_string().len() + 1;
        transcript.push(line.clone());
    }
    let mut body = serde_json::json!({"callId": "c-big", "transcript": transcript});
    if agent_first {
        body["agentId"] = "agt_x".into();
        return serde_json::to_vec(&body).unwrap();
    }
    let mut bytes = serde_json::to_vec(&body).unwrap();
    bytes.pop();
    bytes.extend_from_slice(br#","agentId":"agt_x"}"#);
    bytes
}

#[tokio::test(flavor = "current_thread")]
async fn an_anonymous_six_mib_body_is_refused_without_being_parsed() {
    let t = Tables::new().await;
    let backend = t.backend(&[]);
    let unknown = format!("Bearer cik_{}", "0".repeat(48));
    for agent_first in [true, false] {
        let body = big_body(agent_first);
        assert!(body.len() > 6_000_000);
        let mut request = request(Operation::SendCallData, Some(&unknown), &[], &serde_json::json!({}));
        *request.body_mut() = lambda_http::Body::from(body);
        let before = ALLOCATED.load(Ordering::SeqCst);
        let answer = send(&backend, Operation::SendCallData, request).await;
        let allocated = ALLOCATED.load(Ordering::SeqCst) - before;
        assert_eq!(answer.status, 401);
        assert!(
            allocated < 512 * 1024,
            "an anonymous request allocated {allocated} bytes (agentId first: {agent_first})"
        );
    }
    t.delete().await;
}
