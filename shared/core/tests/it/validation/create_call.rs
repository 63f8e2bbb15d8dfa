//! Operation B (Create Call): the whole body, string lengths, timestamps, segments and
//! unknown fields, each group a table of its own.

use super::*;

fn body_cases() -> Vec<Case> {
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

/// Every case of operation B.
pub(super) fn all_cases() -> Vec<Case> {
    [body_cases(), length_limit_cases(), timestamp_cases(), segment_cases(), unknown_field_cases()]
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn bodies_get_their_exact_outcome() {
    run_table(&body_cases());
}

#[test]
fn string_lengths_get_their_exact_outcome() {
    run_table(&length_limit_cases());
}

#[test]
fn timestamps_get_their_exact_outcome() {
    run_table(&timestamp_cases());
}

#[test]
fn segments_get_their_exact_outcome() {
    run_table(&segment_cases());
}

#[test]
fn unknown_fields_get_their_exact_outcome() {
    run_table(&unknown_field_cases());
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
    use call_ingest_core::validate::checks::MAX_WORD_VIOLATIONS;
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
