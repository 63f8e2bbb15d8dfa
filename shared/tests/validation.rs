//! Validation of both request bodies, table-driven: every rule of the contract's
//! Validation section and of the specification's sections 2.3 and 8, with boundary cases
//! on both sides of every limit. Each case is a valid base body plus one mutation and the
//! exact outcome: accepted, 400 (unreadable), or 422 with the exact set of
//! (pointer, code) pairs.

use call_ingest::api::{Code, Violation};
use call_ingest::call::{ingest, Rejection};
use call_ingest::Operation;
use serde_json::{json, Value};

/// What `ingest` should answer.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Valid: normalised into a document.
    Ok,
    /// 400: not JSON, or not a JSON object.
    Unreadable,
    /// 422 with exactly these (pointer, code) pairs, sorted.
    Invalid(Vec<(String, Code)>),
}

struct Case {
    name: String,
    op: Operation,
    body: Vec<u8>,
    expect: Outcome,
}

/// A case being written: a base body and the mutations applied to it so far.
struct Draft {
    name: String,
    op: Operation,
    body: Value,
}

/// Operation B, from the valid base body.
fn b(name: impl Into<String>) -> Draft {
    Draft { name: name.into(), op: Operation::CreateCall, body: base_create_call() }
}

/// Operation A, from the valid base body.
fn a(name: impl Into<String>) -> Draft {
    Draft { name: name.into(), op: Operation::SendCallData, body: base_send_call_data() }
}

/// A case whose body is given as raw bytes.
fn raw(name: &str, op: Operation, body: &[u8], expect: Outcome) -> Case {
    Case { name: name.to_owned(), op, body: body.to_vec(), expect }
}

impl Draft {
    /// Sets the value at `pointer` (the member or element is created when its parent exists).
    fn set(mut self, pointer: &str, value: Value) -> Self {
        set_at(&mut self.body, pointer, value);
        self
    }

    /// Removes the member or element at `pointer`.
    fn remove(mut self, pointer: &str) -> Self {
        remove_at(&mut self.body, pointer);
        self
    }

    /// Replaces the whole body.
    fn body(mut self, body: Value) -> Self {
        self.body = body;
        self
    }

    fn case(self, expect: Outcome) -> Case {
        let body = serde_json::to_vec(&self.body).expect("a Value serialises");
        Case { name: self.name, op: self.op, body, expect }
    }

    fn ok(self) -> Case {
        self.case(Outcome::Ok)
    }

    fn invalid(self, errors: &[(&str, Code)]) -> Case {
        self.case(invalid(errors))
    }
}

fn invalid(errors: &[(&str, Code)]) -> Outcome {
    let mut list: Vec<(String, Code)> = errors.iter().map(|(p, c)| ((*p).to_owned(), *c)).collect();
    list.sort();
    Outcome::Invalid(list)
}

fn set_at(body: &mut Value, pointer: &str, value: Value) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_else(|| panic!("not a pointer: {pointer:?}"));
    let last = last.replace("~1", "/").replace("~0", "~");
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
        }
        Some(Value::Array(items)) => {
            let i: usize = last.parse().unwrap_or_else(|_| panic!("not an index in {pointer:?}"));
            if i == items.len() {
                items.push(value);
            } else {
                items[i] = value;
            }
        }
        _ => panic!("the parent of {pointer:?} is not an object or array in the base body"),
    }
}

fn remove_at(body: &mut Value, pointer: &str) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_else(|| panic!("not a pointer: {pointer:?}"));
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            assert!(map.remove(last).is_some(), "nothing to remove at {pointer:?}");
        }
        Some(Value::Array(items)) => {
            items.remove(last.parse().unwrap_or_else(|_| panic!("not an index in {pointer:?}")));
        }
        _ => panic!("the parent of {pointer:?} is not an object or array in the base body"),
    }
}

/// `n` copies of `c`.
fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// A valid operation B body with every kind of segment:
/// 0 agent timed by words, 1 user with start/end, 2 tool call, 3 tool result,
/// 4 node transition, 5 agent with start + duration.
fn base_create_call() -> Value {
    json!({
        "call_id": "call_base_0001",
        "call_type": "phone_call",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, how can I help?", "words": [
                {"word": "Hello,", "start_ms": 0, "end_ms": 300, "confidence": 0.98},
                {"word": "how", "start_ms": 350, "end_ms": 500, "confidence": 0.97},
                {"word": "can", "start_ms": 520, "end_ms": 640, "confidence": 0.99},
                {"word": "I", "start_ms": 650, "end_ms": 700, "confidence": 0.99},
                {"word": "help?", "start_ms": 720, "end_ms": 1000, "confidence": 0.95}
            ], "metadata": {"e2e_latency": 820.5, "interrupted": false}},
            {"role": "user", "text": "Where is my order?", "start_ms": 1500, "end_ms": 2600,
             "metadata": {"transcript_confidence": 0.93, "stt_node_ttfb": 210.0}},
            {"role": "agent_function", "text": "", "start_ms": 2700,
             "tool": {"name": "get_order_status", "request_id": "req_1", "params": {"order": "A1"}, "start_ms": 2700}},
            {"role": "agent_result", "text": "", "start_ms": 3100,
             "tool": {"name": "get_order_status", "request_id": "req_1", "result": {"status": "shipped"},
                      "is_error": false, "start_ms": 2700, "end_ms": 3100}},
            {"role": "node_transition", "text": "", "start_ms": 3200,
             "node": {"from": "greeting", "to": "lookup", "reason": "condition met"}},
            {"role": "agent", "text": "It has shipped.", "start_ms": 3300, "duration_ms": 900}
        ],
        "start_timestamp": 1_763_700_000,
        "end_timestamp": 1_763_700_005,
        "recording_url": "https://recordings.example.com/call_base_0001.wav"
    })
}

/// A valid operation A body.
fn base_send_call_data() -> Value {
    json!({
        "agentId": "agt_demo",
        "callId": "call_a_0001",
        "transcript": [
            {"role": "agent", "content": "Hello, how can I help?", "timestamp": "2026-11-21T10:00:01Z"},
            {"role": "user", "content": "Where is my order?", "timestamp": "2026-11-21T10:00:04Z"}
        ],
        "startedAt": "2026-11-21T10:00:00Z",
        "endedAt": "2026-11-21T10:05:00Z",
        "metadata": {"durationSeconds": 300, "callDirection": "inbound", "callerPhone": "+14155550123", "outcome": "resolved"}
    })
}

const SEGS: &str = "/transcript_with_tool_calls";

use Code::{Format, Length, OneOf, Range, Required, Type};

fn operation_b_cases() -> Vec<Case> {
    let mut cases = vec![
        b("b_base_body_is_valid").ok(),
        b("b_callgen_ten_minute_call_is_valid")
            .body(serde_json::from_slice(&callgen::create_call_minutes(10.0, 7)).expect("callgen JSON"))
            .ok(),
        b("b_callgen_byte_sized_call_is_valid")
            .body(serde_json::from_slice(&callgen::create_call_bytes(60_000, 3)).expect("callgen JSON"))
            .ok(),
        b("b_every_optional_field_set_is_valid")
            .set("/agent_version", json!(3))
            .set("/transcript", json!("Agent: Hello\nUser: Hi"))
            .set("/duration_ms", json!(5000))
            .set("/call_status", json!("call_ended"))
            .set("/disconnection_reason", json!("user_hangup"))
            .set("/caller_phone_number", json!("+14155550123"))
            .set("/call_successful", json!(true))
            .set("/user_sentiment", json!("positive"))
            .set("/in_voicemail", json!(false))
            .set("/collected_dynamic_variables", json!({"name": "Alex"}))
            .set("/call_cost", json!(12.5))
            .set("/call_analysis", json!({"summary": "ok", "nested": {"a": [1, 2]}}))
            .set(
                "/metadata",
                json!({"ai_models": {"asr_model": "nova-3", "llm_model": "gpt", "tts_model": "sonic"},
                       "usage_token": {"stt_duration_seconds": 12.5, "llm_token": 900, "tts_characters_count": 300},
                       "anything": ["else"]}),
            )
            .set("/general_meta_data_raw", json!({"campaign": "winter"}))
            .set("/recording_multi_channel_url", json!("https://recordings.example.com/mc.wav"))
            .ok(),
        b("b_every_optional_field_null_is_valid")
            .set("/agent_version", Value::Null)
            .set("/transcript", Value::Null)
            .set("/duration_ms", Value::Null)
            .set("/call_status", Value::Null)
            .set("/disconnection_reason", Value::Null)
            .set("/caller_phone_number", Value::Null)
            .set("/call_successful", Value::Null)
            .set("/user_sentiment", Value::Null)
            .set("/in_voicemail", Value::Null)
            .set("/call_cost", Value::Null)
            .set("/recording_multi_channel_url", Value::Null)
            .set("/metadata", Value::Null)
            .set("/general_meta_data_raw", Value::Null)
            .ok(),
        // Required fields.
        b("b_empty_object_lists_every_required_field").body(json!({})).invalid(&[
            ("/call_id", Required),
            ("/call_type", Required),
            ("/transcript_with_tool_calls", Required),
            ("/start_timestamp", Required),
            ("/end_timestamp", Required),
            ("/recording_url", Required),
        ]),
        b("b_call_id_null_is_required").set("/call_id", Value::Null).invalid(&[("/call_id", Required)]),
        b("b_transcript_with_tool_calls_null_is_required")
            .set(SEGS, Value::Null)
            .invalid(&[(SEGS, Required)]),
        // Lengths: characters, not bytes (é is two bytes in UTF-8).
        b("b_call_id_of_200_ascii_characters_is_valid").set("/call_id", json!(chars('x', 200))).ok(),
        b("b_call_id_of_201_ascii_characters_is_too_long")
            .set("/call_id", json!(chars('x', 201)))
            .invalid(&[("/call_id", Length)]),
        b("b_call_id_of_100_four_byte_characters_is_valid").set("/call_id", json!(chars('📞', 100))).ok(),
        // transcript_with_tool_calls: at least one item, an array of objects.
        b("b_transcript_with_tool_calls_empty_is_too_short")
            .set(SEGS, json!([]))
            .invalid(&[(SEGS, Length)]),
        b("b_transcript_with_tool_calls_object_is_a_type_error")
            .set(SEGS, json!({"role": "agent"}))
            .invalid(&[(SEGS, Type)]),
        b("b_transcript_with_tool_calls_string_is_a_type_error")
            .set(SEGS, json!("Agent: hi"))
            .invalid(&[(SEGS, Type)]),
        // recording_url: any string, no URL scheme enforced.
        b("b_recording_url_placeholder_is_valid").set("/recording_url", json!("pipecat://no-recording")).ok(),
        b("b_recording_url_not_a_url_is_valid").set("/recording_url", json!("no recording")).ok(),
        // user_sentiment.
        b("b_user_sentiment_positive_capitalised_is_valid").set("/user_sentiment", json!("Positive")).ok(),
        b("b_user_sentiment_neutral_upper_case_is_valid").set("/user_sentiment", json!("NEUTRAL")).ok(),
        b("b_user_sentiment_negative_is_valid").set("/user_sentiment", json!("negative")).ok(),
        b("b_user_sentiment_unknown_is_valid").set("/user_sentiment", json!("unknown")).ok(),
        b("b_user_sentiment_ecstatic_is_not_allowed")
            .set("/user_sentiment", json!("ecstatic"))
            .invalid(&[("/user_sentiment", OneOf)]),
        b("b_user_sentiment_empty_is_not_allowed")
            .set("/user_sentiment", json!(""))
            .invalid(&[("/user_sentiment", OneOf)]),
        b("b_user_sentiment_of_51_characters_is_too_long_and_not_allowed")
            .set("/user_sentiment", json!(chars('p', 51)))
            .invalid(&[("/user_sentiment", Length), ("/user_sentiment", OneOf)]),
        b("b_user_sentiment_of_50_characters_is_only_not_allowed")
            .set("/user_sentiment", json!(chars('p', 50)))
            .invalid(&[("/user_sentiment", OneOf)]),
        b("b_user_sentiment_number_is_a_type_error")
            .set("/user_sentiment", json!(1))
            .invalid(&[("/user_sentiment", Type)]),
        // agent_version >= 0, an integer.
        b("b_agent_version_minus_one_is_out_of_range")
            .set("/agent_version", json!(-1))
            .invalid(&[("/agent_version", Range)]),
        b("b_agent_version_zero_is_valid").set("/agent_version", json!(0)).ok(),
        b("b_agent_version_whole_decimal_is_valid").set("/agent_version", json!(2.0)).ok(),
        b("b_agent_version_fraction_is_a_type_error")
            .set("/agent_version", json!(2.5))
            .invalid(&[("/agent_version", Type)]),
        b("b_agent_version_string_is_a_type_error")
            .set("/agent_version", json!("1"))
            .invalid(&[("/agent_version", Type)]),
        // duration_ms.
        b("b_duration_ms_negative_is_out_of_range")
            .set("/duration_ms", json!(-1))
            .invalid(&[("/duration_ms", Range)]),
        b("b_duration_ms_zero_is_valid").set("/duration_ms", json!(0)).ok(),
        b("b_duration_ms_string_is_a_type_error")
            .set("/duration_ms", json!("5000"))
            .invalid(&[("/duration_ms", Type)]),
        // Other wrong JSON types.
        b("b_call_id_number_is_a_type_error").set("/call_id", json!(12345)).invalid(&[("/call_id", Type)]),
        b("b_call_id_object_is_a_type_error").set("/call_id", json!({"id": "x"})).invalid(&[("/call_id", Type)]),
        b("b_call_type_boolean_is_a_type_error").set("/call_type", json!(true)).invalid(&[("/call_type", Type)]),
        b("b_recording_url_array_is_a_type_error")
            .set("/recording_url", json!(["a"]))
            .invalid(&[("/recording_url", Type)]),
        b("b_transcript_number_is_a_type_error").set("/transcript", json!(5)).invalid(&[("/transcript", Type)]),
        b("b_call_successful_string_is_a_type_error")
            .set("/call_successful", json!("yes"))
            .invalid(&[("/call_successful", Type)]),
        b("b_in_voicemail_number_is_a_type_error")
            .set("/in_voicemail", json!(1))
            .invalid(&[("/in_voicemail", Type)]),
        b("b_call_cost_string_is_a_type_error").set("/call_cost", json!("1.20")).invalid(&[("/call_cost", Type)]),
        b("b_collected_dynamic_variables_array_is_a_type_error")
            .set("/collected_dynamic_variables", json!([]))
            .invalid(&[("/collected_dynamic_variables", Type)]),
        b("b_call_analysis_string_is_a_type_error")
            .set("/call_analysis", json!("fine"))
            .invalid(&[("/call_analysis", Type)]),
        b("b_general_meta_data_raw_number_is_a_type_error")
            .set("/general_meta_data_raw", json!(5))
            .invalid(&[("/general_meta_data_raw", Type)]),
        b("b_call_status_number_is_a_type_error").set("/call_status", json!(7)).invalid(&[("/call_status", Type)]),
        // Call metadata: typed members, any other key accepted.
        b("b_metadata_asr_model_number_is_a_type_error")
            .set("/metadata", json!({"ai_models": {"asr_model": 3}}))
            .invalid(&[("/metadata/ai_models/asr_model", Type)]),
        b("b_metadata_llm_and_tts_model_not_strings_are_type_errors")
            .set("/metadata", json!({"ai_models": {"llm_model": ["gpt"], "tts_model": true}}))
            .invalid(&[("/metadata/ai_models/llm_model", Type), ("/metadata/ai_models/tts_model", Type)]),
        b("b_metadata_usage_token_strings_are_type_errors")
            .set(
                "/metadata",
                json!({"usage_token": {"stt_duration_seconds": "12", "llm_token": "many", "tts_characters_count": {}}}),
            )
            .invalid(&[
                ("/metadata/usage_token/llm_token", Type),
                ("/metadata/usage_token/stt_duration_seconds", Type),
                ("/metadata/usage_token/tts_characters_count", Type),
            ]),
        b("b_metadata_ai_models_not_an_object_is_a_type_error")
            .set("/metadata", json!({"ai_models": "nova-3"}))
            .invalid(&[("/metadata/ai_models", Type)]),
        b("b_metadata_usage_token_array_is_a_type_error")
            .set("/metadata", json!({"usage_token": [1]}))
            .invalid(&[("/metadata/usage_token", Type)]),
        b("b_metadata_array_is_a_type_error").set("/metadata", json!([])).invalid(&[("/metadata", Type)]),
        b("b_metadata_other_keys_of_any_type_are_valid")
            .set(
                "/metadata",
                json!({"ai_models": {"asr_model": "nova-3", "vad_model": 5}, "usage_token": {"cost": "high"}, "x": [1]}),
            )
            .ok(),
        b("b_metadata_null_members_are_valid")
            .set("/metadata", json!({"ai_models": {"asr_model": null}, "usage_token": null}))
            .ok(),
    ];
    cases.extend(length_limit_cases());
    cases.extend(timestamp_cases());
    cases.extend(segment_cases());
    cases.extend(unknown_field_cases());
    cases.push(
        b("b_several_violations_are_reported_at_once")
            .set("/call_id", json!(""))
            .remove("/recording_url")
            .set("/user_sentiment", json!("ecstatic"))
            .set("/agent_version", json!(-1))
            .set("/end_timestamp", json!(1_763_699_999))
            .set(&format!("{SEGS}/1/role"), json!("bot"))
            .set(&format!("{SEGS}/0/words/1/end_ms"), json!(340))
            .remove(&format!("{SEGS}/4/node/from"))
            .set("/metadata", json!({"ai_models": {"asr_model": 1}}))
            .invalid(&[
                ("/call_id", Length),
                ("/recording_url", Required),
                ("/user_sentiment", OneOf),
                ("/agent_version", Range),
                ("/end_timestamp", Range),
                ("/transcript_with_tool_calls/1/role", OneOf),
                ("/transcript_with_tool_calls/0/words/1/end_ms", Range),
                ("/transcript_with_tool_calls/4/node/from", Required),
                ("/metadata/ai_models/asr_model", Type),
            ]),
    );
    cases.extend(unreadable_cases(Operation::CreateCall, "b"));
    cases
}

/// Both sides of every string limit, counted in characters.
fn length_limit_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // (field, minimum, maximum)
    let limits = [
        ("call_id", 1, 200),
        ("call_type", 1, 100),
        ("recording_url", 1, 1024),
        ("recording_multi_channel_url", 0, 1024),
        ("call_status", 0, 100),
        ("disconnection_reason", 0, 100),
        ("caller_phone_number", 0, 50),
    ];
    for (field, min, max) in limits {
        let pointer = format!("/{field}");
        cases.push(
            b(format!("b_{field}_of_{max}_two_byte_characters_is_valid")).set(&pointer, json!(chars('é', max))).ok(),
        );
        cases.push(
            b(format!("b_{field}_of_{}_two_byte_characters_is_too_long", max + 1))
                .set(&pointer, json!(chars('é', max + 1)))
                .invalid(&[(&pointer, Length)]),
        );
        if min == 1 {
            cases.push(
                b(format!("b_{field}_empty_is_too_short")).set(&pointer, json!("")).invalid(&[(&pointer, Length)]),
            );
            cases.push(b(format!("b_{field}_of_1_character_is_valid")).set(&pointer, json!("é")).ok());
        } else {
            cases.push(b(format!("b_{field}_empty_is_valid")).set(&pointer, json!("")).ok());
        }
        cases.push(
            b(format!("b_{field}_missing_is_{}", if min == 1 { "required" } else { "valid" }))
                .remove_or_skip(&pointer)
                .case(if min == 1 { invalid(&[(&pointer, Required)]) } else { Outcome::Ok }),
        );
    }
    cases
}

impl Draft {
    /// Removes `pointer` when the base body has it (optional fields are absent from it).
    fn remove_or_skip(mut self, pointer: &str) -> Self {
        if self.body.pointer(pointer).is_some() {
            remove_at(&mut self.body, pointer);
        }
        self
    }
}

/// start_timestamp / end_timestamp: seconds below 10^11, milliseconds from it, each
/// normalised on its own; zero, negative and finer than milliseconds refused.
fn timestamp_cases() -> Vec<Case> {
    let ts = |name: &str, start: Value, end: Value| b(name).set("/start_timestamp", start).set("/end_timestamp", end);
    vec![
        ts("b_end_equal_to_start_is_valid", json!(1_763_700_000), json!(1_763_700_000)).ok(),
        ts("b_end_before_start_in_seconds_is_out_of_range", json!(1_763_700_005), json!(1_763_700_004))
            .invalid(&[("/end_timestamp", Range)]),
        ts(
            "b_end_before_start_in_milliseconds_is_out_of_range",
            json!(1_763_700_005_000_u64),
            json!(1_763_700_004_999_u64),
        )
        .invalid(&[("/end_timestamp", Range)]),
        ts(
            "b_start_in_seconds_end_in_milliseconds_after_it_is_valid",
            json!(1_763_700_000),
            json!(1_763_700_060_000_u64),
        )
        .ok(),
        ts("b_start_in_seconds_end_in_milliseconds_equal_is_valid", json!(1_763_700_000), json!(1_763_700_000_000_u64))
            .ok(),
        ts(
            "b_start_in_seconds_end_in_milliseconds_one_ms_before_is_out_of_range",
            json!(1_763_700_000),
            json!(1_763_699_999_999_u64),
        )
        .invalid(&[("/end_timestamp", Range)]),
        ts(
            "b_start_in_milliseconds_end_in_seconds_after_it_is_valid",
            json!(1_763_700_000_000_u64),
            json!(1_763_700_001),
        )
        .ok(),
        ts(
            "b_start_in_milliseconds_end_in_seconds_before_it_is_out_of_range",
            json!(1_763_700_001_000_u64),
            json!(1_763_700_000),
        )
        .invalid(&[("/end_timestamp", Range)]),
        // 10^11 - 1 is seconds (year 5138), 10^11 is milliseconds (1973).
        ts(
            "b_start_ten_to_the_eleven_minus_one_is_seconds_so_end_ten_to_the_eleven_ms_is_before_it",
            json!(99_999_999_999_u64),
            json!(100_000_000_000_u64),
        )
        .invalid(&[("/end_timestamp", Range)]),
        ts(
            "b_ten_to_the_eleven_minus_one_seconds_on_both_is_valid",
            json!(99_999_999_999_u64),
            json!(99_999_999_999_u64),
        )
        .ok(),
        ts("b_ten_to_the_eleven_milliseconds_on_both_is_valid", json!(100_000_000_000_u64), json!(100_000_000_000_u64))
            .ok(),
        ts("b_largest_millisecond_value_is_valid", json!(1_763_700_000), json!(99_999_999_999_999_u64)).ok(),
        ts("b_ten_to_the_fourteen_is_not_milliseconds", json!(1_763_700_000), json!(100_000_000_000_000_u64))
            .invalid(&[("/end_timestamp", Range)]),
        ts("b_start_zero_is_out_of_range", json!(0), json!(1_763_700_000)).invalid(&[("/start_timestamp", Range)]),
        ts("b_end_zero_is_out_of_range", json!(1_763_700_000), json!(0)).invalid(&[("/end_timestamp", Range)]),
        ts("b_start_negative_is_out_of_range", json!(-1_763_700_000), json!(1_763_700_000))
            .invalid(&[("/start_timestamp", Range)]),
        ts("b_both_negative_are_both_out_of_range", json!(-1), json!(-2))
            .invalid(&[("/start_timestamp", Range), ("/end_timestamp", Range)]),
        ts("b_start_in_microseconds_is_out_of_range", json!(1_763_700_000_000_000_u64), json!(1_763_700_000))
            .invalid(&[("/start_timestamp", Range)]),
        ts("b_microseconds_as_a_decimal_are_out_of_range", json!(1.7e15), json!(1.7e15))
            .invalid(&[("/start_timestamp", Range), ("/end_timestamp", Range)]),
        ts("b_end_in_nanoseconds_is_out_of_range", json!(1_763_700_000), json!(1_763_700_000_000_000_000_u64))
            .invalid(&[("/end_timestamp", Range)]),
        ts("b_integer_beyond_u64_is_out_of_range", json!(1_763_700_000), json!(1e20))
            .invalid(&[("/end_timestamp", Range)]),
        ts("b_decimal_seconds_are_valid", json!(1_763_700_000.25), json!(1_763_700_005.75)).ok(),
        ts("b_decimal_seconds_end_before_start_is_out_of_range", json!(1_763_700_000.5), json!(1_763_700_000.25))
            .invalid(&[("/end_timestamp", Range)]),
        ts("b_decimal_milliseconds_are_valid", json!(1_763_700_000_000.5), json!(1_763_700_000_001.5)).ok(),
        ts("b_start_timestamp_string_is_a_type_error", json!("1763700000"), json!(1_763_700_005))
            .invalid(&[("/start_timestamp", Type)]),
        ts("b_end_timestamp_boolean_is_a_type_error", json!(1_763_700_000), json!(true))
            .invalid(&[("/end_timestamp", Type)]),
        b("b_start_timestamp_missing_is_required")
            .remove("/start_timestamp")
            .invalid(&[("/start_timestamp", Required)]),
        b("b_end_timestamp_missing_is_required").remove("/end_timestamp").invalid(&[("/end_timestamp", Required)]),
    ]
}

fn seg(i: usize, rest: &str) -> String {
    format!("{SEGS}/{i}{rest}")
}

/// Segments: roles, timing of messages, node transitions, millisecond fields.
fn segment_cases() -> Vec<Case> {
    vec![
        // role
        b("b_segment_role_outside_the_list_is_not_allowed")
            .set(&seg(0, "/role"), json!("bot"))
            .invalid(&[(&seg(0, "/role"), OneOf)]),
        b("b_segment_role_is_case_sensitive")
            .set(&seg(1, "/role"), json!("User"))
            .invalid(&[(&seg(1, "/role"), OneOf)]),
        b("b_segment_role_missing_is_required").remove(&seg(1, "/role")).invalid(&[(&seg(1, "/role"), Required)]),
        b("b_segment_role_null_is_required")
            .set(&seg(1, "/role"), Value::Null)
            .invalid(&[(&seg(1, "/role"), Required)]),
        b("b_segment_role_number_is_a_type_error").set(&seg(1, "/role"), json!(1)).invalid(&[(&seg(1, "/role"), Type)]),
        // timing of user / agent segments
        b("b_user_segment_without_timing_is_required_at_the_segment")
            .remove(&seg(1, "/start_ms"))
            .remove(&seg(1, "/end_ms"))
            .invalid(&[(&seg(1, ""), Required)]),
        b("b_user_segment_with_start_only_lacks_timing").remove(&seg(1, "/end_ms")).invalid(&[(&seg(1, ""), Required)]),
        b("b_user_segment_with_end_and_duration_but_no_start_lacks_timing")
            .remove(&seg(1, "/start_ms"))
            .set(&seg(1, "/duration_ms"), json!(1100))
            .invalid(&[(&seg(1, ""), Required)]),
        b("b_user_segment_with_start_and_duration_is_valid")
            .remove(&seg(1, "/end_ms"))
            .set(&seg(1, "/duration_ms"), json!(1100))
            .ok(),
        b("b_agent_segment_with_words_only_is_valid")
            .remove(&seg(5, "/start_ms"))
            .remove(&seg(5, "/duration_ms"))
            .set(&seg(5, "/words"), json!([{"word": "It", "start_ms": 3300, "end_ms": 3400}]))
            .ok(),
        b("b_agent_segment_with_empty_words_and_no_times_lacks_timing")
            .set(&seg(0, "/words"), json!([]))
            .invalid(&[(&seg(0, ""), Required)]),
        b("b_agent_segment_with_start_and_duration_only_is_valid").ok(),
        b("b_tool_segments_need_no_timing")
            .remove(&seg(2, "/start_ms"))
            .remove(&seg(3, "/start_ms"))
            .remove(&seg(2, "/tool/start_ms"))
            .ok(),
        b("b_node_transition_needs_no_timing").remove(&seg(4, "/start_ms")).ok(),
        // node transitions
        b("b_node_transition_without_node_is_required")
            .remove(&seg(4, "/node"))
            .invalid(&[(&seg(4, "/node"), Required)]),
        b("b_node_transition_with_null_node_is_required")
            .set(&seg(4, "/node"), Value::Null)
            .invalid(&[(&seg(4, "/node"), Required)]),
        b("b_node_transition_without_from_is_required")
            .remove(&seg(4, "/node/from"))
            .invalid(&[(&seg(4, "/node/from"), Required)]),
        b("b_node_transition_without_to_is_required")
            .remove(&seg(4, "/node/to"))
            .invalid(&[(&seg(4, "/node/to"), Required)]),
        b("b_node_transition_with_empty_node_requires_from_and_to")
            .set(&seg(4, "/node"), json!({}))
            .invalid(&[(&seg(4, "/node/from"), Required), (&seg(4, "/node/to"), Required)]),
        b("b_node_transition_with_string_node_is_only_a_type_error")
            .set(&seg(4, "/node"), json!("greeting->lookup"))
            .invalid(&[(&seg(4, "/node"), Type)]),
        b("b_node_from_number_is_a_type_error")
            .set(&seg(4, "/node/from"), json!(3))
            .invalid(&[(&seg(4, "/node/from"), Type)]),
        b("b_node_without_reason_is_valid").remove(&seg(4, "/node/reason")).ok(),
        // end before start
        b("b_word_end_before_its_start_is_out_of_range_at_the_word")
            .set(&seg(0, "/words/1/end_ms"), json!(349))
            .invalid(&[(&seg(0, "/words/1/end_ms"), Range)]),
        b("b_word_end_equal_to_its_start_is_valid").set(&seg(0, "/words/1/end_ms"), json!(350)).ok(),
        b("b_segment_end_before_its_start_is_out_of_range")
            .set(&seg(1, "/end_ms"), json!(1499))
            .invalid(&[(&seg(1, "/end_ms"), Range)]),
        b("b_tool_end_before_its_start_is_out_of_range")
            .set(&seg(3, "/tool/end_ms"), json!(2600))
            .invalid(&[(&seg(3, "/tool/end_ms"), Range)]),
        // negative and too-large milliseconds
        b("b_segment_start_negative_is_out_of_range")
            .set(&seg(1, "/start_ms"), json!(-1))
            .invalid(&[(&seg(1, "/start_ms"), Range)]),
        b("b_segment_duration_negative_is_out_of_range")
            .set(&seg(5, "/duration_ms"), json!(-900))
            .invalid(&[(&seg(5, "/duration_ms"), Range)]),
        b("b_word_start_negative_is_out_of_range")
            .set(&seg(0, "/words/0/start_ms"), json!(-5))
            .invalid(&[(&seg(0, "/words/0/start_ms"), Range)]),
        b("b_word_end_negative_decimal_is_out_of_range")
            .set(&seg(0, "/words/0/end_ms"), json!(-0.5))
            .invalid(&[(&seg(0, "/words/0/end_ms"), Range)]),
        b("b_tool_start_negative_is_out_of_range")
            .set(&seg(2, "/tool/start_ms"), json!(-1))
            .invalid(&[(&seg(2, "/tool/start_ms"), Range)]),
        b("b_segment_end_beyond_two_to_the_53_is_out_of_range")
            .set(&seg(1, "/end_ms"), json!(9_007_199_254_740_992_u64))
            .invalid(&[(&seg(1, "/end_ms"), Range)]),
        // decimals accepted
        b("b_decimal_milliseconds_in_segments_words_and_tools_are_valid")
            .set(&seg(1, "/start_ms"), json!(1500.5))
            .set(&seg(1, "/end_ms"), json!(2600.25))
            .set(&seg(0, "/words/0/start_ms"), json!(0.4))
            .set(&seg(0, "/words/0/end_ms"), json!(300.7))
            .set(&seg(3, "/tool/start_ms"), json!(2700.1))
            .set(&seg(3, "/tool/end_ms"), json!(3100.9))
            .set(&seg(5, "/duration_ms"), json!(900.5))
            .ok(),
        // wrong types inside segments
        b("b_segment_that_is_a_string_is_only_a_type_error_at_the_segment")
            .set(&seg(0, ""), json!("Agent: hello"))
            .invalid(&[(&seg(0, ""), Type)]),
        b("b_segment_that_is_null_is_a_type_error").set(&seg(2, ""), Value::Null).invalid(&[(&seg(2, ""), Type)]),
        b("b_segment_that_is_an_array_is_a_type_error")
            .set(&seg(5, ""), json!([{"role": "agent"}]))
            .invalid(&[(&seg(5, ""), Type)]),
        b("b_wrong_typed_segment_keeps_the_indexes_of_the_others")
            .set(&seg(0, ""), json!(42))
            .set(&seg(1, "/role"), json!("bot"))
            .invalid(&[(&seg(0, ""), Type), (&seg(1, "/role"), OneOf)]),
        b("b_segment_text_number_is_a_type_error").set(&seg(1, "/text"), json!(5)).invalid(&[(&seg(1, "/text"), Type)]),
        b("b_segment_start_ms_string_is_a_type_error_and_leaves_no_timing")
            .set(&seg(1, "/start_ms"), json!("1500"))
            .invalid(&[(&seg(1, "/start_ms"), Type), (&seg(1, ""), Required)]),
        b("b_words_object_is_a_type_error_and_leaves_no_timing")
            .set(&seg(0, "/words"), json!({"word": "Hello"}))
            .invalid(&[(&seg(0, "/words"), Type), (&seg(0, ""), Required)]),
        b("b_word_that_is_a_string_is_a_type_error_at_the_word")
            .set(&seg(0, "/words/2"), json!("can"))
            .invalid(&[(&seg(0, "/words/2"), Type)]),
        b("b_word_confidence_string_is_a_type_error")
            .set(&seg(0, "/words/0/confidence"), json!("high"))
            .invalid(&[(&seg(0, "/words/0/confidence"), Type)]),
        b("b_tool_string_is_a_type_error").set(&seg(2, "/tool"), json!("lookup")).invalid(&[(&seg(2, "/tool"), Type)]),
        b("b_tool_is_error_string_is_a_type_error")
            .set(&seg(3, "/tool/is_error"), json!("no"))
            .invalid(&[(&seg(3, "/tool/is_error"), Type)]),
        b("b_segment_metadata_interrupted_string_is_a_type_error")
            .set(&seg(0, "/metadata/interrupted"), json!("no"))
            .invalid(&[(&seg(0, "/metadata/interrupted"), Type)]),
        b("b_segment_metadata_latency_string_is_a_type_error")
            .set(&seg(0, "/metadata/e2e_latency"), json!("820ms"))
            .invalid(&[(&seg(0, "/metadata/e2e_latency"), Type)]),
        b("b_segment_metadata_array_is_a_type_error")
            .set(&seg(1, "/metadata"), json!([]))
            .invalid(&[(&seg(1, "/metadata"), Type)]),
    ]
}

fn unknown_field_cases() -> Vec<Case> {
    vec![
        b("b_unknown_top_level_fields_are_valid")
            .set("/provider", json!("retell"))
            .set("/x-custom", json!({"deep": [1, {"a": null}]}))
            .set("/call_id_v2", json!(5))
            .ok(),
        b("b_unknown_fields_in_segments_words_tools_and_nodes_are_valid")
            .set(&seg(0, "/speaker_id"), json!(7))
            .set(&seg(0, "/words/0/punctuated_word"), json!("Hello,"))
            .set(&seg(3, "/tool/latency_ms"), json!("12"))
            .set(&seg(4, "/node/confidence"), json!([0.9]))
            .set(&seg(1, "/metadata/custom"), json!(true))
            .ok(),
    ]
}

/// 400 for bodies that are not JSON or not a JSON object.
fn unreadable_cases(op: Operation, prefix: &str) -> Vec<Case> {
    let bodies: [(&str, &[u8]); 14] = [
        ("empty_body", b""),
        ("white_space", b"  \n "),
        ("plain_text", b"call_id=1"),
        ("truncated_object", b"{\"call_id\": \"x\""),
        ("missing_value", b"{\"call_id\": }"),
        ("trailing_comma", b"{\"call_id\": \"x\",}"),
        ("trailing_garbage", b"{} x"),
        ("invalid_utf8", b"{\"call_id\": \"\xff\"}"),
        ("array", b"[]"),
        ("array_of_objects", b"[{\"call_id\": \"x\"}]"),
        ("string", b"\"{}\""),
        ("number", b"42"),
        ("null", b"null"),
        ("boolean", b"true"),
    ];
    bodies
        .into_iter()
        .map(|(name, body)| raw(&format!("{prefix}_{name}_is_unreadable"), op, body, Outcome::Unreadable))
        .collect()
}

fn operation_a_cases() -> Vec<Case> {
    let mut cases = vec![
        a("a_base_body_is_valid").ok(),
        a("a_callgen_call_is_valid")
            .body(
                serde_json::from_slice(&callgen::send_call_data(&callgen::Options {
                    size: callgen::Size::Minutes(5.0),
                    seed: 11,
                    call_id: None,
                }))
                .expect("callgen JSON"),
            )
            .ok(),
        a("a_minimal_body_is_valid").body(json!({"agentId": "a", "callId": "c", "transcript": []})).ok(),
        a("a_empty_object_lists_every_required_field").body(json!({})).invalid(&[
            ("/agentId", Required),
            ("/callId", Required),
            ("/transcript", Required),
        ]),
        // agentId / callId
        a("a_agent_id_missing_is_required").remove("/agentId").invalid(&[("/agentId", Required)]),
        a("a_agent_id_null_is_required").set("/agentId", Value::Null).invalid(&[("/agentId", Required)]),
        a("a_agent_id_empty_is_too_short").set("/agentId", json!("")).invalid(&[("/agentId", Length)]),
        a("a_agent_id_of_200_two_byte_characters_is_valid").set("/agentId", json!(chars('é', 200))).ok(),
        a("a_agent_id_of_201_two_byte_characters_is_too_long")
            .set("/agentId", json!(chars('é', 201)))
            .invalid(&[("/agentId", Length)]),
        a("a_agent_id_number_is_a_type_error").set("/agentId", json!(17)).invalid(&[("/agentId", Type)]),
        a("a_call_id_missing_is_required").remove("/callId").invalid(&[("/callId", Required)]),
        a("a_call_id_empty_is_too_short").set("/callId", json!("")).invalid(&[("/callId", Length)]),
        a("a_call_id_of_1_character_is_valid").set("/callId", json!("é")).ok(),
        a("a_call_id_of_200_two_byte_characters_is_valid").set("/callId", json!(chars('é', 200))).ok(),
        a("a_call_id_of_201_two_byte_characters_is_too_long")
            .set("/callId", json!(chars('é', 201)))
            .invalid(&[("/callId", Length)]),
        a("a_call_id_number_is_a_type_error").set("/callId", json!(12345)).invalid(&[("/callId", Type)]),
        // transcript
        a("a_transcript_missing_is_required").remove("/transcript").invalid(&[("/transcript", Required)]),
        a("a_transcript_null_is_required").set("/transcript", Value::Null).invalid(&[("/transcript", Required)]),
        a("a_transcript_empty_is_valid").set("/transcript", json!([])).ok(),
        a("a_transcript_object_is_a_type_error")
            .set("/transcript", json!({"role": "agent", "content": "hi"}))
            .invalid(&[("/transcript", Type)]),
        a("a_transcript_string_is_a_type_error")
            .set("/transcript", json!("Agent: hi"))
            .invalid(&[("/transcript", Type)]),
        a("a_item_without_role_is_required").remove("/transcript/0/role").invalid(&[("/transcript/0/role", Required)]),
        a("a_item_role_empty_is_too_short")
            .set("/transcript/1/role", json!(""))
            .invalid(&[("/transcript/1/role", Length)]),
        a("a_item_role_number_is_a_type_error")
            .set("/transcript/0/role", json!(1))
            .invalid(&[("/transcript/0/role", Type)]),
        a("a_item_role_other_than_agent_or_user_is_valid").set("/transcript/0/role", json!("system")).ok(),
        a("a_item_without_content_is_required")
            .remove("/transcript/1/content")
            .invalid(&[("/transcript/1/content", Required)]),
        a("a_item_content_number_is_a_type_error")
            .set("/transcript/1/content", json!(42))
            .invalid(&[("/transcript/1/content", Type)]),
        a("a_item_content_object_is_a_type_error")
            .set("/transcript/0/content", json!({"text": "hi"}))
            .invalid(&[("/transcript/0/content", Type)]),
        a("a_item_content_empty_is_valid").set("/transcript/0/content", json!("")).ok(),
        a("a_item_without_timestamp_is_valid").remove("/transcript/0/timestamp").ok(),
        a("a_item_timestamp_not_rfc3339_is_kept_and_valid").set("/transcript/0/timestamp", json!("00:01")).ok(),
        a("a_item_timestamp_number_is_a_type_error")
            .set("/transcript/0/timestamp", json!(1_763_700_000))
            .invalid(&[("/transcript/0/timestamp", Type)]),
        a("a_item_that_is_a_string_is_only_a_type_error_at_the_item")
            .set("/transcript/0", json!("Agent: hello"))
            .invalid(&[("/transcript/0", Type)]),
        a("a_item_that_is_null_is_a_type_error").set("/transcript/1", Value::Null).invalid(&[("/transcript/1", Type)]),
        // startedAt / endedAt
        a("a_started_at_not_rfc3339_is_a_format_error")
            .set("/startedAt", json!("yesterday"))
            .invalid(&[("/startedAt", Format)]),
        a("a_started_at_with_a_space_instead_of_t_is_a_format_error")
            .set("/startedAt", json!("2026-11-21 10:00:00"))
            .invalid(&[("/startedAt", Format)]),
        a("a_started_at_date_only_is_a_format_error")
            .set("/startedAt", json!("2026-11-21"))
            .invalid(&[("/startedAt", Format)]),
        a("a_started_at_empty_is_a_format_error").set("/startedAt", json!("")).invalid(&[("/startedAt", Format)]),
        a("a_ended_at_not_rfc3339_is_a_format_error").set("/endedAt", json!("later")).invalid(&[("/endedAt", Format)]),
        a("a_started_at_number_is_a_type_error")
            .set("/startedAt", json!(1_763_700_000))
            .invalid(&[("/startedAt", Type)]),
        a("a_ended_at_before_started_at_is_out_of_range")
            .set("/endedAt", json!("2026-11-21T09:59:59Z"))
            .invalid(&[("/endedAt", Range)]),
        a("a_ended_at_equal_to_started_at_is_valid").set("/endedAt", json!("2026-11-21T10:00:00Z")).ok(),
        a("a_ended_at_later_in_absolute_time_but_earlier_on_the_clock_is_valid")
            .set("/startedAt", json!("2026-11-21T10:00:00+01:00"))
            .set("/endedAt", json!("2026-11-21T09:30:00Z"))
            .ok(),
        a("a_ended_at_earlier_in_absolute_time_but_later_on_the_clock_is_out_of_range")
            .set("/startedAt", json!("2026-11-21T10:00:00Z"))
            .set("/endedAt", json!("2026-11-21T10:30:00+01:00"))
            .invalid(&[("/endedAt", Range)]),
        a("a_started_at_and_ended_at_with_fractions_are_valid")
            .set("/startedAt", json!("2026-11-21T10:00:00.123Z"))
            .set("/endedAt", json!("2026-11-21T10:00:00.124Z"))
            .ok(),
        a("a_started_at_without_ended_at_is_valid").remove("/endedAt").ok(),
        a("a_ended_at_without_started_at_is_valid").remove("/startedAt").ok(),
        a("a_bad_started_at_skips_the_order_check")
            .set("/startedAt", json!("soon"))
            .set("/endedAt", json!("2000-01-01T00:00:00Z"))
            .invalid(&[("/startedAt", Format)]),
        // metadata
        a("a_duration_seconds_negative_is_out_of_range")
            .set("/metadata/durationSeconds", json!(-1))
            .invalid(&[("/metadata/durationSeconds", Range)]),
        a("a_duration_seconds_zero_is_valid").set("/metadata/durationSeconds", json!(0)).ok(),
        a("a_duration_seconds_decimal_is_valid").set("/metadata/durationSeconds", json!(12.5)).ok(),
        a("a_duration_seconds_string_is_a_type_error")
            .set("/metadata/durationSeconds", json!("300"))
            .invalid(&[("/metadata/durationSeconds", Type)]),
        a("a_metadata_string_fields_of_other_types_are_type_errors")
            .set("/metadata/callDirection", json!(1))
            .set("/metadata/callerPhone", json!(14_155_550_123_u64))
            .set("/metadata/outcome", json!(["resolved"]))
            .invalid(&[
                ("/metadata/callDirection", Type),
                ("/metadata/callerPhone", Type),
                ("/metadata/outcome", Type),
            ]),
        a("a_metadata_string_is_a_type_error").set("/metadata", json!("inbound")).invalid(&[("/metadata", Type)]),
        a("a_metadata_empty_is_valid").set("/metadata", json!({})).ok(),
        // unknown fields
        a("a_unknown_fields_at_top_level_in_items_and_metadata_are_valid")
            .set("/provider", json!({"name": "vapi"}))
            .set("/transcript/0/confidence", json!(0.9))
            .set("/metadata/campaign", json!("winter"))
            .ok(),
        a("a_several_violations_are_reported_at_once")
            .set("/agentId", json!(""))
            .remove("/callId")
            .set("/transcript/0/role", json!(""))
            .remove("/transcript/1/content")
            .set("/startedAt", json!("yesterday"))
            .set("/endedAt", json!(5))
            .set("/metadata/durationSeconds", json!(-3))
            .invalid(&[
                ("/agentId", Length),
                ("/callId", Required),
                ("/transcript/0/role", Length),
                ("/transcript/1/content", Required),
                ("/startedAt", Format),
                ("/endedAt", Type),
                ("/metadata/durationSeconds", Range),
            ]),
    ];
    cases.extend(unreadable_cases(Operation::SendCallData, "a"));
    cases
}

/// What `ingest` answered, in the form of an [`Outcome`], plus the raw violations.
fn run(case: &Case) -> (Outcome, Vec<Violation>) {
    match ingest(case.op, &case.body) {
        Ok(_) => (Outcome::Ok, Vec::new()),
        Err(Rejection::Unreadable(_)) => (Outcome::Unreadable, Vec::new()),
        Err(Rejection::OverLimit(v)) => (Outcome::Invalid(vec![(v.pointer.clone(), v.code)]), vec![v]),
        Err(Rejection::Invalid(list)) => {
            let mut pairs: Vec<(String, Code)> = list.iter().map(|v| (v.pointer.clone(), v.code)).collect();
            pairs.sort();
            (Outcome::Invalid(pairs), list)
        }
    }
}

/// Checks one case; `None` when it passes, else what went wrong.
fn check(case: &Case) -> Option<String> {
    let (actual, raw) = run(case);
    let mut problems = Vec::new();
    if actual != case.expect {
        problems.push(format!("expected {:?}\n      actual   {:?}", case.expect, actual));
    }
    if let Outcome::Invalid(pairs) = &actual {
        if pairs.is_empty() {
            problems.push("422 with no violation".to_owned());
        }
        let mut sorted = raw.clone();
        sorted.sort();
        sorted.dedup();
        if sorted != raw {
            problems.push("violations are not sorted and unique".to_owned());
        }
        for v in &raw {
            if v.message.is_empty() || v.message.chars().count() > 200 {
                problems.push(format!("bad message at {}: {:?}", v.pointer, v.message));
            }
        }
    }
    if problems.is_empty() {
        None
    } else {
        let messages: Vec<String> = raw.iter().map(|v| format!("{} {:?}: {}", v.pointer, v.code, v.message)).collect();
        Some(format!("{}: {}\n      violations: {messages:#?}", case.name, problems.join("; ")))
    }
}

fn run_table(cases: &[Case]) {
    let mut names = std::collections::HashSet::new();
    for c in cases {
        assert!(names.insert(c.name.as_str()), "case name used twice: {}", c.name);
    }
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    println!("{} cases, {} failed", cases.len(), failures.len());
    assert!(failures.is_empty(), "{} of {} cases failed:\n  {}", failures.len(), cases.len(), failures.join("\n  "));
}

#[test]
fn create_call_table_every_case_gets_its_exact_outcome() {
    run_table(&operation_b_cases());
}

#[test]
fn send_call_data_table_every_case_gets_its_exact_outcome() {
    run_table(&operation_a_cases());
}

fn violations(op: Operation, body: &Value) -> Vec<Violation> {
    match ingest(op, &serde_json::to_vec(body).expect("JSON")) {
        Err(Rejection::Invalid(list)) => list,
        Ok(_) => panic!("accepted: {body}"),
        Err(Rejection::Unreadable(e)) => panic!("unreadable ({e}): {body}"),
        Err(Rejection::OverLimit(v)) => panic!("over a count limit ({v:?}): {body}"),
    }
}

#[test]
fn lengths_are_counted_in_characters_not_bytes() {
    // 200 'é' are 400 bytes: still valid. 201 are not.
    let at_limit = b("").set("/call_id", json!(chars('é', 200))).body;
    assert!(ingest(Operation::CreateCall, &serde_json::to_vec(&at_limit).unwrap()).is_ok());
    let over = b("").set("/call_id", json!(chars('é', 201))).body;
    let list = violations(Operation::CreateCall, &over);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!((list[0].pointer.as_str(), list[0].code), ("/call_id", Length));
    assert!(list[0].message.contains("200"), "the message names the limit: {:?}", list[0].message);
}

#[test]
fn messages_quote_at_most_a_short_prefix_of_the_value() {
    let long = format!("2026-11-21T10:00:00{}", chars('Z', 5000));
    let a_body = a("").set("/startedAt", json!(long)).set("/endedAt", json!(long)).set("/agentId", json!(long)).body;
    let b_body = b("")
        .set("/call_id", json!(long))
        .set("/user_sentiment", json!(long))
        .set(&seg(0, "/role"), json!(long))
        .set("/recording_url", json!(long))
        .body;
    for (op, body, expected) in [(Operation::SendCallData, a_body, 3), (Operation::CreateCall, b_body, 5)] {
        let list = violations(op, &body);
        assert_eq!(list.len(), expected, "{list:?}");
        for v in &list {
            assert!(v.message.chars().count() < 100, "message too long at {}: {:?}", v.pointer, v.message);
            assert!(!v.message.contains(&long), "the whole value is echoed at {}", v.pointer);
            assert!(!v.message.contains(&long[..60]), "more than a short prefix is echoed at {}", v.pointer);
        }
    }
}

#[test]
fn start_in_seconds_and_end_in_milliseconds_are_compared_in_milliseconds() {
    let valid = b("").set("/start_timestamp", json!(1_763_700_000)).set("/end_timestamp", json!(1_763_700_000_001_u64));
    assert!(ingest(Operation::CreateCall, &serde_json::to_vec(&valid.body).unwrap()).is_ok());
    let invalid =
        b("").set("/start_timestamp", json!(1_763_700_000)).set("/end_timestamp", json!(1_763_699_999_999_u64));
    let list = violations(Operation::CreateCall, &invalid.body);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!((list[0].pointer.as_str(), list[0].code), ("/end_timestamp", Range));
    assert!(list[0].message.contains("1763700000000"), "names start in ms: {:?}", list[0].message);
}

#[test]
fn word_end_before_start_points_at_the_words_end_ms_and_names_the_start() {
    let body = b("").set(&seg(0, "/words/3/end_ms"), json!(600)).body;
    let list = violations(Operation::CreateCall, &body);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].pointer, "/transcript_with_tool_calls/0/words/3/end_ms");
    assert_eq!(list[0].code, Range);
    assert!(list[0].message.contains("650"), "{:?}", list[0].message);
}

#[test]
fn a_wrong_typed_segment_hides_only_what_is_below_it() {
    // Segment 10 is valid-looking but broken; segment 1 is a string. The type error at 1
    // must not hide the violation at 10 (whose pointer shares the prefix "/…/1").
    let mut body = b("").body;
    let segments = body["transcript_with_tool_calls"].as_array_mut().unwrap();
    while segments.len() < 11 {
        segments.push(json!({"role": "agent_function", "text": ""}));
    }
    segments[1] = json!("User: where is my order?");
    segments[10] = json!({"role": "user", "text": "no timing"});
    let list = violations(Operation::CreateCall, &body);
    let pairs: Vec<(&str, Code)> = list.iter().map(|v| (v.pointer.as_str(), v.code)).collect();
    assert_eq!(pairs, vec![("/transcript_with_tool_calls/1", Type), ("/transcript_with_tool_calls/10", Required)]);
}

#[test]
fn deeply_nested_unknown_field_is_refused_without_crashing() {
    let depth = 100_000;
    let mut body = String::from("{\"call_id\": \"x\", \"deep\": ");
    body.push_str(&"[".repeat(depth));
    body.push_str(&"]".repeat(depth));
    body.push('}');
    // Refused at the nesting limit, before the parser descends (it used to be serde_json's
    // recursion limit, a 400).
    for op in [Operation::CreateCall, Operation::SendCallData] {
        match ingest(op, body.as_bytes()) {
            Err(Rejection::OverLimit(v)) => {
                assert_eq!(v.code, Code::Limit);
                assert!(v.pointer.starts_with("/deep/0/0/"), "{}", v.pointer);
            }
            other => panic!("{op:?}: expected the nesting limit, got {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn escaped_field_names_are_read_as_the_fields_they_name() {
    // "call\u005fid" is "call_id": a client's JSON encoder may escape any character.
    let body = br#"{"call\u005fid": "", "call_type": "phone_call", "transcript_with_tool_calls": [{"role": "node_transition", "node": {"from": "a", "to": "b"}}], "start_timestamp": 1763700000, "end_timestamp": 1763700001, "recording_url": "x"}"#;
    match ingest(Operation::CreateCall, body) {
        Err(Rejection::Invalid(list)) => {
            let pairs: Vec<(&str, Code)> = list.iter().map(|v| (v.pointer.as_str(), v.code)).collect();
            assert_eq!(pairs, vec![("/call_id", Length)]);
        }
        other => panic!("expected a 422 on /call_id, got {other:?}"),
    }
}

/// Found in review: 400,000 words with three violations each would hold 1.2 M violations in
/// memory. Words report at most `MAX_WORD_VIOLATIONS`, then one `limit` violation where
/// checking stopped.
#[test]
fn invalid_words_report_a_bounded_number_of_violations() {
    use call_ingest::validate::checks::MAX_WORD_VIOLATIONS;
    let words: Vec<Value> =
        (0..2 * MAX_WORD_VIOLATIONS).map(|_| json!({"word": "a", "start_ms": 5, "end_ms": 1})).collect();
    let body = json!({
        "call_id": "c", "call_type": "phone_call", "start_timestamp": 1763700000, "end_timestamp": 1763700001,
        "recording_url": "x",
        "transcript_with_tool_calls": [{"role": "agent", "text": "a", "words": words}]
    });
    let list = violations(Operation::CreateCall, &body);
    let limits: Vec<&Violation> = list.iter().filter(|v| v.code == Code::Limit).collect();
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert_eq!(limits[0].pointer, format!("/transcript_with_tool_calls/0/words/{MAX_WORD_VIOLATIONS}"));
    // The words' own, and the limit; the segment's derived times are checked too.
    assert_eq!(list.iter().filter(|v| v.pointer.contains("/words/")).count(), MAX_WORD_VIOLATIONS + 1);
    // Below the budget every word's violation is there.
    let words: Vec<Value> = (0..10).map(|_| json!({"word": "a", "start_ms": -1, "end_ms": 1})).collect();
    let body = json!({
        "call_id": "c", "call_type": "phone_call", "start_timestamp": 1763700000, "end_timestamp": 1763700001,
        "recording_url": "x",
        "transcript_with_tool_calls": [{"role": "agent", "text": "a", "words": words}]
    });
    let list = violations(Operation::CreateCall, &body);
    assert_eq!(list.len(), 10, "{list:?}");
    assert!(list.iter().all(|v| v.pointer.ends_with("/start_ms") && v.code == Code::Range));
}
