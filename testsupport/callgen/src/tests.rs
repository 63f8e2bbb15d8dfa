//! Determinism, shape and size checks for the generator.

use super::*;
use serde_json::Value;

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("generator output is valid JSON")
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn sorted<'a>(k: &[&'a str]) -> Vec<&'a str> {
    let mut k = k.to_vec();
    k.sort_unstable();
    k
}

fn segments(v: &Value) -> &Vec<Value> {
    v["transcript_with_tool_calls"].as_array().expect("segments array")
}

fn num(v: &Value) -> u64 {
    v.as_u64().expect("unsigned integer")
}

#[test]
fn same_seed_same_bytes_and_seeds_differ() {
    assert_eq!(create_call_minutes(10.0, 7), create_call_minutes(10.0, 7));
    assert_ne!(create_call_minutes(10.0, 7), create_call_minutes(10.0, 8));
    let a = |seed| send_call_data(&Options { seed, ..Options::default() });
    assert_eq!(a(7), a(7));
    assert_ne!(a(7), a(8));
}

#[test]
fn create_call_has_gen_call_fields_in_order() {
    let bytes = create_call_minutes(10.0, 1);
    let order = [
        "call_id",
        "call_type",
        "transcript_with_tool_calls",
        "start_timestamp",
        "end_timestamp",
        "recording_url",
        "agent_version",
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
    ];
    let v = parse(&bytes);
    assert_eq!(keys(&v), sorted(&order));
    // Keys are written in gen_call.py's order, not sorted: check the outer ones.
    let text = String::from_utf8(bytes).expect("utf-8");
    assert!(text.starts_with("{\"call_id\":\"call_1_"));
    assert!(text.contains("\"transcript_with_tool_calls\":[{\"role\":\"agent\",\"text\":"));
    assert!(text.ends_with("-mc.wav\"}"));
    assert!(num(&v["end_timestamp"]) >= num(&v["start_timestamp"]));
    let usage = &v["metadata"]["usage_token"];
    assert_eq!(keys(usage), ["llm_token", "stt_duration_seconds", "tts_characters_count"]);
    assert!(v["call_cost"].is_f64());
}

#[test]
fn ten_minute_call_ends_near_600_seconds() {
    let v = parse(&create_call_minutes(10.0, 1));
    let last_end = segments(&v).iter().filter_map(|s| s["end_ms"].as_u64()).max().unwrap_or(0);
    assert!((580_000..=625_000).contains(&last_end), "{last_end}");
    let secs = v["metadata"]["usage_token"]["stt_duration_seconds"].as_f64().unwrap_or(0.0);
    assert!((600.0..=625.0).contains(&secs), "{secs}");
}

#[test]
fn max_size_call_is_about_5_8_mb() {
    let n = create_call_bytes(5_800_000, 3).len();
    assert!((5_220_000..=6_380_000).contains(&n), "{n}");
}

#[test]
fn sixty_minute_call_is_well_formed() {
    let v = parse(&create_call_minutes(60.0, 1));
    let segs = segments(&v);
    let mut expect_role = "agent";
    let (mut functions, mut transitions) = (0, 0);
    for (i, s) in segs.iter().enumerate() {
        let role = s["role"].as_str().expect("role");
        let fields: Vec<&str> = match role {
            "agent" | "user" => {
                assert_eq!(role, expect_role, "speech roles alternate");
                expect_role = if role == "agent" { "user" } else { "agent" };
                let words = s["words"].as_array().expect("words");
                assert!((3..=28).contains(&words.len()));
                for w in words {
                    assert!(num(&w["end_ms"]) >= num(&w["start_ms"]));
                    assert_eq!(keys(w), ["confidence", "end_ms", "start_ms", "word"]);
                }
                assert!(s["text"].as_str().is_some_and(|t| t.ends_with('.')));
                vec!["end_ms", "metadata", "role", "start_ms", "text", "words"]
            }
            "agent_function" => {
                functions += 1;
                let next = &segs[i + 1];
                assert_eq!(next["role"], "agent_result");
                assert_eq!(next["tool"]["request_id"], s["tool"]["request_id"]);
                assert_eq!(keys(&s["tool"]["params"]), ["customer_id", "date"]);
                vec!["metadata", "role", "start_ms", "text", "tool"]
            }
            "agent_result" => {
                assert_eq!(segs[i - 1]["role"], "agent_function");
                let tool = &s["tool"];
                assert!(num(&tool["end_ms"]) >= num(&tool["start_ms"]));
                assert_eq!(tool["is_error"], tool.get("error").is_some());
                vec!["metadata", "role", "start_ms", "text", "tool"]
            }
            "node_transition" => {
                transitions += 1;
                assert_ne!(s["node"]["from"], s["node"]["to"]);
                vec!["metadata", "node", "role", "start_ms", "text"]
            }
            other => panic!("unexpected role {other}"),
        };
        assert_eq!(keys(s), fields);
    }
    assert!(functions > 0 && transitions > 0, "{functions} {transitions}");
}

#[test]
fn send_call_data_has_gen_call_fields() {
    let opts = Options { size: Size::Minutes(5.0), seed: 2, call_id: Some("c-1".into()) };
    let v = parse(&send_call_data(&opts));
    let expected = ["agentId", "callId", "endedAt", "metadata", "startedAt", "transcript"];
    assert_eq!(keys(&v), expected);
    assert_eq!(v["callId"], "c-1");
    let items = v["transcript"].as_array().expect("transcript");
    assert!(!items.is_empty());
    for item in items {
        assert_eq!(keys(item), ["content", "role", "timestamp"]);
        let ts = item["timestamp"].as_str().expect("timestamp");
        assert!(ts.starts_with("2026-11-21T10:") && ts.ends_with('Z') && ts.len() == 20, "{ts}");
    }
    // Operation A is sized in minutes; Size::Bytes means the default 10 minutes.
    let bytes = Options { size: Size::Bytes(1), ..Options::default() };
    assert_eq!(send_call_data(&bytes), send_call_data(&Options::default()));
}
