//! Normalisation: what is stored for a valid call of either operation, read from the
//! serialised document `{"schema_version":1,"operation":…,"call":{…}}`.

use crate::json_checks::no_duplicate_keys;

use call_ingest_core::call::{ingest, CallDocument, Rejection};
use call_ingest_core::Operation;
use serde_json::{json, Value};

/// A valid operation B body: 0 agent timed by words, 1 user with start/end, 2 tool call,
/// 3 tool result, 4 node transition, 5 agent with start + duration.
fn create_call_body() -> Value {
    json!({
        "call_id": "call_norm_0001",
        "call_type": "web_call",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, how can I help?", "words": [
                {"word": "Hello,", "start_ms": 100, "end_ms": 300, "confidence": 0.98},
                {"word": "how", "start_ms": 350, "end_ms": 500},
                {"word": "help?", "start_ms": 720, "end_ms": 1000}
            ]},
            {"role": "user", "text": "Where is my order?", "start_ms": 1500, "end_ms": 2600},
            {"role": "agent_function", "text": "looking it up", "start_ms": 2700,
             "tool": {"name": "get_order_status", "request_id": "req_1", "params": {"order": "A1"}, "start_ms": 2700}},
            {"role": "agent_result", "text": "shipped", "start_ms": 3100,
             "tool": {"name": "get_order_status", "request_id": "req_1", "result": {"status": "shipped"},
                      "is_error": false, "start_ms": 2700, "end_ms": 3100}},
            {"role": "node_transition", "text": "to lookup", "start_ms": 3200,
             "node": {"from": "greeting", "to": "lookup", "reason": "condition met"}},
            {"role": "agent", "text": "It has shipped.", "start_ms": 3300, "duration_ms": 900}
        ],
        "start_timestamp": 1_763_700_000,
        "end_timestamp": 1_763_700_005,
        "recording_url": "pipecat://no-recording"
    })
}

/// A valid operation A body.
fn send_call_data_body() -> Value {
    json!({
        "agentId": "agt_demo",
        "callId": "call_a_0001",
        "transcript": [
            {"role": "agent", "content": "Hello, how can I help?", "timestamp": "2026-11-21T10:00:01.250Z"},
            {"role": "user", "content": "Where is my order?", "timestamp": "00:04"},
            {"role": "system", "content": "call recorded"},
            {"role": "agent", "content": "It has shipped.", "timestamp": "2026-11-21T11:00:07+01:00"}
        ],
        "startedAt": "2026-11-21T10:00:00Z",
        "endedAt": "2026-11-21T10:05:00.5Z",
        "metadata": {"durationSeconds": 300, "callDirection": "inbound", "callerPhone": "+14155550123", "outcome": "resolved"}
    })
}

fn accept(op: Operation, body: &Value) -> CallDocument {
    let bytes = serde_json::to_vec(body).expect("JSON");
    match ingest(op, &bytes) {
        Ok(doc) => doc,
        Err(Rejection::Invalid(list)) => panic!("rejected: {list:#?}\nbody: {body}"),
        Err(Rejection::Unreadable(e)) => panic!("unreadable: {e}"),
        Err(Rejection::OverLimit(v)) => panic!("over a count limit: {v:?}"),
    }
}

/// The stored call of an operation B body.
fn stored_b(body: &Value) -> Value {
    stored(Operation::CreateCall, body)
}

fn stored(op: Operation, body: &Value) -> Value {
    let doc = serde_json::to_value(accept(op, body)).expect("a document serialises");
    doc["call"].clone()
}

fn with(mut body: Value, pointer: &str, value: Value) -> Value {
    let (parent, last) = pointer.rsplit_once('/').expect("a pointer");
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last.to_owned(), value);
        }
        Some(Value::Array(items)) => {
            let i: usize = last.parse().expect("an index");
            if i == items.len() {
                items.push(value);
            } else {
                items[i] = value;
            }
        }
        _ => panic!("no parent for {pointer}"),
    }
    body
}

fn without(mut body: Value, pointer: &str) -> Value {
    let (parent, last) = pointer.rsplit_once('/').expect("a pointer");
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(last).unwrap_or_else(|| panic!("nothing at {pointer}"));
        }
        _ => panic!("no object at {parent}"),
    }
    body
}

// ---- the document ---------------------------------------------------------------------

#[test]
fn document_carries_schema_version_and_operation() {
    let doc = serde_json::to_value(accept(Operation::CreateCall, &create_call_body())).unwrap();
    assert_eq!(doc["schema_version"], json!(1));
    assert_eq!(doc["operation"], json!("create_call"));
    assert!(doc["call"].is_object());
    assert_eq!(doc.as_object().unwrap().len(), 3, "{doc}");
    let doc = serde_json::to_value(accept(Operation::SendCallData, &send_call_data_body())).unwrap();
    assert_eq!(doc["operation"], json!("send_call_data"));
}

#[test]
fn to_json_is_the_serialised_document() {
    let doc = accept(Operation::CreateCall, &create_call_body());
    let parsed: Value = serde_json::from_slice(&doc.to_json()).unwrap();
    assert_eq!(parsed, serde_json::to_value(&doc).unwrap());
}

// ---- timestamps and duration ------------------------------------------------------------

#[test]
fn timestamps_in_seconds_are_stored_in_milliseconds() {
    let call = stored_b(&create_call_body());
    assert_eq!(call["start_timestamp"], json!(1_763_700_000_000_u64));
    assert_eq!(call["end_timestamp"], json!(1_763_700_005_000_u64));
}

#[test]
fn timestamps_in_milliseconds_are_kept() {
    let body = with(create_call_body(), "/start_timestamp", json!(1_763_700_000_123_u64));
    let body = with(body, "/end_timestamp", json!(1_763_700_009_876_u64));
    let call = stored_b(&body);
    assert_eq!(call["start_timestamp"], json!(1_763_700_000_123_u64));
    assert_eq!(call["end_timestamp"], json!(1_763_700_009_876_u64));
    assert_eq!(call["duration_ms"], json!(9753));
}

#[test]
fn start_in_seconds_and_end_in_milliseconds_are_each_normalised() {
    let body = with(create_call_body(), "/end_timestamp", json!(1_763_700_042_500_u64));
    let call = stored_b(&body);
    assert_eq!(call["start_timestamp"], json!(1_763_700_000_000_u64));
    assert_eq!(call["end_timestamp"], json!(1_763_700_042_500_u64));
    assert_eq!(call["duration_ms"], json!(42_500));
}

#[test]
fn decimal_seconds_become_whole_milliseconds() {
    let body = with(create_call_body(), "/start_timestamp", json!(1_763_700_000.123));
    let body = with(body, "/end_timestamp", json!(1_763_700_007.5));
    let call = stored_b(&body);
    assert_eq!(call["start_timestamp"], json!(1_763_700_000_123_u64));
    assert_eq!(call["end_timestamp"], json!(1_763_700_007_500_u64));
    assert_eq!(call["duration_ms"], json!(7377));
}

#[test]
fn duration_is_end_minus_start_when_absent() {
    let call = stored_b(&create_call_body());
    assert_eq!(call["duration_ms"], json!(5000));
    let call = stored_b(&with(create_call_body(), "/duration_ms", Value::Null));
    assert_eq!(call["duration_ms"], json!(5000));
}

#[test]
fn duration_is_zero_when_end_equals_start() {
    let call = stored_b(&with(create_call_body(), "/end_timestamp", json!(1_763_700_000)));
    assert_eq!(call["duration_ms"], json!(0));
}

#[test]
fn duration_sent_is_kept_even_when_it_differs_from_end_minus_start() {
    let call = stored_b(&with(create_call_body(), "/duration_ms", json!(4321)));
    assert_eq!(call["duration_ms"], json!(4321));
}

// ---- transcript -------------------------------------------------------------------------

#[test]
fn transcript_is_derived_from_agent_and_user_segments_with_text_in_order() {
    let call = stored_b(&create_call_body());
    assert_eq!(
        call["transcript"],
        json!("Agent: Hello, how can I help?\nUser: Where is my order?\nAgent: It has shipped.")
    );
}

#[test]
fn derived_transcript_skips_segments_without_text() {
    let body = with(create_call_body(), "/transcript_with_tool_calls/1/text", json!(""));
    let body = without(body, "/transcript_with_tool_calls/0/text");
    let call = stored_b(&body);
    assert_eq!(call["transcript"], json!("Agent: It has shipped."));
}

#[test]
fn derived_transcript_is_empty_without_any_message() {
    let body = with(
        create_call_body(),
        "/transcript_with_tool_calls",
        json!([{"role": "node_transition", "text": "x", "node": {"from": "a", "to": "b"}}]),
    );
    assert_eq!(stored_b(&body)["transcript"], json!(""));
}

#[test]
fn transcript_sent_is_kept_as_sent() {
    let sent = "  Speaker 1: hi\r\nSpeaker 2: hello  ";
    let call = stored_b(&with(create_call_body(), "/transcript", json!(sent)));
    assert_eq!(call["transcript"], json!(sent));
}

// ---- metadata -----------------------------------------------------------------------------

/// serde_json's `raw_value` feature (on for the workspace) makes `Value` parse the string of
/// an object whose first key is `$serde_json::private::RawValue` as JSON, a second parse no
/// count limit saw (a 9 MB body held 116 MB). Free-form fields keep such a key as data,
/// at any depth, in a tool's params and in the provider-free metadata alike.
#[test]
fn serde_jsons_private_keys_in_free_form_fields_are_kept_as_data() {
    let magic = json!({"$serde_json::private::RawValue": "[{},{},{}]"});
    let body = with(create_call_body(), "/metadata", json!({"nested": [magic.clone()]}));
    let body = with(body, "/transcript_with_tool_calls/2/tool/params", json!({"args": magic.clone()}));
    let body = with(body, "/transcript_with_tool_calls/0/words/1/unknown", magic.clone());
    let body = with(body, "/unknown", magic.clone());
    let call = stored_b(&body);
    assert_eq!(call["unknown"], magic, "an unknown field of a record");
    assert_eq!(call["transcript_with_tool_calls"][0]["words"][1]["unknown"], magic, "of a word");
    assert_eq!(call["general_meta_data_raw"]["nested"], json!([magic.clone()]), "{call}");
    let tool = &call["transcript_with_tool_calls"][2]["tool"];
    assert_eq!(tool["params"]["args"], magic, "{tool}");
}

#[test]
fn metadata_is_merged_into_general_meta_data_raw_and_general_wins_collisions() {
    let body = with(
        create_call_body(),
        "/metadata",
        json!({"ai_models": {"asr_model": "nova-3", "llm_model": "gpt"}, "shared": "from metadata", "only_metadata": 1}),
    );
    let body = with(
        body,
        "/general_meta_data_raw",
        json!({"shared": "from general", "only_general": [2], "ai_models": {"tts_model": "sonic"}}),
    );
    let call = stored_b(&body);
    assert_eq!(
        call["general_meta_data_raw"],
        json!({
            "ai_models": {"tts_model": "sonic"},
            "shared": "from general",
            "only_metadata": 1,
            "only_general": [2]
        })
    );
    assert!(call.get("metadata").is_none(), "metadata is not stored on its own: {call}");
}

#[test]
fn metadata_alone_becomes_general_meta_data_raw() {
    let metadata = json!({"usage_token": {"llm_token": 900}, "x": "y"});
    let call = stored_b(&with(create_call_body(), "/metadata", metadata.clone()));
    assert_eq!(call["general_meta_data_raw"], metadata);
    assert!(call.get("metadata").is_none());
}

#[test]
fn general_meta_data_raw_alone_is_kept() {
    let general = json!({"campaign": "winter", "n": 1.5});
    let call = stored_b(&with(create_call_body(), "/general_meta_data_raw", general.clone()));
    assert_eq!(call["general_meta_data_raw"], general);
}

// ---- segments -----------------------------------------------------------------------------

#[test]
fn segment_times_are_taken_from_its_first_and_last_word() {
    let call = stored_b(&create_call_body());
    let segment = &call["transcript_with_tool_calls"][0];
    assert_eq!(segment["start_ms"], json!(100));
    assert_eq!(segment["end_ms"], json!(1000));
}

#[test]
fn segment_times_sent_are_kept_beside_words() {
    let body = with(create_call_body(), "/transcript_with_tool_calls/0/start_ms", json!(50));
    let body = with(body, "/transcript_with_tool_calls/0/end_ms", json!(1100));
    let segment = &stored_b(&body)["transcript_with_tool_calls"][0];
    assert_eq!((segment["start_ms"].clone(), segment["end_ms"].clone()), (json!(50), json!(1100)));
}

#[test]
fn segment_end_is_start_plus_duration() {
    let call = stored_b(&create_call_body());
    let segment = &call["transcript_with_tool_calls"][5];
    assert_eq!(segment["start_ms"], json!(3300));
    assert_eq!(segment["duration_ms"], json!(900));
    assert_eq!(segment["end_ms"], json!(4200));
}

#[test]
fn segments_keep_roles_texts_tools_and_nodes() {
    let call = stored_b(&create_call_body());
    let segments = call["transcript_with_tool_calls"].as_array().unwrap();
    let roles: Vec<&str> = segments.iter().map(|s| s["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["agent", "user", "agent_function", "agent_result", "node_transition", "agent"]);
    assert_eq!(segments[2]["tool"]["params"], json!({"order": "A1"}));
    assert_eq!(segments[3]["tool"]["result"], json!({"status": "shipped"}));
    assert_eq!(segments[3]["tool"]["is_error"], json!(false));
    assert_eq!(segments[4]["node"], json!({"from": "greeting", "to": "lookup", "reason": "condition met"}));
    assert_eq!(segments[0]["words"][0], json!({"word": "Hello,", "start_ms": 100, "end_ms": 300, "confidence": 0.98}));
}

#[test]
fn decimal_milliseconds_are_rounded_up_in_segments_words_and_tools() {
    let mut body = create_call_body();
    let edits = [
        ("/transcript_with_tool_calls/1/start_ms", json!(1200.2)),
        ("/transcript_with_tool_calls/1/end_ms", json!(2600.0)),
        ("/transcript_with_tool_calls/0/words/0/start_ms", json!(100.01)),
        ("/transcript_with_tool_calls/0/words/2/end_ms", json!(999.5)),
        ("/transcript_with_tool_calls/3/tool/start_ms", json!(2700.1)),
        ("/transcript_with_tool_calls/3/tool/end_ms", json!(3100.9)),
        ("/transcript_with_tool_calls/5/start_ms", json!(3300.5)),
        ("/transcript_with_tool_calls/5/duration_ms", json!(899.2)),
    ];
    for (pointer, value) in edits {
        body = with(body, pointer, value);
    }
    let call = stored_b(&body);
    let s = &call["transcript_with_tool_calls"];
    // Whole integers, not 1201.0: json!(1201) is an integer, so a float would not compare equal.
    assert_eq!(s[1]["start_ms"], json!(1201));
    assert_eq!(s[1]["end_ms"], json!(2600));
    assert_eq!(s[0]["words"][0]["start_ms"], json!(101));
    assert_eq!(s[0]["words"][2]["end_ms"], json!(1000));
    assert_eq!(s[0]["start_ms"], json!(101), "segment start from the rounded first word");
    assert_eq!(s[0]["end_ms"], json!(1000), "segment end from the rounded last word");
    assert_eq!(s[3]["tool"]["start_ms"], json!(2701));
    assert_eq!(s[3]["tool"]["end_ms"], json!(3101));
    assert_eq!(s[5]["start_ms"], json!(3301));
    assert_eq!(s[5]["duration_ms"], json!(900));
    assert_eq!(s[5]["end_ms"], json!(4201));
    // Confidence is not a time: kept as sent.
    assert_eq!(s[0]["words"][0]["confidence"], json!(0.98));
}

#[test]
fn sentiment_is_stored_lower_case() {
    for (sent, kept) in
        [("Positive", "positive"), ("NEUTRAL", "neutral"), ("negative", "negative"), ("UnKnOwN", "unknown")]
    {
        let call = stored_b(&with(create_call_body(), "/user_sentiment", json!(sent)));
        assert_eq!(call["user_sentiment"], json!(kept));
    }
}

#[test]
fn optional_fields_are_stored_as_sent() {
    let fields = [
        ("agent_version", json!(7)),
        ("call_status", json!("call_ended")),
        ("disconnection_reason", json!("user_hangup")),
        ("caller_phone_number", json!("+14155550123")),
        ("call_successful", json!(true)),
        ("in_voicemail", json!(false)),
        ("collected_dynamic_variables", json!({"name": "Alex"})),
        ("call_cost", json!(12.34)),
        ("call_analysis", json!({"summary": "ok", "nested": {"a": [1, null]}})),
        ("recording_multi_channel_url", json!("https://r.example.com/mc.wav")),
        ("call_id", json!("call_norm_0001")),
        ("call_type", json!("web_call")),
        ("recording_url", json!("pipecat://no-recording")),
    ];
    let mut body = create_call_body();
    for (name, value) in &fields {
        body = with(body, &format!("/{name}"), value.clone());
    }
    let call = stored_b(&body);
    for (name, value) in &fields {
        assert_eq!(&call[name], value, "{name}");
    }
}

#[test]
fn unknown_fields_are_kept_in_place() {
    let edits = [
        ("/provider", json!({"name": "retell", "v": [1, 2]})),
        ("/x-custom", json!(null)),
        ("/transcript_with_tool_calls/0/speaker_id", json!(7)),
        ("/transcript_with_tool_calls/0/words/1/punctuated_word", json!("how,")),
        ("/transcript_with_tool_calls/3/tool/latency_ms", json!(12.5)),
        ("/transcript_with_tool_calls/4/node/confidence", json!(0.9)),
        ("/transcript_with_tool_calls/1/metadata", json!({"stt_node_ttfb": 210, "custom": true})),
    ];
    let mut body = create_call_body();
    for (pointer, value) in &edits {
        body = with(body, pointer, value.clone());
    }
    let call = stored_b(&body);
    for (pointer, value) in &edits {
        assert_eq!(call.pointer(pointer), Some(value), "{pointer} in {call}");
    }
}

#[test]
fn derived_segment_times_never_end_before_start() {
    // Each body is accepted today; whatever the rule becomes (refuse it, or derive times
    // that agree), a stored segment must never end before it starts.
    let segments = [
        // start_ms sent, end_ms taken from the last word, which ends before that start
        json!({"role": "user", "text": "hi", "start_ms": 1000, "words": [{"word": "hi", "start_ms": 100, "end_ms": 600}]}),
        // end_ms sent, start_ms taken from the first word, which starts after that end
        json!({"role": "user", "text": "hi", "end_ms": 100, "words": [{"word": "hi", "start_ms": 500, "end_ms": 600}]}),
        // words out of order: first word's start after last word's end
        json!({"role": "agent", "text": "a b", "words": [
            {"word": "a", "start_ms": 500, "end_ms": 600}, {"word": "b", "start_ms": 100, "end_ms": 200}]}),
    ];
    let mut failures = Vec::new();
    for segment in segments {
        let body = with(create_call_body(), "/transcript_with_tool_calls", json!([segment]));
        let bytes = serde_json::to_vec(&body).unwrap();
        match ingest(Operation::CreateCall, &bytes) {
            Err(Rejection::Invalid(_)) => {}
            Err(Rejection::Unreadable(e)) => failures.push(format!("unreadable {e}")),
            Err(Rejection::OverLimit(v)) => failures.push(format!("over a count limit {v:?}")),
            Ok(doc) => {
                let call = serde_json::to_value(&doc).unwrap()["call"].clone();
                let s = &call["transcript_with_tool_calls"][0];
                if let (Some(start), Some(end)) = (s["start_ms"].as_u64(), s["end_ms"].as_u64()) {
                    if end < start {
                        failures.push(format!("accepted {segment} and stored start_ms {start}, end_ms {end}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn derived_segment_end_stays_within_the_millisecond_range() {
    // Every millisecond value sent must be <= 2^53 - 1; start + duration must not store
    // an end beyond it either (refused, or kept in range).
    const MAX: u64 = (1 << 53) - 1;
    let segment = json!({"role": "agent", "text": "x", "start_ms": MAX, "duration_ms": MAX});
    let body = with(create_call_body(), "/transcript_with_tool_calls", json!([segment]));
    if let Ok(doc) = ingest(Operation::CreateCall, &serde_json::to_vec(&body).unwrap()) {
        let call = serde_json::to_value(&doc).unwrap()["call"].clone();
        let end = call["transcript_with_tool_calls"][0]["end_ms"].as_u64();
        assert!(end.is_none_or(|e| e <= MAX), "accepted and stored end_ms {end:?}, beyond 2^53 - 1");
    }
}

// ---- operation A --------------------------------------------------------------------------

#[test]
fn send_call_data_items_become_segments_with_role_and_text() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    let segments = call["transcript_with_tool_calls"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> =
        segments.iter().map(|s| (s["role"].as_str().unwrap(), s["text"].as_str().unwrap())).collect();
    assert_eq!(
        pairs,
        [
            ("agent", "Hello, how can I help?"),
            ("user", "Where is my order?"),
            ("system", "call recorded"),
            ("agent", "It has shipped.")
        ]
    );
    assert!(segments[0].get("content").is_none(), "content is stored as text: {}", segments[0]);
}

#[test]
fn send_call_data_rfc3339_item_timestamp_is_kept_with_milliseconds_beside_it() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    let s = &call["transcript_with_tool_calls"];
    assert_eq!(s[0]["timestamp"], json!("2026-11-21T10:00:01.250Z"));
    assert_eq!(s[0]["timestamp_ms"], json!(1_795_255_201_250_u64));
    assert_eq!(s[3]["timestamp"], json!("2026-11-21T11:00:07+01:00"));
    assert_eq!(s[3]["timestamp_ms"], json!(1_795_255_207_000_u64));
}

#[test]
fn send_call_data_other_item_timestamp_is_kept_without_milliseconds() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    let s = &call["transcript_with_tool_calls"];
    assert_eq!(s[1]["timestamp"], json!("00:04"));
    assert!(s[1].get("timestamp_ms").is_none(), "{}", s[1]);
    assert!(s[2].get("timestamp").is_none() && s[2].get("timestamp_ms").is_none(), "{}", s[2]);
}

#[test]
fn send_call_data_started_and_ended_at_become_milliseconds() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    assert_eq!(call["start_timestamp"], json!(1_795_255_200_000_u64));
    assert_eq!(call["end_timestamp"], json!(1_795_255_500_500_u64));
    let body = with(send_call_data_body(), "/startedAt", json!("2026-11-21T11:00:00+01:00"));
    assert_eq!(stored(Operation::SendCallData, &body)["start_timestamp"], json!(1_795_255_200_000_u64));
}

#[test]
fn send_call_data_metadata_becomes_general_meta_data_raw() {
    let body = with(send_call_data_body(), "/metadata/campaign", json!("winter"));
    let call = stored(Operation::SendCallData, &body);
    assert_eq!(
        call["general_meta_data_raw"],
        json!({"durationSeconds": 300, "callDirection": "inbound", "callerPhone": "+14155550123",
               "outcome": "resolved", "campaign": "winter"})
    );
    assert!(call.get("metadata").is_none());
}

#[test]
fn send_call_data_caller_phone_becomes_caller_phone_number() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    assert_eq!(call["caller_phone_number"], json!("+14155550123"));
}

#[test]
fn send_call_data_duration_seconds_becomes_duration_ms() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    assert_eq!(call["duration_ms"], json!(300_000));
    let call = stored(Operation::SendCallData, &with(send_call_data_body(), "/metadata/durationSeconds", json!(12.5)));
    assert_eq!(call["duration_ms"], json!(12_500));
}

#[test]
fn send_call_data_duration_seconds_with_millisecond_precision_is_exact() {
    // 2.007 * 1000.0 is 2007.0000000000002 in binary floating point; rounding that up
    // stores 2008 ms for a call the client said lasted 2007 ms.
    let mut wrong = Vec::new();
    for secs in [2.007, 2.011, 184.123, 0.001, 59.999] {
        let body = with(send_call_data_body(), "/metadata/durationSeconds", json!(secs));
        let expected = (secs * 1000.0_f64).round() as u64;
        let got = stored(Operation::SendCallData, &body)["duration_ms"].clone();
        if got != json!(expected) {
            wrong.push(format!("durationSeconds {secs} stored as duration_ms {got}, expected {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn send_call_data_started_at_that_is_accepted_is_stored() {
    // A time before 1970 is valid RFC 3339. Either it is refused (operation B refuses
    // non-positive Unix times) or it is stored; it must not be accepted and then dropped.
    let body = with(send_call_data_body(), "/startedAt", json!("1969-12-31T23:59:59Z"));
    let body = with(body, "/endedAt", json!("1970-01-01T00:00:01Z"));
    match ingest(Operation::SendCallData, &serde_json::to_vec(&body).unwrap()) {
        Err(Rejection::Invalid(list)) => {
            assert!(list.iter().any(|v| v.pointer == "/startedAt"), "{list:?}")
        }
        Err(Rejection::Unreadable(e)) => panic!("unreadable: {e}"),
        Err(Rejection::OverLimit(v)) => panic!("over a count limit: {v:?}"),
        Ok(doc) => {
            let call = serde_json::to_value(&doc).unwrap()["call"].clone();
            assert!(call.get("start_timestamp").is_some(), "startedAt accepted but not stored: {call}");
        }
    }
}

#[test]
fn send_call_data_duration_is_ended_minus_started_without_duration_seconds() {
    let body = without(send_call_data_body(), "/metadata/durationSeconds");
    assert_eq!(stored(Operation::SendCallData, &body)["duration_ms"], json!(300_500));
}

#[test]
fn send_call_data_transcript_is_derived_from_agent_and_user_items() {
    let call = stored(Operation::SendCallData, &send_call_data_body());
    assert_eq!(
        call["transcript"],
        json!("Agent: Hello, how can I help?\nUser: Where is my order?\nAgent: It has shipped.")
    );
}

#[test]
fn send_call_data_call_id_is_the_provider_call_id() {
    let doc = accept(Operation::SendCallData, &send_call_data_body());
    assert_eq!(doc.call_id(), "call_a_0001");
    assert_eq!(serde_json::to_value(&doc).unwrap()["operation"], json!("send_call_data"));
}

#[test]
fn send_call_data_unknown_fields_are_kept() {
    let body = with(send_call_data_body(), "/provider", json!({"name": "vapi"}));
    let body = with(body, "/transcript/0/confidence", json!(0.91));
    let call = stored(Operation::SendCallData, &body);
    // Kept under `unknown_fields`: operation A's names are not the stored shape's.
    assert_eq!(call["unknown_fields"]["provider"], json!({"name": "vapi"}));
    assert_eq!(call["transcript_with_tool_calls"][0]["unknown_fields"]["confidence"], json!(0.91));
}

#[test]
fn send_call_data_unknown_fields_never_collide_with_stored_fields() {
    // Operation A's unknown fields are kept, but operation A's names differ from the
    // stored shape's: a client field called "call_id" or "text" must not give the stored
    // document two keys of the same name (the last would win when it is read back).
    let body = with(send_call_data_body(), "/call_id", json!("spoofed"));
    let body = with(body, "/transcript_with_tool_calls", json!("spoofed"));
    let body = with(body, "/transcript/0/text", json!("spoofed"));
    let body = with(body, "/transcript/0/start_ms", json!(-5));
    let doc = accept(Operation::SendCallData, &body);
    let json = doc.to_json();
    if let Err(e) = no_duplicate_keys(&json) {
        panic!("stored JSON has {e}: {}", String::from_utf8_lossy(&json));
    }
    let read_back: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(read_back["call"]["call_id"], json!("call_a_0001"));
    assert_eq!(read_back["call"]["transcript_with_tool_calls"][0]["text"], json!("Hello, how can I help?"));
}

// ---- digest -------------------------------------------------------------------------------

/// `value` as JSON text with every object's keys in reverse order and odd white space.
fn reordered(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .rev()
                .map(|(k, v)| format!("\n\t {} :  {}", serde_json::to_string(k).unwrap(), reordered(v)))
                .collect();
            format!("{{ {} \r\n}}", members.join(" ,"))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reordered).collect();
            format!("[ {} ]", items.join(" ,\n"))
        }
        other => other.to_string(),
    }
}

fn digest(op: Operation, body: &[u8]) -> String {
    match ingest(op, body) {
        Ok(doc) => CallDocument::digest_of("agt_test", &doc.to_json()),
        Err(e) => panic!("rejected: {e:?}"),
    }
}

#[test]
fn digest_is_the_same_for_reordered_keys_and_other_white_space() {
    let generated = callgen::create_call_minutes(2.0, 5);
    let value: Value = serde_json::from_slice(&generated).unwrap();
    let pretty = serde_json::to_vec_pretty(&value).unwrap();
    let shuffled = reordered(&value);
    assert_ne!(generated, shuffled.as_bytes());
    let d = digest(Operation::CreateCall, &generated);
    assert_eq!(d.len(), 64);
    assert!(d.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{d}");
    assert_eq!(digest(Operation::CreateCall, &pretty), d);
    assert_eq!(digest(Operation::CreateCall, shuffled.as_bytes()), d);

    let a = send_call_data_body();
    let d = digest(Operation::SendCallData, &serde_json::to_vec(&a).unwrap());
    assert_eq!(digest(Operation::SendCallData, reordered(&a).as_bytes()), d);
}

#[test]
fn digest_changes_when_a_value_changes() {
    let body = create_call_body();
    let d = digest(Operation::CreateCall, &serde_json::to_vec(&body).unwrap());
    let changes = [
        ("/transcript_with_tool_calls/0/words/1/word", json!("who")),
        ("/transcript_with_tool_calls/1/end_ms", json!(2601)),
        ("/call_type", json!("phone_call")),
        ("/end_timestamp", json!(1_763_700_006)),
        ("/unknown", json!(1)),
        ("/general_meta_data_raw", json!({"a": 1})),
    ];
    for (pointer, value) in changes {
        let changed = with(body.clone(), pointer, value);
        assert_ne!(digest(Operation::CreateCall, &serde_json::to_vec(&changed).unwrap()), d, "{pointer}");
    }
}

#[test]
fn digest_is_the_same_for_seconds_and_the_same_instant_in_milliseconds() {
    // Both are stored as the same milliseconds: the same content.
    let seconds = create_call_body();
    let millis = with(seconds.clone(), "/start_timestamp", json!(1_763_700_000_000_u64));
    assert_eq!(
        digest(Operation::CreateCall, &serde_json::to_vec(&seconds).unwrap()),
        digest(Operation::CreateCall, &serde_json::to_vec(&millis).unwrap())
    );
}

// ---- helpers ------------------------------------------------------------------------------

#[test]
fn duplicate_key_detector_detects_duplicates() {
    assert!(no_duplicate_keys(br#"{"a": {"b": 1, "c": [1, {"d": 2}]}, "e": null}"#).is_ok());
    assert!(no_duplicate_keys(br#"{"a": [{"b": 1, "b": 2}]}"#).is_err());
}
