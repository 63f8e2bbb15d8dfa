//! OpenTelemetry traces (issue 31): OTLP/HTTP exports received (`POST /otel/v1/traces`),
//! kept in S3 before the answer, indexed (as commit-pending does), joined to their call in
//! either order, read back with the per-turn table (`GET /api/v1/public/call/{id}/trace`),
//! and erased with their call.

use call_ingest_core::Operation;
use call_ingest_http::{handle, Backend, Endpoint};
use call_ingest_store::directory::scopes::{Scope, Scopes};
use call_ingest_traces::{
    any_value, AnyValue, ExportTraceServiceRequest, KeyValue, Message, ResourceSpans, ScopeSpans, Span,
};
use lambda_http::http::{Method, Request};
use lambda_http::Body;
use serde_json::{json, Value};
use testkit::{two_workspaces, TwoWorkspaces};

use crate::requests::*;

/// The call's start (`create_call_body`'s `start_timestamp`), unix ms.
const T0: u64 = 1_763_700_000_000;
const TRACE: [u8; 16] = [0xab; 16];

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(v) }), ..Default::default() }
}

fn text(key: &str, v: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

fn float(key: &str, v: f64) -> KeyValue {
    kv(key, any_value::Value::DoubleValue(v))
}

fn int(key: &str, v: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(v))
}

fn span(id: u8, parent: Option<u8>, name: &str, from_ms: u64, to_ms: u64, attributes: Vec<KeyValue>) -> Span {
    Span {
        trace_id: TRACE.to_vec(),
        span_id: vec![id; 8],
        parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: name.into(),
        start_time_unix_nano: (T0 + from_ms) * 1_000_000,
        end_time_unix_nano: (T0 + to_ms) * 1_000_000,
        attributes,
        ..Default::default()
    }
}

/// What pipecat exports of a two-turn call whose `conversation_id` is `call_id`: a
/// conversation, its turns, and each turn's stt, llm, tool and tts spans (with the content
/// attributes pipecat sets: transcript, input, output, text).
fn pipecat(call_id: &str) -> ExportTraceServiceRequest {
    let spans = vec![
        span(1, None, "conversation", 0, 42_000, vec![text("conversation.id", call_id)]),
        span(
            2,
            Some(1),
            "turn",
            1_000,
            4_200,
            vec![
                int("turn.number", 1),
                float("turn.duration_seconds", 3.2),
                float("turn.user_bot_latency_seconds", 0.85),
                kv("turn.was_interrupted", any_value::Value::BoolValue(false)),
                text("conversation.id", call_id),
            ],
        ),
        span(
            3,
            Some(2),
            "stt",
            1_000,
            1_300,
            vec![text("gen_ai.operation.name", "stt"), float("metrics.ttfb", 0.12), text("transcript", "SECRET-WORDS")],
        ),
        span(
            4,
            Some(2),
            "llm",
            1_300,
            2_100,
            vec![
                text("gen_ai.operation.name", "chat"),
                float("metrics.ttfb", 0.35),
                int("gen_ai.usage.input_tokens", 120),
                int("gen_ai.usage.output_tokens", 30),
                text("input", "SECRET-PROMPT"),
                text("output", "SECRET-COMPLETION"),
            ],
        ),
        span(5, Some(4), "llm_tool_call", 1_500, 1_700, vec![text("tool.function_name", "lookup_order")]),
        span(
            6,
            Some(2),
            "tts",
            2_100,
            4_000,
            vec![text("gen_ai.operation.name", "tts"), float("metrics.ttfb", 0.2), text("text", "SECRET-SPOKEN")],
        ),
        span(
            7,
            Some(1),
            "turn",
            5_000,
            7_000,
            vec![
                int("turn.number", 2),
                float("turn.user_bot_latency_seconds", 1.1),
                kv("turn.was_interrupted", any_value::Value::BoolValue(true)),
            ],
        ),
        span(8, Some(7), "llm", 5_200, 5_900, vec![text("gen_ai.operation.name", "chat"), float("metrics.ttfb", 0.4)]),
    ];
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(call_ingest_traces::Resource {
                attributes: vec![text("service.name", "pipecat-bot")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    }
}

/// The per-turn table `pipecat` gives, aligned to the call's start.
fn expected_turns() -> Value {
    json!([
        {"turn": 1, "start_unix_ms": (T0 + 1_000) as f64, "offset_ms": 1000.0, "duration_ms": 3200.0,
         "user_to_agent_latency_ms": 850.0,
         "stt": {"ttfb_ms": 120.0, "duration_ms": 300.0}, "llm": {"ttfb_ms": 350.0, "duration_ms": 800.0},
         "tts": {"ttfb_ms": 200.0, "duration_ms": 1900.0}, "tools_ms": 200.0, "tool_calls": 1,
         "input_tokens": 120, "output_tokens": 30, "interrupted": false,
         "steps": [{"kind": "stt", "name": "stt", "offset_ms": 0.0, "duration_ms": 300.0},
                   {"kind": "llm", "name": "llm", "offset_ms": 300.0, "duration_ms": 800.0},
                   {"kind": "tool", "name": "lookup_order", "offset_ms": 500.0, "duration_ms": 200.0},
                   {"kind": "tts", "name": "tts", "offset_ms": 1100.0, "duration_ms": 1900.0}]},
        {"turn": 2, "start_unix_ms": (T0 + 5_000) as f64, "offset_ms": 5000.0, "duration_ms": 2000.0,
         "user_to_agent_latency_ms": 1100.0, "llm": {"ttfb_ms": 400.0, "duration_ms": 700.0},
         "tools_ms": 0.0, "tool_calls": 0, "interrupted": true,
         "steps": [{"kind": "llm", "name": "llm", "offset_ms": 200.0, "duration_ms": 700.0}]}
    ])
}

/// An export request to `path` as an exporter sends it.
fn export_request(
    path: &str,
    content_type: Option<&str>,
    auth: Option<&str>,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> Request<Body> {
    let mut builder = Request::builder().method(Method::POST).uri(path);
    if let Some(t) = content_type {
        builder = builder.header("content-type", t);
    }
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    builder.body(Body::from(body)).unwrap()
}

/// Status, headers and raw body of an export.
async fn export(backend: &Backend, request: Request<Body>) -> (u16, lambda_http::http::HeaderMap, Vec<u8>) {
    let response = handle(backend, Endpoint::Otel, request).await;
    (response.status().as_u16(), response.headers().clone(), response.body().to_vec())
}

async fn export_proto(f: &TwoWorkspaces, auth: &str, batch: &ExportTraceServiceRequest) -> (u16, Vec<u8>) {
    let request =
        export_request("/otel/v1/traces", Some("application/x-protobuf"), Some(auth), batch.encode_to_vec(), &[]);
    let (status, _, body) = export(&f.backend, request).await;
    (status, body)
}

/// The trace batches kept, indexed as commit-pending indexes them.
async fn index(f: &TwoWorkspaces) -> usize {
    let batches: Vec<String> = f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/in/")).collect();
    for key in &batches {
        f.backend.store().index_trace_batch(key).await.unwrap();
    }
    batches.len()
}

async fn post_call(f: &TwoWorkspaces, call_id: &str) -> u64 {
    let query = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let a = send(
        &f.backend,
        Operation::CreateCall,
        request(Operation::CreateCall, Some(&f.key1), &query, &create_call_body(call_id)),
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);
    a.body["id"].as_u64().unwrap()
}

async fn trace_of(f: &TwoWorkspaces, id: u64) -> Answer {
    let id = id.to_string();
    let r = read_request(
        Method::GET,
        "/api/v1/public/call/{id}/trace",
        &[("id", &id)],
        Some(&f.key1),
        &[("workspace_id", "1")],
    );
    send(&f.backend, Endpoint::CallTrace, r).await
}

fn all_scopes() -> Scopes {
    Scopes::of([Scope::Send, Scope::Read, Scope::Erase])
}

#[tokio::test]
async fn spans_sent_before_their_call_join_it_and_give_the_per_turn_table_without_content() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let (status, body) = export_proto(&f, &f.key1, &pipecat("call-traced-1")).await;
    assert_eq!((status, body.len()), (200, 0), "a full success is an empty ExportTraceServiceResponse");
    let kept = f.t.objects().await.into_iter().find(|k| k.starts_with("traces/in/")).expect("kept before the answer");
    let bytes = f.t.frames().get(&kept).await.unwrap().unwrap();
    assert_eq!(index(&f).await, 1);
    // The queue delivers the batch again (it comes back, as S3 may announce it twice):
    // nothing is added twice.
    f.t.s3.put_object().bucket(&f.t.bucket).key(&kept).body(bytes.into()).send().await.unwrap();
    assert_eq!(index(&f).await, 1);
    let items = f.t.scan(&f.t.calls).await;
    let trace = items.iter().find(|i| i["pk"].as_s().is_ok_and(|p| p.starts_with("TRACE#"))).unwrap();
    assert_eq!(trace["spans"].as_n().unwrap(), "8", "a batch delivered twice counts its spans once");
    let id = post_call(&f, "call-traced-1").await;
    let a = trace_of(&f, id).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["traces"], json!(["ab".repeat(16)]));
    assert_eq!(a.body["turns"], expected_turns());
    assert_eq!(a.body["spans"].as_array().unwrap().len(), 8);
    let text = a.body.to_string();
    assert!(!text.contains("SECRET"), "content attributes are dropped at ingest: {text}");
    assert!(text.contains("lookup_order"), "measures and names are kept");
    let stt = &a.body["spans"].as_array().unwrap().iter().find(|s| s["name"] == "stt").unwrap().clone();
    assert_eq!(stt["attributes"]["metrics.ttfb"], json!(0.12));
    assert_eq!(stt["parent_span_id"], json!("02".repeat(8)));
    assert!(f.t.objects().await.iter().all(|k| !k.starts_with("traces/in/")), "an indexed batch is deleted");
    f.t.delete().await;
}

#[tokio::test]
async fn a_call_posted_before_its_spans_shows_the_same_table_and_json_gives_the_same_trace_as_protobuf() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let id = post_call(&f, "call-traced-2").await;
    let empty = trace_of(&f, id).await;
    assert_eq!((empty.status, empty.body["turns"].clone(), empty.body["spans"].clone()), (200, json!([]), json!([])));
    // The OpenTelemetry SDK's JSON: OTLP's JSON mapping, written out here as an exporter
    // writes it (hex ids, 64-bit integers as strings, enums as integers), not by our code.
    let json_body = otlp_json(&pipecat("call-traced-2"));
    let request = export_request("/otel/v1/traces", Some("application/json"), Some(&f.key1), json_body, &[]);
    let (status, headers, body) = export(&f.backend, request).await;
    assert_eq!((status, body.as_slice()), (200, &b"{}"[..]));
    assert_eq!(headers.get("content-type").unwrap(), "application/json");
    index(&f).await;
    let from_json = trace_of(&f, id).await;
    assert_eq!(from_json.body["turns"], expected_turns());

    // The same spans as protobuf, for another call: the same stored trace, span for span.
    let g = two_workspaces(all_scopes(), &[], &[]).await;
    let gid = post_call(&g, "call-traced-2").await;
    export_proto(&g, &g.key1, &pipecat("call-traced-2")).await;
    index(&g).await;
    let from_proto = trace_of(&g, gid).await;
    assert_eq!(from_proto.body["spans"], from_json.body["spans"]);
    assert_eq!(from_proto.body["turns"], from_json.body["turns"]);
    f.t.delete().await;
    g.t.delete().await;
}

/// `export` in OTLP's JSON mapping, built by hand from the OTLP specification (not by the
/// crate the receiver reads it with).
fn otlp_json(export: &ExportTraceServiceRequest) -> Vec<u8> {
    fn value(v: &AnyValue) -> Value {
        match v.value.as_ref().unwrap() {
            any_value::Value::StringValue(s) => json!({"stringValue": s}),
            any_value::Value::IntValue(i) => json!({"intValue": i.to_string()}),
            any_value::Value::DoubleValue(d) => json!({"doubleValue": d}),
            any_value::Value::BoolValue(b) => json!({"boolValue": b}),
            other => panic!("not used here: {other:?}"),
        }
    }
    let attrs = |kvs: &[KeyValue]| -> Value {
        kvs.iter().map(|kv| json!({"key": kv.key, "value": value(kv.value.as_ref().unwrap())})).collect()
    };
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let resource_spans: Vec<Value> = export
        .resource_spans
        .iter()
        .map(|r| {
            json!({
                "resource": {"attributes": attrs(&r.resource.as_ref().unwrap().attributes)},
                "scopeSpans": r.scope_spans.iter().map(|s| json!({
                    "scope": {"name": "pipecat"},
                    "spans": s.spans.iter().map(|sp| {
                        let mut o = json!({
                            "traceId": hex(&sp.trace_id), "spanId": hex(&sp.span_id), "name": sp.name, "kind": 1,
                            "startTimeUnixNano": sp.start_time_unix_nano.to_string(),
                            "endTimeUnixNano": sp.end_time_unix_nano, "attributes": attrs(&sp.attributes),
                            "status": {}, "unknownField": {"ignored": true}
                        });
                        if !sp.parent_span_id.is_empty() {
                            o["parentSpanId"] = json!(hex(&sp.parent_span_id));
                        }
                        o
                    }).collect::<Vec<_>>()
                })).collect::<Vec<_>>()
            })
        })
        .collect();
    json!({"resourceSpans": resource_spans}).to_string().into_bytes()
}

#[tokio::test]
async fn the_receiver_answers_as_otlp_http_specifies() {
    let f = two_workspaces(all_scopes(), &[], &[("TRACE_RATE_LIMIT_PER_SECOND", "1000")]).await;
    let batch = pipecat("call-x").encode_to_vec();
    let post = |ct: Option<&'static str>, auth: Option<String>, body: Vec<u8>, path: &'static str| {
        export_request(path, ct, auth.as_deref(), body, &[])
    };
    // Another type: 415, a google.rpc.Status in JSON.
    let (status, _, body) =
        export(&f.backend, post(Some("text/plain"), Some(f.key1.clone()), batch.clone(), "/otel/v1/traces")).await;
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((status, s["code"].as_i64()), (415, Some(3)), "{s}");
    // Malformed protobuf: 400, nothing stored.
    let (status, headers, body) = export(
        &f.backend,
        post(Some("application/x-protobuf"), Some(f.key1.clone()), vec![0x0a, 0xff, 0xff, 0x01], "/otel/v1/traces"),
    )
    .await;
    assert_eq!((status, headers.get("content-type").unwrap().to_str().unwrap()), (400, "application/x-protobuf"));
    assert!(!body.is_empty());
    assert!(f.t.objects().await.is_empty(), "a refused batch stores nothing");
    // No credential, 401; a read-only key, 403; a session, 401 (exporters hold keys).
    let (status, _, _) =
        export(&f.backend, post(Some("application/x-protobuf"), None, batch.clone(), "/otel/v1/traces")).await;
    assert_eq!(status, 401);
    let reader = f.backend.directory().create_api_key(1, "reader", Scopes::of([Scope::Read])).await.unwrap().token;
    let (status, _, _) = export(
        &f.backend,
        post(Some("application/x-protobuf"), Some(format!("Bearer {reader}")), batch.clone(), "/otel/v1/traces"),
    )
    .await;
    assert_eq!(status, 403);
    let tracer = f.backend.directory().create_api_key(1, "tracer", Scopes::of([Scope::Traces])).await.unwrap().token;
    let (status, _, _) = export(
        &f.backend,
        post(Some("application/x-protobuf"), Some(format!("Bearer {tracer}")), vec![], "/otel/v1/traces"),
    )
    .await;
    assert_eq!(status, 200, "a key with the traces scope may export; an empty request is 200");
    // Logs and metrics: 200 and a partial success saying they are not kept.
    for path in ["/otel/v1/logs", "/otel/v1/metrics"] {
        let (status, _, body) =
            export(&f.backend, post(Some("application/json"), Some(f.key1.clone()), b"{}".to_vec(), path)).await;
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "{path}");
        assert!(answer["partialSuccess"]["errorMessage"].as_str().unwrap().contains("not kept"), "{answer}");
    }
    // Spans with bad ids are refused by policy: partialSuccess, the rest kept.
    let mut bad = pipecat("call-x");
    bad.resource_spans[0].scope_spans[0].spans[0].trace_id = vec![0; 16];
    let (status, body) = export_proto(&f, &f.key1, &bad).await;
    let answer = opentelemetry_response(&body);
    assert_eq!((status, answer.0), (200, 1), "{}", answer.1);
    assert!(answer.1.contains("16 bytes"));
    f.t.delete().await;
}

fn opentelemetry_response(body: &[u8]) -> (i64, String) {
    let r = call_ingest_traces::ExportTraceServiceResponse::decode(body).unwrap();
    r.partial_success.map(|p| (p.rejected_spans, p.error_message)).unwrap_or_default()
}

#[tokio::test]
async fn a_batch_past_the_decompressed_cap_is_413_and_the_budget_is_traces_own() {
    let f = two_workspaces(
        all_scopes(),
        &[],
        &[("MAX_DECOMPRESSED_BYTES", "1048576"), ("TRACE_RATE_LIMIT_PER_SECOND", "2")],
    )
    .await;
    // 4 MB of zeros gzip to about 4 KB: within the 6 MB event, past the 1 MiB cap.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &vec![0u8; 4 << 20]).unwrap();
    let body = gz.finish().unwrap();
    let bomb = export_request(
        "/otel/v1/traces",
        Some("application/x-protobuf"),
        Some(&f.key1),
        body,
        &[("content-encoding", "gzip")],
    );
    let (status, _, _) = export(&f.backend, bomb).await;
    assert_eq!(status, 413);
    assert!(f.t.objects().await.is_empty());
    // Over the trace budget: 429 with Retry-After; the workspace's sends are not charged.
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..8 {
        let request = export_request("/otel/v1/traces", Some("application/x-protobuf"), Some(&f.key1), vec![], &[]);
        let (status, headers, _) = export(&f.backend, request).await;
        statuses.push(status);
        if status == 429 {
            retry_after = headers.get("retry-after").map(|v| v.to_str().unwrap().to_owned());
        }
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(retry_after.is_some());
    let query = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let a = send(
        &f.backend,
        Operation::CreateCall,
        request(Operation::CreateCall, Some(&f.key1), &query, &create_call_body("c-budget")),
    )
    .await;
    assert_eq!(a.status, 201, "the trace budget spent, a call is still committed now");
    f.t.delete().await;
}

#[tokio::test]
async fn spans_naming_another_workspaces_call_join_nothing() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let id = post_call(&f, "call-of-one").await;
    // Workspace 2's key exports spans naming workspace 1's call.
    export_proto(&f, &f.key2, &pipecat("call-of-one")).await;
    index(&f).await;
    let a = trace_of(&f, id).await;
    assert_eq!((a.status, a.body["spans"].clone()), (200, json!([])));
    let open = f.backend.store().unjoined_traces(2).await.unwrap();
    assert_eq!(open.len(), 1, "kept in workspace 2, joined to nothing");
    assert_eq!(open[0].keys, ["call-of-one"]);
    f.t.delete().await;
}

#[tokio::test]
async fn an_erase_removes_the_calls_spans_and_a_batch_received_before_it_adds_nothing_later() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let id = post_call(&f, "call-erased").await;
    export_proto(&f, &f.key1, &pipecat("call-erased")).await;
    let first = f.t.objects().await.into_iter().find(|k| k.starts_with("traces/in/")).unwrap();
    let first_bytes = f.t.frames().get(&first).await.unwrap().unwrap();
    index(&f).await;
    assert_eq!(trace_of(&f, id).await.body["spans"].as_array().unwrap().len(), 8);
    // A second batch of the same trace, received now, indexed only after the erase.
    let mut late = pipecat("call-erased");
    for s in &mut late.resource_spans[0].scope_spans[0].spans {
        s.span_id[0] ^= 0x40;
    }
    export_proto(&f, &f.key1, &late).await;
    erase_call(&f, id).await;
    index(&f).await;
    // The first batch delivered again after the erase (its part was known to the trace):
    // the erase wins, and its part does not come back.
    f.t.s3.put_object().bucket(&f.t.bucket).key(&first).body(first_bytes.into()).send().await.unwrap();
    index(&f).await;
    let left: Vec<String> = f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/")).collect();
    assert_eq!(left, Vec::<String>::new(), "no span of the erased call is left");
    assert!(key_entries(&f).await.is_empty(), "no entry names the erased call");
    // The call sent again is a new call: the erased spans do not come back with it.
    let again = post_call(&f, "call-erased").await;
    assert_eq!(trace_of(&f, again).await.body["spans"], json!([]));
    // The agent uses the same trace id for the call sent again (it derives it from the call
    // id): spans received now join the new call.
    let mut after = pipecat("call-erased");
    for s in &mut after.resource_spans[0].scope_spans[0].spans {
        s.span_id[0] ^= 0x20;
    }
    export_proto(&f, &f.key1, &after).await;
    index(&f).await;
    assert_eq!(
        trace_of(&f, again).await.body["spans"].as_array().unwrap().len(),
        8,
        "the trace used again joins the new call"
    );
    erase_call(&f, again).await;
    index(&f).await;
    let keys = key_entries(&f).await;
    assert!(keys.is_empty(), "no entry names the erased call: {keys:?}");
    f.t.delete().await;
}

/// The keys' entries (`TKEY#…`) of the Calls table.
async fn key_entries(f: &TwoWorkspaces) -> Vec<String> {
    let items = f.t.scan(&f.backend.config.calls_table).await;
    items.iter().filter_map(|i| i.get("pk")?.as_s().ok().cloned()).filter(|k| k.starts_with("TKEY#")).collect()
}

#[tokio::test]
async fn a_trace_that_joined_no_call_in_30_days_is_removed_and_one_that_joined_is_kept() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let store = f.backend.store();
    let now = call_ingest_store::calls::now_ms();
    let long_ago = now - call_ingest_store::traces::UNJOINED_KEPT_MS - 24 * 3600 * 1000;
    post_call(&f, "call-kept").await;
    // Two traces first received 31 days ago: one names no call, the other a call that exists.
    let mut orphan = pipecat("no-such-call");
    for s in &mut orphan.resource_spans[0].scope_spans[0].spans {
        s.trace_id = vec![0xcd; 16];
    }
    for batch in [&orphan, &pipecat("call-kept")] {
        let key =
            store.put_trace_batch(1, long_ago, &call_ingest_traces::policy::keep(batch.clone()).request).await.unwrap();
        store.index_trace_batch(&key).await.unwrap();
    }
    // And one of today naming no call: not due.
    let mut recent = pipecat("no-such-call-either");
    for s in &mut recent.resource_spans[0].scope_spans[0].spans {
        s.trace_id = vec![0xef; 16];
    }
    export_proto(&f, &f.key1, &recent).await;
    index(&f).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    assert_eq!(store.expire_unjoined_traces(now, deadline).await.unwrap(), (1, 1));
    let parts: Vec<String> = f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/spans/")).collect();
    assert!(parts.iter().all(|k| !k.contains(&"cd".repeat(16))), "the orphan's spans are gone: {parts:?}");
    assert!(parts.iter().any(|k| k.contains(&"ab".repeat(16))), "the joined trace is kept");
    assert!(parts.iter().any(|k| k.contains(&"ef".repeat(16))), "a recent unjoined trace is kept");
    let open: Vec<String> = store.unjoined_traces(1).await.unwrap().into_iter().map(|t| t.trace).collect();
    assert_eq!(open, ["ef".repeat(16)]);
    assert_eq!(store.expire_unjoined_traces(now, deadline).await.unwrap(), (0, 0), "a day is done once");
    f.t.delete().await;
}

#[tokio::test]
async fn an_export_of_millions_of_empty_spans_is_refused_before_it_is_decoded() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    // 3 million empty spans in 6 MB of protobuf would decode to about a gigabyte.
    let scope: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], 3_000_000).flatten().collect();
    let mut inner = vec![0x12];
    prost_varint(scope.len(), &mut inner);
    inner.extend(&scope);
    let mut body = vec![0x0a];
    prost_varint(inner.len(), &mut body);
    body.extend(&inner);
    let request = export_request("/otel/v1/traces", Some("application/x-protobuf"), Some(&f.key1), body, &[]);
    let (status, _, _) = export(&f.backend, request).await;
    assert_eq!(status, 413);
    let json = format!("{{\"resourceSpans\":[{{\"scopeSpans\":[{{\"spans\":[{}{{}}]}}]}}]}}", "{},".repeat(250_000));
    let request = export_request("/otel/v1/traces", Some("application/json"), Some(&f.key1), json.into_bytes(), &[]);
    assert_eq!(export(&f.backend, request).await.0, 413);
    // 300 traces in one export: more than one export may index.
    let mut many = pipecat("c");
    let spans = &mut many.resource_spans[0].scope_spans[0].spans;
    let one = spans[0].clone();
    spans.clear();
    for i in 0..300u16 {
        let mut s = one.clone();
        s.trace_id[..2].copy_from_slice(&i.to_be_bytes());
        spans.push(s);
    }
    assert_eq!(export_proto(&f, &f.key1, &many).await.0, 413);
    assert!(f.t.objects().await.is_empty(), "nothing stored");
    f.t.delete().await;
}

fn prost_varint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

async fn erase_call(f: &TwoWorkspaces, id: u64) {
    let id = id.to_string();
    let erase = read_request(
        Method::DELETE,
        "/api/v1/public/call/{id}",
        &[("id", &id)],
        Some(&f.key1),
        &[("workspace_id", "1")],
    );
    let a = send(&f.backend, Endpoint::EraseCall, erase).await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn spans_received_before_their_calls_erase_and_indexed_after_it_are_dropped() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    // Received before the call existed, and while it existed; neither indexed until after
    // its erase (the queue was slow): the erase found no trace to remove.
    export_proto(&f, &f.key1, &pipecat("call-slow")).await;
    let id = post_call(&f, "call-slow").await;
    let mut second = pipecat("call-slow");
    for s in &mut second.resource_spans[0].scope_spans[0].spans {
        s.span_id[0] ^= 0x40;
    }
    export_proto(&f, &f.key1, &second).await;
    erase_call(&f, id).await;
    // The call is sent again, and the agent uses the same trace id (derived from the call
    // id): spans received now are the new call's.
    let again = post_call(&f, "call-slow").await;
    let mut after = pipecat("call-slow");
    for s in &mut after.resource_spans[0].scope_spans[0].spans {
        s.span_id[0] ^= 0x20;
    }
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    export_proto(&f, &f.key1, &after).await;
    assert_eq!(index(&f).await, 3);
    let spans = trace_of(&f, again).await.body["spans"].clone();
    let ids: Vec<&str> = spans.as_array().unwrap().iter().map(|s| s["span_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 8, "only the spans received after the erase: {ids:?}");
    assert!(ids.iter().all(|id| id.starts_with("2")), "{ids:?}");
    let parts: Vec<String> = f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/spans/")).collect();
    let mut kept = Vec::new();
    for key in &parts {
        if !f.t.frames().get(key).await.unwrap().unwrap_or_default().is_empty() {
            kept.push(key.clone());
        }
    }
    assert_eq!(kept.len(), 1, "the parts received before the erase are gone: {kept:?}");
    // Not sent again: the erased call's spans, indexed late, are dropped all the same.
    let mut other = pipecat("call-gone");
    for s in &mut other.resource_spans[0].scope_spans[0].spans {
        s.trace_id = vec![0xcd; 16];
    }
    export_proto(&f, &f.key1, &other).await;
    let gone = post_call(&f, "call-gone").await;
    erase_call(&f, gone).await;
    index(&f).await;
    let left = f.backend.store().unjoined_traces(1).await.unwrap();
    assert!(left.iter().all(|t| t.spans == 0 || !t.keys.contains(&"call-gone".to_owned())), "{left:?}");
    let mut kept = Vec::new();
    for key in f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/spans/1/")) {
        if !f.t.frames().get(&key).await.unwrap().unwrap_or_default().is_empty() {
            kept.push(key);
        }
    }
    assert_eq!(kept.len(), 1, "nothing of call-gone's spans is left: {kept:?}");
    f.t.delete().await;
}

#[tokio::test]
async fn spans_naming_no_call_are_kept_and_join_when_a_later_batch_names_it() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    // An exporter that sends each span on its own (SimpleSpanProcessor): the service spans
    // name no call; only the conversation's does, in a later batch.
    let whole = pipecat("call-later");
    let spans = whole.resource_spans[0].scope_spans[0].spans.clone();
    let (named, bare): (Vec<_>, Vec<_>) =
        spans.into_iter().partition(|s| s.attributes.iter().any(|a| a.key == "conversation.id"));
    for batch in [bare, named] {
        let mut export = whole.clone();
        export.resource_spans[0].scope_spans[0].spans = batch;
        assert_eq!(export_proto(&f, &f.key1, &export).await.0, 200);
        index(&f).await;
    }
    let id = post_call(&f, "call-later").await;
    assert_eq!(trace_of(&f, id).await.body["spans"].as_array().unwrap().len(), 8, "every span, named or not");
    f.t.delete().await;
}

#[tokio::test]
async fn a_part_from_before_an_erase_indexed_after_its_trace_joined_the_call_sent_again_is_dropped() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let id = post_call(&f, "call-late").await;
    // Received while the call existed; its indexing fails until much later.
    export_proto(&f, &f.key1, &pipecat("call-late")).await;
    let before: Vec<String> = f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/in/")).collect();
    erase_call(&f, id).await;
    let again = post_call(&f, "call-late").await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let mut after = pipecat("call-late");
    for s in &mut after.resource_spans[0].scope_spans[0].spans {
        s.span_id[0] ^= 0x20;
    }
    export_proto(&f, &f.key1, &after).await;
    // The batch received after the erase is indexed first: the trace joins the new call.
    let store = f.backend.store();
    for key in f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/in/") && !before.contains(k)) {
        store.index_trace_batch(&key).await.unwrap();
    }
    assert_eq!(trace_of(&f, again).await.body["spans"].as_array().unwrap().len(), 8);
    // Then the one from before the erase: not the new call's, and not kept.
    for key in &before {
        store.index_trace_batch(key).await.unwrap();
    }
    let spans = trace_of(&f, again).await.body["spans"].clone();
    let ids: Vec<&str> = spans.as_array().unwrap().iter().map(|s| s["span_id"].as_str().unwrap()).collect();
    assert!(ids.len() == 8 && ids.iter().all(|id| id.starts_with('2')), "{ids:?}");
    let mut kept = Vec::new();
    for key in f.t.objects().await.into_iter().filter(|k| k.starts_with("traces/spans/")) {
        if !f.t.frames().get(&key).await.unwrap().unwrap_or_default().is_empty() {
            kept.push(key);
        }
    }
    assert_eq!(kept.len(), 1, "only the part received after the erase is stored: {kept:?}");
    f.t.delete().await;
}

#[tokio::test]
async fn a_trace_id_used_again_after_its_erase_is_kept_30_days_from_its_new_spans() {
    let f = two_workspaces(all_scopes(), &[], &[]).await;
    let store = f.backend.store();
    let now = call_ingest_store::calls::now_ms();
    let long_ago = now - call_ingest_store::traces::UNJOINED_KEPT_MS - 24 * 3600 * 1000;
    // First used 31 days ago by a call that was erased since.
    let id = post_call(&f, "call-reused").await;
    let key = store
        .put_trace_batch(1, long_ago, &call_ingest_traces::policy::keep(pipecat("call-reused")).request)
        .await
        .unwrap();
    store.index_trace_batch(&key).await.unwrap();
    erase_call(&f, id).await;
    // The same trace id today, naming a call that does not exist (yet).
    let mut today = pipecat("call-not-yet");
    for s in &mut today.resource_spans[0].scope_spans[0].spans {
        s.span_id[0] ^= 0x20;
    }
    export_proto(&f, &f.key1, &today).await;
    index(&f).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Retention runs now, after today's spans came: its old day's entry names the trace.
    store.expire_unjoined_traces(call_ingest_store::calls::now_ms() + 1, deadline).await.unwrap();
    let open: Vec<String> = store.unjoined_traces(1).await.unwrap().into_iter().map(|t| t.trace).collect();
    assert_eq!(open, ["ab".repeat(16)], "today's spans are not due for 30 days");
    f.t.delete().await;
}
