//! Reading calls back through the handler, against the local DynamoDB (moto, started as the
//! tests start it): a get by id and by provider call id for calls of several sizes, and a
//! list page of 100. Before measuring, prints the read units DynamoDB would charge each
//! read, from the sizes of the items it reads (4 KB per unit, rounded up per request; half
//! for an eventually consistent read).
//!
//! `make bench-reading` (needs `make venv`).

use std::collections::HashMap;

use call_ingest_core::Operation;
use call_ingest_http::{handle, Backend, Endpoint};
use call_ingest_store::calls::item::{get_s, item_size, Item};
use call_ingest_store::directory::scopes::{Scope, Scopes};
use criterion::{criterion_group, criterion_main, Criterion};
use lambda_http::http::{Method, Request};
use lambda_http::{Body, RequestExt};

/// The calls read: name, body size (JSON bytes sent).
const SIZES: [(&str, usize); 4] = [("2 KB", 2_000), ("60 KB", 60_000), ("1 MB", 1_000_000), ("5.8 MB", 5_800_000)];

struct Bench {
    rt: tokio::runtime::Runtime,
    t: testkit::Tables,
    backend: Backend,
    key: String,
    /// Provider call id and id of each call of `SIZES`.
    calls: Vec<(String, u64)>,
}

fn setup() -> Bench {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (t, backend, key, calls) = rt.block_on(async {
        let t = testkit::Tables::new().await;
        let backend = t.backend(&[("RATE_LIMIT_PER_SECOND", "1000")]);
        let d = backend.directory();
        d.create_workspace("bench").await.unwrap();
        d.create_agent(1, "desk", None, None).await.unwrap();
        let key = d.create_api_key(1, "k", Scopes::of([Scope::Send, Scope::Read])).await.unwrap().token;
        let mut calls = Vec::new();
        for (i, (name, bytes)) in SIZES.iter().enumerate() {
            let call_id = format!("size-{i}");
            let body = callgen::create_call(&callgen::Options {
                size: callgen::Size::Bytes(*bytes),
                seed: i as u64,
                call_id: Some(call_id.clone()),
            });
            let id = post(&backend, &key, body).await;
            eprintln!("stored the {name} call: id {id}");
            calls.push((call_id, id));
        }
        // 150 more small calls, so that a page of 100 is full.
        for i in 0..150u64 {
            let body = callgen::create_call(&callgen::Options {
                size: callgen::Size::Bytes(2_000),
                seed: 1000 + i,
                call_id: Some(format!("listed-{i}")),
            });
            post(&backend, &key, body).await;
        }
        (t, backend, key, calls)
    });
    Bench { rt, t, backend, key, calls }
}

async fn post(backend: &Backend, key: &str, body: Vec<u8>) -> u64 {
    let q = HashMap::from([
        ("workspace_id".to_owned(), "1".to_owned()),
        ("agent_remote_identifier".to_owned(), "desk".to_owned()),
    ]);
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/public/call")
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Binary(body))
        .unwrap()
        .with_query_string_parameters(q);
    let response = handle(backend, Operation::CreateCall, request).await;
    assert_eq!(response.status(), 201);
    let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    body["id"].as_u64().unwrap()
}

fn get(key: &str, path: &str, id: Option<u64>, query: &[(&str, &str)]) -> Request<Body> {
    let q: HashMap<String, String> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let request = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header("authorization", format!("Bearer {key}"))
        .header("accept-encoding", "gzip")
        .body(Body::Empty)
        .unwrap()
        .with_query_string_parameters(q);
    match id {
        Some(id) => request.with_path_parameters(HashMap::from([("id".to_owned(), id.to_string())])),
        None => request,
    }
}

/// Read units of one request reading `bytes` in all (DynamoDB rounds each request up to
/// 4 KB units; an eventually consistent read costs half).
fn units(bytes: usize, consistent: bool) -> f64 {
    let units = bytes.div_ceil(4096).max(1) as f64;
    if consistent {
        units
    } else {
        units / 2.0
    }
}

fn print_read_units(b: &Bench) {
    let items = b.rt.block_on(b.t.scan(&b.t.calls));
    let of = |call_id: &str| -> Vec<&Item> {
        let pk = format!("CALL#1#{call_id}");
        items.iter().filter(|i| get_s(i, "pk") == Some(pk.as_str())).collect()
    };
    eprintln!("\nread units per request (DynamoDB's pricing; measured item sizes):");
    eprintln!("| call (JSON sent) | head item | chunks | get by provider id | get by id | raw |");
    eprintln!("|---|---|---|---|---|---|");
    for ((name, _), (call_id, _)) in SIZES.iter().zip(&b.calls) {
        let parts = of(call_id);
        let head = parts.iter().find(|i| get_s(i, "sk") == Some("HEAD")).map(|i| item_size(i)).unwrap_or_default();
        let chunks: Vec<usize> = parts
            .iter()
            .filter(|i| get_s(i, "sk").is_some_and(|s| s.starts_with("CHUNK#")))
            .map(|i| item_size(i))
            .collect();
        // GetItem of the head (consistent), then one consistent Query of its chunks.
        let by_provider = units(head, true) + if chunks.is_empty() { 0.0 } else { units(chunks.iter().sum(), true) };
        // By id: first a query of the keys-only by-id index (eventually consistent).
        let by_id = units(100, false) + by_provider;
        eprintln!(
            "| {name} | {:.1} KB | {} ({:.0} KB) | {by_provider} | {by_id} | {by_id} |",
            head as f64 / 1024.0,
            chunks.len(),
            chunks.iter().sum::<usize>() as f64 / 1024.0
        );
    }
    // A page: the index's projection of each head (the summary attributes and keys).
    let projected: Vec<usize> = items
        .iter()
        .filter(|i| get_s(i, "sk") == Some("HEAD"))
        .map(|i| {
            let summary: Item = i
                .iter()
                .filter(|(k, _)| {
                    call_ingest_store::calls::tables::SUMMARY.contains(&k.as_str())
                        || ["pk", "sk", "listed_ws", "listed_ms"].contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            item_size(&summary)
        })
        .collect();
    let page: usize = projected.iter().take(101).sum();
    eprintln!(
        "| list page of 100 (101 index entries of {:.0} B on average) | | | | | {} |",
        page as f64 / 101.0,
        units(page, false)
    );
}

fn reading(c: &mut Criterion) {
    let b = setup();
    print_read_units(&b);
    let mut group = c.benchmark_group("read");
    group.sample_size(20);
    for ((name, _), (call_id, id)) in SIZES.iter().zip(&b.calls) {
        let by_id = || get(&b.key, "/api/v1/public/call/x", Some(*id), &[("workspace_id", "1")]);
        group.bench_function(format!("get by id/{name}"), |bench| {
            bench.iter(|| {
                b.rt.block_on(async { assert_eq!(handle(&b.backend, Endpoint::GetCall, by_id()).await.status(), 200) })
            })
        });
        let by_provider =
            || get(&b.key, "/api/v1/public/call", None, &[("workspace_id", "1"), ("provider_call_id", call_id)]);
        group.bench_function(format!("get by provider call id/{name}"), |bench| {
            bench.iter(|| {
                b.rt.block_on(async {
                    assert_eq!(handle(&b.backend, Endpoint::GetCall, by_provider()).await.status(), 200)
                })
            })
        });
    }
    // A 3 MiB part from the middle of the 5.8 MB call's answer: a ranged GET of the frame's
    // pieces that hold it; against reading the call's whole frame, as a part did before.
    let (call_id, id) = b.calls.last().unwrap();
    let part = || {
        let mut r = get(&b.key, "/api/v1/public/call/x", Some(*id), &[("workspace_id", "1")]);
        r.headers_mut().insert("range", "bytes=4000000-7145727".parse().unwrap());
        r
    };
    group.bench_function("get by id, a 3 MiB range/5.8 MB", |bench| {
        bench.iter(|| {
            b.rt.block_on(async { assert_eq!(handle(&b.backend, Endpoint::GetCall, part()).await.status(), 206) })
        })
    });
    group.bench_function("whole frame read and decompressed/5.8 MB", |bench| {
        bench.iter(|| {
            b.rt.block_on(async {
                let store = b.backend.store();
                let at = store.call_at(1, call_id, None).await.unwrap().unwrap();
                assert!(store.content(&at).await.unwrap().is_some());
            })
        })
    });
    let page = || get(&b.key, "/api/v1/public/calls", None, &[("workspace_id", "1"), ("limit", "100")]);
    group.bench_function("list page of 100", |bench| {
        bench.iter(|| {
            b.rt.block_on(async { assert_eq!(handle(&b.backend, Endpoint::ListCalls, page()).await.status(), 200) })
        })
    });
    group.finish();
}

criterion_group!(benches, reading);
criterion_main!(benches);
