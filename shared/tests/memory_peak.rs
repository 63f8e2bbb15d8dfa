//! What the largest call we take costs in memory: a Create Call body just under
//! `MAX_DECOMPRESSED_BYTES` (32 MiB), sent zstd-compressed with the largest window we accept
//! (32 MiB), stored through the handler
//! with a real DynamoDB protocol. The peak of live heap bytes while the handler runs must
//! leave room in the function's `MemorySize` (template.yaml) for the runtime, the binary
//! and the event Lambda hands us (the compressed body, base64, in a JSON string).
//! Its own test binary: the allocator counts every thread of the process.
#![cfg(feature = "aws")]

mod http_support;
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use call_ingest::directory::scopes::Scopes;
use call_ingest::Operation;
use http_support::*;
use lambda_http::Body;
use support::Tables;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Both blocks may be live while the old one is copied.
        grew(new_size);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The heap a request may take at its peak: half the functions' `MemorySize` in
/// template.yaml, the other half for the runtime, the binary, the event (up to 6 MB, and
/// its parsed copy) and the allocator's slack.
fn peak_budget() -> usize {
    let text = std::fs::read_to_string(support::root().join("template.yaml")).unwrap();
    let template: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let mib = template["Globals"]["Function"]["MemorySize"].as_u64().expect("Globals.Function.MemorySize");
    (mib as usize) << 19
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_at_the_decompressed_cap_is_stored_within_the_memory_budget() {
    let t = Tables::new().await;
    // The compressed body may be over 6 MiB here (see below).
    let app = t.app(&[("MAX_BODY_BYTES", "10485760")]);
    let d = app.directory();
    let ws = d.create_workspace("one").await.unwrap().id;
    d.create_agent(ws, "desk", None, None).await.unwrap();
    let key = format!("Bearer {}", d.create_api_key(ws, "k", Scopes::DEFAULT).await.unwrap().token);

    let size = callgen::Size::Bytes(32_500_000);
    let body = callgen::create_call(&callgen::Options { size, seed: 31, call_id: Some("c-cap".into()) });
    assert!(body.len() > 32_000_000 && body.len() <= 32 << 20, "{} bytes", body.len());
    // A realistic call this large compresses to about 5.9 MB (zstd -9), more than fits in
    // Lambda's event once base64-encoded; the cap bounds what any body can expand to, so
    // the budget is checked at the cap all the same (the handler has no other size limit).
    // With the largest window a frame may declare (32 MiB), which the decoder allocates.
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.window_log(25).unwrap();
    encoder.long_distance_matching(true).unwrap();
    std::io::Write::write_all(&mut encoder, &body).unwrap();
    let packed = encoder.finish().unwrap();
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let mut request = request(Operation::CreateCall, Some(&key), &q, &serde_json::Value::Null);
    request.headers_mut().insert("content-encoding", "zstd".parse().unwrap());
    *request.body_mut() = Body::Binary(packed);

    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let answer = send(&app, Operation::CreateCall, request).await;
    let peak = PEAK.load(Ordering::SeqCst) - before;
    assert_eq!(answer.status, 201, "{}", answer.body);

    println!(
        "a {}-byte call, zstd: peak live heap {} bytes above the start ({:.2}× the body)",
        body.len(),
        peak,
        peak as f64 / body.len() as f64
    );
    let budget = peak_budget();
    assert!(peak < budget, "the request peaked at {peak} bytes of heap, over half of MemorySize ({budget} bytes)");
    // Stored whole, so the peak is that of the whole path.
    let stored = app.store().get_call(ws, "c-cap", false).await.unwrap().expect("stored");
    assert!(stored.current.raw == body);
    t.delete().await;
}
