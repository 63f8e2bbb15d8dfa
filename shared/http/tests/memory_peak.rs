//! What the largest call we take costs in memory: a Create Call body just under
//! `MAX_DECOMPRESSED_BYTES` (32 MiB), sent zstd-compressed with the largest window we accept
//! (32 MiB), stored through the handler
//! with a real DynamoDB protocol. The peak of live heap bytes while the handler runs must
//! leave room in the function's `MemorySize` (template.yaml) for the runtime, the binary
//! and the event Lambda hands us (the compressed body, base64, in a JSON string).
//! Its own test binary: the allocator counts every thread of the process.

mod requests;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_store::directory::scopes::{Scope, Scopes};
use lambda_http::Body;
use testkit::Tables;

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
    let text = std::fs::read_to_string(testkit::root().join("template.yaml")).unwrap();
    let template: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let mib = template["Globals"]["Function"]["MemorySize"].as_u64().expect("Globals.Function.MemorySize");
    (mib as usize) << 19
}

/// The allocator counts the whole process: one measurement at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `request` through the handler; answers its status, its body and the peak of live
/// heap above the start.
async fn measured(
    backend: &call_ingest_http::Backend,
    endpoint: impl Into<call_ingest_http::Endpoint>,
    request: lambda_http::Request,
) -> (Answer, usize) {
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let answer = send(backend, endpoint, request).await;
    (answer, PEAK.load(Ordering::SeqCst).saturating_sub(before))
}

/// Tables, the handler's backend (with `env`), and workspace 1 with agent `desk`: the agent's
/// id and a key with `scopes`, as an Authorization header.
async fn fixture(env: &[(&str, &str)], scopes: Scopes) -> (Tables, call_ingest_http::Backend, String, String) {
    let t = Tables::new().await;
    let backend = t.backend(env);
    let d = backend.directory();
    let ws = d.create_workspace("one").await.unwrap().id;
    let agent = d.create_agent(ws, "desk", None, None).await.unwrap().id;
    let key = format!("Bearer {}", d.create_api_key(ws, "k", scopes).await.unwrap().token);
    (t, backend, agent, key)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut e, data).unwrap();
    e.finish().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_at_the_decompressed_cap_is_stored_within_the_memory_budget() {
    let _serial = SERIAL.lock().await;
    // The compressed body may be over 6 MiB here (see below).
    let (t, backend, _, key) = fixture(&[("MAX_BODY_BYTES", "10485760")], Scopes::DEFAULT).await;

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
    let answer = send(&backend, Operation::CreateCall, request).await;
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
    let stored = backend.store().get_call(1, "c-cap", false).await.unwrap().expect("stored");
    assert!(stored.current.raw == body);
    t.delete().await;
}

/// Issue 17, item 3: bodies built to cost the most memory per byte, each sent gzip-compressed
/// (a few KB to a few MB on the wire), are refused (count limits) or judged (422) within
/// half of MemorySize. Each is as large as the limits let it be.
#[tokio::test(flavor = "current_thread")]
async fn adversarial_bodies_stay_within_the_memory_budget() {
    use call_ingest_core::api::counts::{
        CONTAINER_WEIGHT, MAX_DEPTH, MAX_KEYS, MAX_SEGMENTS, MAX_VALUES, MAX_WORDS, MAX_WORDS_PER_SEGMENT,
    };
    let _serial = SERIAL.lock().await;
    let (t, backend, agent, key) = fixture(&[], Scopes::DEFAULT).await;
    let empty = |n: usize| vec!["{}"; n].join(",");
    let words_segment = format!(r#"{{"words":[{}]}}"#, empty(MAX_WORDS_PER_SEGMENT));
    let word_segments = vec![words_segment.as_str(); MAX_WORDS / MAX_WORDS_PER_SEGMENT].join(",");
    let wide = format!("{{{}}}", (0..MAX_KEYS).map(|i| format!(r#""k{i}":0"#)).collect::<Vec<_>>().join(","));
    let objects = (MAX_VALUES - 100) / (MAX_KEYS * 3);
    let metadata = (0..objects).map(|j| format!(r#""m{j}":{wide}"#)).collect::<Vec<_>>().join(",");
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH - 3), "]".repeat(MAX_DEPTH - 3));
    let deeps = vec![deep.as_str(); (MAX_VALUES - 100) / ((MAX_DEPTH - 3) * (1 + CONTAINER_WEIGHT))].join(",");
    let shapes: Vec<(&str, Operation, String, u16)> = vec![
        (
            "600,000 empty segments",
            Operation::CreateCall,
            format!(r#"{{"transcript_with_tool_calls":[{}]}}"#, empty(600_000)),
            422,
        ),
        (
            "empty segments at the limit",
            Operation::CreateCall,
            format!(r#"{{"transcript_with_tool_calls":[{}]}}"#, empty(MAX_SEGMENTS)),
            422,
        ),
        (
            "empty words at the limit",
            Operation::CreateCall,
            format!(r#"{{"transcript_with_tool_calls":[{word_segments}]}}"#),
            422,
        ),
        ("huge metadata objects", Operation::CreateCall, format!(r#"{{"metadata":{{{metadata}}}}}"#), 422),
        ("deep nesting", Operation::CreateCall, format!(r#"{{"call_analysis":{{"x":[{deeps}]}}}}"#), 422),
        (
            "all limits at once",
            Operation::CreateCall,
            format!(
                r#"{{"transcript_with_tool_calls":[{word_segments},{}],"call_analysis":{{"x":[{}]}}}}"#,
                empty(MAX_SEGMENTS - MAX_WORDS / MAX_WORDS_PER_SEGMENT),
                vec!["0"; MAX_VALUES - (1 + CONTAINER_WEIGHT) * MAX_SEGMENTS - 1000].join(",")
            ),
            422,
        ),
        (
            "operation A: empty items at the limit",
            Operation::SendCallData,
            format!(r#"{{"agentId":"{agent}","callId":"a","transcript":[{}]}}"#, empty(MAX_SEGMENTS)),
            422,
        ),
    ];
    let budget = peak_budget();
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    for (name, operation, body, status) in shapes {
        let packed = gzip(body.as_bytes());
        let mut request = request(operation, Some(&key), &q, &serde_json::Value::Null);
        request.headers_mut().insert("content-encoding", "gzip".parse().unwrap());
        *request.body_mut() = Body::Binary(packed.clone());
        drop(body);
        let (answer, peak) = measured(&backend, operation, request).await;
        println!(
            "{name}: {} bytes gzip, {} answered, peak heap {:.1} MB",
            packed.len(),
            answer.status,
            peak as f64 / 1e6
        );
        assert_eq!(answer.status, status, "{name}: {}", answer.body);
        assert!(peak < budget, "{name}: peaked at {peak} bytes of heap, over half of MemorySize ({budget} bytes)");
    }
    t.delete().await;
}

/// Reading back the largest call of each operation stays within the budget too: operation
/// B at the decompressed cap, and operation A with long `content` strings.
#[tokio::test(flavor = "current_thread")]
async fn the_largest_calls_are_read_back_within_the_memory_budget() {
    let _serial = SERIAL.lock().await;
    let scopes = Scopes::of([Scope::Send, Scope::Read]);
    let (t, backend, agent, key) = fixture(&[("MAX_BODY_BYTES", "10485760")], scopes).await;
    let b = callgen::create_call(&callgen::Options {
        size: callgen::Size::Bytes(32_500_000),
        seed: 32,
        call_id: Some("b-max".into()),
    });
    let content = "word ".repeat(20_000);
    let items: Vec<String> =
        (0..320).map(|i| format!(r#"{{"role":"{}","content":"{content}"}}"#, ["agent", "user"][i % 2])).collect();
    let a = format!(r#"{{"agentId":"{agent}","callId":"a-max","transcript":[{}]}}"#, items.join(",")).into_bytes();
    assert!(a.len() > 32_000_000 && a.len() <= 32 << 20, "{}", a.len());
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    for (operation, body, call_id) in [(Operation::CreateCall, b, "b-max"), (Operation::SendCallData, a, "a-max")] {
        let mut post = request(operation, Some(&key), &q, &serde_json::Value::Null);
        post.headers_mut().insert("content-encoding", "zstd".parse().unwrap());
        *post.body_mut() = Body::Binary(zstd::encode_all(&body[..], 3).unwrap());
        drop(body);
        let (stored, _) = measured(&backend, operation, post).await;
        assert_eq!(stored.status, 201, "{}", stored.body);
        let get = get_request(
            None,
            Some(&key),
            &[("workspace_id", "1"), ("provider_call_id", call_id)],
            // Too large for one answer even gzipped: read in byte ranges, each part
            // decoding the whole call (the costliest read there is).
            &[("accept-encoding", "gzip"), ("range", "bytes=0-")],
        );
        let (answer, peak) = measured(&backend, call_ingest_http::Endpoint::GetCall, get).await;
        println!("reading {call_id} back: {} answered, peak heap {:.1} MB", answer.status, peak as f64 / 1e6);
        assert!([200, 206].contains(&answer.status), "{} {}", answer.status, answer.body);
        let budget = peak_budget();
        assert!(
            peak < budget,
            "reading {call_id}: peaked at {peak} bytes of heap, over half of MemorySize ({budget} bytes)"
        );
    }
    t.delete().await;
}
