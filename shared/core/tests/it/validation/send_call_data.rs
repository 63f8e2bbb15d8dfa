//! Operation A (Send Call Data): the whole body, its lengths, times and metadata.

use super::*;

pub(super) fn cases() -> Vec<Case> {
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

#[test]
fn every_case_gets_its_exact_outcome() {
    run_table(&cases());
}
