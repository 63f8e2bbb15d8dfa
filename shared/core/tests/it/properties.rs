//! Properties of the parse → validate → normalise pipeline, over generated input:
//! valid calls always normalise into consistent documents, and no input of any shape
//! makes `ingest` panic or answer with a malformed list of violations.

use crate::json_checks::no_duplicate_keys;

use call_ingest_core::api::{Code, Violation};
use call_ingest_core::call::{ingest, CallDocument, Rejection};
use call_ingest_core::Operation;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};

fn config(cases: u32) -> Config {
    // No regression files: this suite writes nothing next to its sources.
    Config { cases, failure_persistence: None, ..Config::default() }
}

// ---- valid operation B calls, generated ---------------------------------------------------

const VOCAB: [&str; 16] = [
    "yes", "no", "okay", "thanks", "order", "refund", "Monday", "please", "café", "naïve", "check", "my", "account",
    "shipped", "3", "help?",
];

/// How a user / agent segment gives its timing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Timing {
    Words,
    StartEnd,
    StartDuration,
    WordsAndTimes,
}

/// One user / agent segment, and what may follow it.
#[derive(Debug, Clone)]
struct SegSpec {
    /// (vocabulary index, duration, gap after) per word.
    words: Vec<(usize, u32, u32)>,
    /// 0: no text field, 1: empty text, 2: white space, else the words joined.
    text_mode: u8,
    timing: Timing,
    /// Times sent as decimals (x.5), which are stored rounded up.
    decimal: bool,
    gap_before: u32,
    /// A tool call and its result after this segment: (delay, duration).
    tool: Option<(u32, u32)>,
    node: bool,
    /// Unknown fields on the segment and its words.
    extra: bool,
}

/// How a Unix time is sent.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Seconds,
    Millis,
    DecimalSeconds,
    DecimalMillis,
}

#[derive(Debug, Clone)]
struct CallSpec {
    agent_first: bool,
    segments: Vec<SegSpec>,
    start_ms: u64,
    start_unit: Unit,
    end_unit: Unit,
    length_ms: u64,
    duration_sent: Option<u32>,
    transcript_sent: Option<String>,
    sentiment: Option<&'static str>,
}

fn timing() -> impl Strategy<Value = Timing> {
    prop_oneof![Just(Timing::Words), Just(Timing::StartEnd), Just(Timing::StartDuration), Just(Timing::WordsAndTimes)]
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![Just(Unit::Seconds), Just(Unit::Millis), Just(Unit::DecimalSeconds), Just(Unit::DecimalMillis)]
}

fn seg_spec() -> impl Strategy<Value = SegSpec> {
    (
        prop::collection::vec((0..VOCAB.len(), 0u32..600, 0u32..120), 1..8),
        0u8..8,
        timing(),
        any::<bool>(),
        0u32..2000,
        prop::option::weighted(0.15, (0u32..500, 0u32..3000)),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(words, text_mode, timing, decimal, gap_before, tool, node, extra)| SegSpec {
            words,
            text_mode,
            timing,
            decimal,
            gap_before,
            tool,
            node,
            extra,
        })
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (
        any::<bool>(),
        prop::collection::vec(seg_spec(), 1..40),
        // 2001-09-09 .. 2033-05-18, in milliseconds
        1_000_000_000_000u64..2_000_000_000_000,
        unit(),
        unit(),
        prop_oneof![Just(0u64), 0u64..7_200_000],
        prop::option::of(0u32..10_000_000),
        prop::option::weighted(0.2, "[a-zA-Z :\n]{0,40}"),
        prop::option::of(select(&["positive", "Neutral", "NEGATIVE", "unknown"][..])),
    )
        .prop_map(
            |(
                agent_first,
                segments,
                start_ms,
                start_unit,
                end_unit,
                length_ms,
                duration_sent,
                transcript_sent,
                sentiment,
            )| {
                CallSpec {
                    agent_first,
                    segments,
                    start_ms,
                    start_unit,
                    end_unit,
                    length_ms,
                    duration_sent,
                    transcript_sent,
                    sentiment,
                }
            },
        )
}

/// `ms` as sent in `unit`, and the milliseconds it must be stored as. Values that cannot
/// be exact in the unit are rounded up, so an end stays at or after its start.
fn unix_time(ms: u64, unit: Unit) -> (Value, u64) {
    match unit {
        Unit::Seconds => {
            let s = ms.div_ceil(1000);
            (json!(s), s * 1000)
        }
        Unit::Millis => (json!(ms), ms),
        Unit::DecimalSeconds => (json!(ms as f64 / 1000.0), ms),
        Unit::DecimalMillis => (json!(ms as f64 + 0.25), ms + 1),
    }
}

/// A millisecond value as sent: an integer, or the decimal just below the next integer.
fn millis(v: u64, decimal: bool) -> Value {
    if decimal {
        json!(v as f64 + 0.5)
    } else {
        json!(v)
    }
}

/// What a generated body must normalise to.
struct Expected {
    start_ms: u64,
    end_ms: u64,
    duration_ms: u64,
    transcript: String,
    roles: Vec<String>,
}

fn build(spec: &CallSpec) -> (Value, Expected) {
    let mut segments = Vec::new();
    let mut lines = Vec::new();
    let mut t: u64 = 0;
    let mut agent = spec.agent_first;
    for (i, s) in spec.segments.iter().enumerate() {
        let role = if agent { "agent" } else { "user" };
        agent = !agent;
        t += u64::from(s.gap_before);
        let mut words = Vec::new();
        let mut said = Vec::new();
        let start = t;
        let mut end = t;
        for (j, &(w, dur, gap)) in s.words.iter().enumerate() {
            let (ws, we) = (t, t + u64::from(dur));
            let mut word = json!({"word": VOCAB[w], "start_ms": millis(ws, s.decimal), "end_ms": millis(we, s.decimal),
                                  "confidence": 0.9});
            if s.extra {
                word["punctuated_word"] = json!(format!("{}#{j}", VOCAB[w]));
            }
            words.push(word);
            said.push(VOCAB[w]);
            end = we;
            t = we + u64::from(gap);
        }
        let mut segment = Map::new();
        segment.insert("role".into(), json!(role));
        let text = said.join(" ");
        match s.text_mode {
            0 => {}
            1 => {
                segment.insert("text".into(), json!(""));
            }
            2 => {
                segment.insert("text".into(), json!(" \t "));
            }
            _ => {
                segment.insert("text".into(), json!(text));
                lines.push(format!("{}: {text}", if role == "agent" { "Agent" } else { "User" }));
            }
        }
        if matches!(s.timing, Timing::Words | Timing::WordsAndTimes) {
            segment.insert("words".into(), Value::Array(words));
        }
        match s.timing {
            Timing::Words => {}
            Timing::StartEnd | Timing::WordsAndTimes => {
                segment.insert("start_ms".into(), millis(start, s.decimal));
                segment.insert("end_ms".into(), millis(end, s.decimal));
            }
            Timing::StartDuration => {
                segment.insert("start_ms".into(), millis(start, s.decimal));
                segment.insert("duration_ms".into(), millis(end - start, s.decimal));
            }
        }
        if s.extra {
            segment.insert("speaker_id".into(), json!(i));
        }
        segments.push(Value::Object(segment));
        if let Some((delay, dur)) = s.tool {
            let (ts, te) = (t + u64::from(delay), t + u64::from(delay) + u64::from(dur));
            segments.push(json!({"role": "agent_function", "text": "", "start_ms": ts,
                "tool": {"name": "lookup", "request_id": format!("req_{i}"), "params": {"i": i}, "start_ms": ts}}));
            segments.push(json!({"role": "agent_result", "text": "", "start_ms": te,
                "tool": {"name": "lookup", "request_id": format!("req_{i}"), "result": {"ok": true},
                         "is_error": false, "start_ms": ts, "end_ms": te}}));
            t = te;
        }
        if s.node {
            segments.push(json!({"role": "node_transition", "text": "", "start_ms": t,
                "node": {"from": format!("n{i}"), "to": format!("n{}", i + 1), "reason": "condition met"}}));
        }
    }
    let (start_value, start_ms) = unix_time(spec.start_ms, spec.start_unit);
    let (end_value, end_ms) = unix_time(start_ms + spec.length_ms, spec.end_unit);
    let roles = segments.iter().map(|s| s["role"].as_str().unwrap_or_default().to_owned()).collect();
    let mut body = json!({
        "call_id": format!("call_prop_{}", spec.start_ms),
        "call_type": "phone_call",
        "transcript_with_tool_calls": segments,
        "start_timestamp": start_value,
        "end_timestamp": end_value,
        "recording_url": "pipecat://no-recording",
    });
    if let Some(d) = spec.duration_sent {
        body["duration_ms"] = json!(d);
    }
    if let Some(t) = &spec.transcript_sent {
        body["transcript"] = json!(t);
    }
    if let Some(s) = spec.sentiment {
        body["user_sentiment"] = json!(s);
    }
    let expected = Expected {
        start_ms,
        end_ms,
        duration_ms: spec.duration_sent.map_or(end_ms - start_ms, u64::from),
        transcript: spec.transcript_sent.clone().unwrap_or_else(|| lines.join("\n")),
        roles,
    };
    (body, expected)
}

/// Checks the times of every stored segment, word and tool: whole non-negative
/// milliseconds, and no end before its start.
fn check_stored_times(call: &Value) -> Result<(), String> {
    let Some(segments) = call["transcript_with_tool_calls"].as_array() else {
        return Ok(());
    };
    let pair = |v: &Value, at: String| -> Result<(), String> {
        for key in ["start_ms", "end_ms", "duration_ms"] {
            if let Some(x) = v.get(key) {
                if !x.is_u64() {
                    return Err(format!("{at}/{key} is {x}, not whole non-negative milliseconds"));
                }
            }
        }
        if let (Some(s), Some(e)) = (v["start_ms"].as_u64(), v["end_ms"].as_u64()) {
            if e < s {
                return Err(format!("{at}: end_ms {e} < start_ms {s}"));
            }
        }
        Ok(())
    };
    for (i, s) in segments.iter().enumerate() {
        pair(s, format!("/transcript_with_tool_calls/{i}"))?;
        if let Some(words) = s["words"].as_array() {
            for (j, w) in words.iter().enumerate() {
                pair(w, format!("/transcript_with_tool_calls/{i}/words/{j}"))?;
            }
        }
        if s["tool"].is_object() {
            pair(&s["tool"], format!("/transcript_with_tool_calls/{i}/tool"))?;
        }
    }
    Ok(())
}

/// Each line of a derived transcript names its speaker.
fn check_transcript_lines(call: &Value) -> Result<(), String> {
    let segments = call["transcript_with_tool_calls"].as_array().cloned().unwrap_or_default();
    let expected: Vec<String> = segments
        .iter()
        .filter_map(|s| {
            let speaker = match s["role"].as_str()? {
                "agent" => "Agent",
                "user" => "User",
                _ => return None,
            };
            let text = s["text"].as_str().filter(|t| !t.trim().is_empty())?;
            Some(format!("{speaker}: {text}"))
        })
        .collect();
    let transcript = call["transcript"].as_str().ok_or("no transcript stored")?;
    if transcript != expected.join("\n") {
        return Err(format!("transcript {transcript:?}, expected the lines {expected:?}"));
    }
    Ok(())
}

fn accept(op: Operation, body: &[u8]) -> Result<Value, TestCaseError> {
    match ingest(op, body) {
        Ok(doc) => {
            let json = doc.to_json();
            no_duplicate_keys(&json).map_err(|e| TestCaseError::fail(format!("stored JSON has {e}")))?;
            let value = serde_json::to_value(&doc).map_err(|e| TestCaseError::fail(e.to_string()))?;
            Ok(value["call"].clone())
        }
        Err(e) => Err(TestCaseError::fail(format!("valid body refused: {e:?}"))),
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn generated_valid_calls_normalise_consistently(spec in call_spec()) {
        let (body, expected) = build(&spec);
        let call = accept(Operation::CreateCall, &serde_json::to_vec(&body).unwrap())?;
        prop_assert_eq!(call["start_timestamp"].as_u64(), Some(expected.start_ms));
        prop_assert_eq!(call["end_timestamp"].as_u64(), Some(expected.end_ms));
        prop_assert_eq!(call["duration_ms"].as_u64(), Some(expected.duration_ms));
        prop_assert_eq!(call["transcript"].as_str(), Some(expected.transcript.as_str()));
        if spec.transcript_sent.is_none() {
            check_transcript_lines(&call).map_err(TestCaseError::fail)?;
            for line in expected.transcript.lines() {
                prop_assert!(line.starts_with("Agent: ") || line.starts_with("User: "), "{:?}", line);
            }
        }
        let roles: Vec<&str> = call["transcript_with_tool_calls"]
            .as_array()
            .map(|s| s.iter().map(|s| s["role"].as_str().unwrap_or_default()).collect())
            .unwrap_or_default();
        prop_assert_eq!(roles, expected.roles.iter().map(String::as_str).collect::<Vec<_>>());
        check_stored_times(&call).map_err(TestCaseError::fail)?;
        // Every user / agent segment ends up with both times.
        for s in call["transcript_with_tool_calls"].as_array().unwrap() {
            if matches!(s["role"].as_str(), Some("user" | "agent")) {
                prop_assert!(s["start_ms"].is_u64() && s["end_ms"].is_u64(), "{}", s);
            }
        }
        if let Some(s) = spec.sentiment {
            let lower = s.to_ascii_lowercase();
            prop_assert_eq!(call["user_sentiment"].as_str(), Some(lower.as_str()));
        }
    }

    #[test]
    fn callgen_calls_with_valid_perturbations_normalise_consistently(
        seed in any::<u64>(),
        minutes in 0.1f64..3.0,
        drop_times in prop::collection::vec(any::<bool>(), 0..64),
        in_seconds in any::<bool>(),
        drop_duration_and_transcript in any::<bool>(),
    ) {
        let mut body: Value = serde_json::from_slice(&callgen::create_call_minutes(minutes, seed)).unwrap();
        // Message segments keep their words: without start_ms / end_ms they are still timed.
        if let Some(segments) = body["transcript_with_tool_calls"].as_array_mut() {
            for (s, drop) in segments.iter_mut().zip(drop_times.iter().copied()) {
                if drop && s.get("words").is_some_and(|w| w.as_array().is_some_and(|w| !w.is_empty())) {
                    let map = s.as_object_mut().unwrap();
                    map.remove("start_ms");
                    map.remove("end_ms");
                }
            }
        }
        let start = body["start_timestamp"].as_u64().unwrap();
        let end = body["end_timestamp"].as_u64().unwrap();
        let (start_ms, end_ms) = if in_seconds {
            body["start_timestamp"] = json!(start / 1000);
            body["end_timestamp"] = json!(end.div_ceil(1000));
            (start / 1000 * 1000, end.div_ceil(1000) * 1000)
        } else {
            (start, end)
        };
        if drop_duration_and_transcript {
            body.as_object_mut().unwrap().remove("duration_ms");
            body.as_object_mut().unwrap().remove("transcript");
        }
        let call = accept(Operation::CreateCall, &serde_json::to_vec(&body).unwrap())?;
        prop_assert_eq!(call["start_timestamp"].as_u64(), Some(start_ms));
        prop_assert_eq!(call["end_timestamp"].as_u64(), Some(end_ms));
        prop_assert_eq!(call["duration_ms"].as_u64(), Some(end_ms - start_ms));
        check_transcript_lines(&call).map_err(TestCaseError::fail)?;
        check_stored_times(&call).map_err(TestCaseError::fail)?;
        prop_assert_eq!(
            call["transcript_with_tool_calls"].as_array().map(Vec::len),
            body["transcript_with_tool_calls"].as_array().map(Vec::len)
        );
    }

    #[test]
    fn callgen_send_call_data_normalises_consistently(seed in any::<u64>(), minutes in 0.1f64..3.0) {
        let opts = callgen::Options { size: callgen::Size::Minutes(minutes), seed, call_id: None };
        let body: Value = serde_json::from_slice(&callgen::send_call_data(&opts)).unwrap();
        let call = accept(Operation::SendCallData, &serde_json::to_vec(&body).unwrap())?;
        let items = body["transcript"].as_array().unwrap();
        let segments = call["transcript_with_tool_calls"].as_array().unwrap();
        prop_assert_eq!(items.len(), segments.len());
        for (item, segment) in items.iter().zip(segments) {
            prop_assert_eq!(&item["role"], &segment["role"]);
            prop_assert_eq!(&item["content"], &segment["text"]);
            prop_assert_eq!(&item["timestamp"], &segment["timestamp"]);
            prop_assert!(segment["timestamp_ms"].is_u64(), "{}", segment);
        }
        check_transcript_lines(&call).map_err(TestCaseError::fail)?;
        prop_assert_eq!(call["call_id"].as_str(), body["callId"].as_str());
        // Within a millisecond of what was sent (exactness: see normalisation.rs).
        let sent = body["metadata"]["durationSeconds"].as_f64().unwrap() * 1000.0;
        let stored = call["duration_ms"].as_f64().unwrap();
        prop_assert!((stored - sent).abs() <= 1.0, "duration_ms {} for durationSeconds*1000 {}", stored, sent);
    }
}

// ---- any input: never a panic, always a well-formed answer --------------------------------

const CREATE_CALL_NAMES: [&str; 52] = [
    "call_id",
    "call_type",
    "transcript_with_tool_calls",
    "start_timestamp",
    "end_timestamp",
    "recording_url",
    "agent_version",
    "transcript",
    "duration_ms",
    "call_status",
    "disconnection_reason",
    "caller_phone_number",
    "call_successful",
    "user_sentiment",
    "in_voicemail",
    "collected_dynamic_variables",
    "call_cost",
    "call_analysis",
    "metadata",
    "general_meta_data_raw",
    "recording_multi_channel_url",
    "role",
    "text",
    "words",
    "start_ms",
    "end_ms",
    "node",
    "tool",
    "word",
    "confidence",
    "from",
    "to",
    "reason",
    "name",
    "request_id",
    "params",
    "result",
    "is_error",
    "error",
    "e2e_latency",
    "interrupted",
    "llm_node_ttft",
    "tts_node_ttfb",
    "transcript_confidence",
    "stt_node_ttfb",
    "ai_models",
    "usage_token",
    "asr_model",
    "llm_model",
    "tts_model",
    "stt_duration_seconds",
    "llm_token",
];

const SEND_CALL_DATA_NAMES: [&str; 13] = [
    "agentId",
    "callId",
    "transcript",
    "startedAt",
    "endedAt",
    "metadata",
    "role",
    "content",
    "timestamp",
    "durationSeconds",
    "callDirection",
    "callerPhone",
    "outcome",
];

/// The field names a violation of `op` may point through.
fn known_names(op: Operation) -> Vec<&'static str> {
    match op {
        Operation::CreateCall => {
            let mut names = CREATE_CALL_NAMES.to_vec();
            names.push("tts_characters_count");
            names
        }
        Operation::SendCallData => SEND_CALL_DATA_NAMES.to_vec(),
        Operation::ProviderWebhook(_) => unreachable!("the operations' properties only"),
    }
}

fn key() -> impl Strategy<Value = String> {
    let mut names: Vec<&'static str> = CREATE_CALL_NAMES.to_vec();
    names.extend(SEND_CALL_DATA_NAMES);
    names.push("tts_characters_count");
    prop_oneof![
        8 => select(names).prop_map(str::to_owned),
        1 => "[a-z_]{0,10}",
        1 => "\\PC{0,6}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e16f64..1e16).prop_map(Value::from),
        any::<f64>().prop_map(|f| if f.is_finite() { json!(f) } else { Value::Null }),
        select(vec![
            json!(0),
            json!(-1),
            json!(1),
            json!(0.5),
            json!(99_999_999_999_u64),
            json!(100_000_000_000_u64),
            json!(1_763_700_000),
            json!(1_763_700_000_000_u64),
            json!(99_999_999_999_999_u64),
            json!(100_000_000_000_000_u64),
            json!(9_007_199_254_740_991_u64),
            json!(9_007_199_254_740_992_u64),
            json!(1.7e15),
            json!(1200.2),
            json!(-0.5),
            json!(u64::MAX),
            json!(i64::MIN),
        ]),
        select(vec![
            "agent",
            "user",
            "agent_function",
            "agent_result",
            "node_transition",
            "bot",
            "",
            " ",
            "Positive",
            "NEUTRAL",
            "ecstatic",
            "2026-11-21T10:00:00Z",
            "2026-11-21T10:00:00+01:00",
            "yesterday",
            "é",
            "pipecat://no-recording",
            "call_ended",
        ])
        .prop_map(|s| json!(s)),
        "\\PC{0,30}".prop_map(Value::String),
        (0usize..260).prop_map(|n| Value::String("é".repeat(n))),
    ]
}

/// Any JSON value, nested at most `depth` levels, with the real field names as keys.
fn json_value(depth: u32) -> impl Strategy<Value = Value> {
    leaf().prop_recursive(depth, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Any JSON document of depth at most 5, mostly objects.
fn json_document() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::btree_map(key(), json_value(4), 0..12).prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => json_value(5),
    ]
}

/// A segment-shaped object whose members have random types and values.
fn segment_like() -> impl Strategy<Value = Value> {
    let word = prop::collection::btree_map(select(vec!["word", "start_ms", "end_ms", "confidence", "x"]), leaf(), 0..5)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    (
        prop::collection::btree_map(
            select(vec![
                "role",
                "text",
                "start_ms",
                "end_ms",
                "duration_ms",
                "node",
                "tool",
                "metadata",
                "speaker",
                "words",
            ]),
            json_value(2),
            0..7,
        ),
        prop::option::weighted(0.6, prop::collection::vec(prop_oneof![4 => word, 1 => leaf()], 0..5)),
        prop::option::of(select(vec!["user", "agent", "agent_function", "agent_result", "node_transition"])),
    )
        .prop_map(|(members, words, role)| {
            let mut m: Map<String, Value> = members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            if let Some(words) = words {
                m.insert("words".into(), Value::Array(words));
            }
            if let Some(role) = role {
                m.insert("role".into(), json!(role));
            }
            Value::Object(m)
        })
}

/// The valid base body of `op`, with some members replaced by random values.
fn near_valid(op: Operation) -> impl Strategy<Value = Value> {
    let base = match op {
        Operation::CreateCall => serde_json::from_slice::<Value>(&callgen::create_call_minutes(0.2, 9)).unwrap(),
        Operation::SendCallData => serde_json::from_slice::<Value>(&callgen::send_call_data(&callgen::Options {
            size: callgen::Size::Minutes(0.2),
            seed: 9,
            call_id: None,
        }))
        .unwrap(),
        Operation::ProviderWebhook(_) => unreachable!("the operations' properties only"),
    };
    (
        prop::collection::vec((key(), prop::option::weighted(0.8, json_value(3))), 0..5),
        prop::option::weighted(0.5, prop::collection::vec(segment_like(), 0..6)),
    )
        .prop_map(move |(edits, segments)| {
            let mut body = base.clone();
            let map = body.as_object_mut().unwrap();
            for (k, v) in edits {
                match v {
                    Some(v) => map.insert(k, v),
                    None => map.remove(&k),
                };
            }
            if let Some(segments) = segments {
                let list = if op == Operation::CreateCall { "transcript_with_tool_calls" } else { "transcript" };
                map.insert(list.into(), Value::Array(segments));
            }
            body
        })
}

/// The parent of a JSON pointer.
fn parent(pointer: &str) -> &str {
    pointer.rsplit_once('/').map_or("", |(p, _)| p)
}

/// `ingest` answered; check that the answer is well formed. With `body`, the violations'
/// pointers must also lead into it: the offending value exists (or, for a missing
/// field, its parent does), through names the operation's schema knows.
fn check_answer(
    op: Operation,
    body: Option<&Value>,
    result: Result<CallDocument, Rejection>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(doc) => {
            let json = doc.to_json();
            no_duplicate_keys(&json).map_err(|e| TestCaseError::fail(format!("stored JSON has {e}")))?;
            let value: Value = serde_json::from_slice(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&value["operation"], &json!(op.as_str()));
            check_stored_times(&value["call"]).map_err(TestCaseError::fail)?;
            Ok(())
        }
        Err(Rejection::Unreadable(_)) => Ok(()),
        Err(Rejection::OverLimit(v)) => check_violation(op, body, &v),
        Err(Rejection::Invalid(list)) => {
            prop_assert!(!list.is_empty(), "422 without a violation");
            prop_assert!(list.windows(2).all(|w| w[0] < w[1]), "violations not sorted and unique: {:#?}", list);
            for v in &list {
                check_violation(op, body, v)?;
            }
            Ok(())
        }
    }
}

fn check_violation(op: Operation, body: Option<&Value>, v: &Violation) -> Result<(), TestCaseError> {
    prop_assert!(v.pointer.starts_with('/'), "pointer {:?} does not start with '/'", v.pointer);
    prop_assert!(!v.message.is_empty() && v.message.chars().count() < 200, "message {:?}", v.message);
    let Some(body) = body else { return Ok(()) };
    let names = known_names(op);
    for part in v.pointer[1..].split('/') {
        prop_assert!(
            part.parse::<usize>().is_ok() || names.contains(&part),
            "{} violation at {:?}: {:?} is not a field of the request",
            v.code.as_str(),
            v.pointer,
            part
        );
    }
    if v.code == Code::Required {
        prop_assert!(
            body.pointer(parent(&v.pointer)).is_some_and(|p| p.is_object() || p.is_array()),
            "required at {:?}, whose parent is not in the body",
            v.pointer
        );
    } else {
        prop_assert!(
            body.pointer(&v.pointer).is_some(),
            "{} at {:?}, which is not in the body",
            v.code.as_str(),
            v.pointer
        );
    }
    Ok(())
}

/// `bytes` with a few random byte edits: flips, insertions, deletions.
fn mutate(mut bytes: Vec<u8>, edits: &[(Index, u8, u8)]) -> Vec<u8> {
    for (at, kind, byte) in edits {
        if bytes.is_empty() {
            bytes.push(*byte);
            continue;
        }
        let i = at.index(bytes.len());
        match kind % 3 {
            0 => bytes[i] = *byte,
            1 => bytes.insert(i, *byte),
            _ => {
                bytes.remove(i);
            }
        }
    }
    bytes
}

const BOTH: [Operation; 2] = [Operation::CreateCall, Operation::SendCallData];

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for op in BOTH {
            check_answer(op, None, ingest(op, &bytes))?;
        }
    }

    #[test]
    fn mutated_valid_bodies_never_panic(
        edits in prop::collection::vec((any::<Index>(), any::<u8>(), prop_oneof![any::<u8>(), select(b"{}[]\",:0-.e \\".to_vec())]), 1..6),
    ) {
        let bodies = [
            (Operation::CreateCall, callgen::create_call_minutes(0.2, 4)),
            (Operation::SendCallData, callgen::send_call_data(&callgen::Options {
                size: callgen::Size::Minutes(0.2), seed: 4, call_id: None,
            })),
        ];
        for (op, body) in bodies {
            let bytes = mutate(body, &edits);
            let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
            // Duplicate keys make a Value differ from what ingest read; check pointers only without them.
            let body = parsed.filter(|_| no_duplicate_keys(&bytes).is_ok());
            for op_any in BOTH {
                let checked = if op_any == op { body.as_ref() } else { None };
                check_answer(op_any, checked, ingest(op_any, &bytes))?;
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics_and_violations_are_well_formed(doc in json_document()) {
        let bytes = serde_json::to_vec(&doc).unwrap();
        for op in BOTH {
            let result = ingest(op, &bytes);
            if !doc.is_object() {
                prop_assert!(matches!(result, Err(Rejection::Unreadable(_))), "not an object, yet {:?}", result.map(|_| ()));
            }
            check_answer(op, Some(&doc), result)?;
        }
    }

    #[test]
    fn near_valid_create_call_bodies_get_well_formed_answers(body in near_valid(Operation::CreateCall)) {
        let bytes = serde_json::to_vec(&body).unwrap();
        check_answer(Operation::CreateCall, Some(&body), ingest(Operation::CreateCall, &bytes))?;
    }

    #[test]
    fn near_valid_send_call_data_bodies_get_well_formed_answers(body in near_valid(Operation::SendCallData)) {
        let bytes = serde_json::to_vec(&body).unwrap();
        check_answer(Operation::SendCallData, Some(&body), ingest(Operation::SendCallData, &bytes))?;
    }
}

// ---- helpers --------------------------------------------------------------------------------
