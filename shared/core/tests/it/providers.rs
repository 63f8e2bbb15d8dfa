//! Providers' webhooks: each fixture (`tests/fixtures/providers`, with their sources) maps
//! to a valid document, as completely as Tuner's Vapi converter would for Vapi; signatures
//! hold against tampering.

use call_ingest_core::call::Operation;
use call_ingest_core::providers::signature::SecretHeader;
use call_ingest_core::providers::{self, signature, Event, Provider};
use proptest::prelude::*;
use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/providers/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The stored document of a fixture, as JSON.
fn document(provider: Provider, name: &str) -> Value {
    let doc = providers::ingest(provider, &fixture(name)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    assert_eq!(doc.operation, Operation::ProviderWebhook(provider));
    serde_json::from_slice(&doc.to_json()).unwrap()
}

fn segments(doc: &Value) -> &Vec<Value> {
    doc["call"]["transcript_with_tool_calls"].as_array().unwrap()
}

fn tool(doc: &Value, role: &str, name: &str) -> Value {
    segments(doc).iter().find(|s| s["role"] == role && s["tool"]["name"] == name).cloned().unwrap_or(Value::Null)
}

/// What Tuner's converter (`send_to_tuner.py` of usetuner/vapi-multiagent) sends of a
/// report, read straight from the fixture: every turn text, tool name, recording URL, the
/// ended reason and the cost in cents.
struct Converted {
    texts: Vec<String>,
    tools: Vec<String>,
    recordings: Vec<String>,
    ended: Option<String>,
    cents: Option<f64>,
}

fn converted(report: &Value) -> Converted {
    let r = &report["message"];
    let rows = r["artifact"]["messages"].as_array().or(r["messages"].as_array()).cloned().unwrap_or_default();
    let role = |m: &Value| m["role"].as_str().unwrap_or_default().to_owned();
    Converted {
        texts: rows
            .iter()
            .filter(|m| ["user", "bot", "assistant"].contains(&role(m).as_str()))
            .filter_map(|m| m["message"].as_str().map(str::to_owned))
            .collect(),
        tools: rows
            .iter()
            .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["function"]["name"].as_str().map(str::to_owned))
            .collect(),
        recordings: [
            &r["recordingUrl"],
            &r["artifact"]["recordingUrl"],
            &r["stereoRecordingUrl"],
            &r["artifact"]["stereoRecordingUrl"],
        ]
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect(),
        ended: r["endedReason"].as_str().map(str::to_owned),
        cents: r["cost"].as_f64().map(|d| (d * 10_000.0).round() / 100.0),
    }
}

#[test]
fn vapi_reports_map_at_least_as_completely_as_the_converter() {
    for name in ["vapi_tools", "vapi_squad", "vapi_transfer", "vapi_voicemail", "vapi_no_transcript"] {
        let report: Value = serde_json::from_slice(&fixture(name)).unwrap();
        let doc = document(Provider::Vapi, name);
        let call = &doc["call"];
        let want = converted(&report);
        let texts: Vec<&str> = segments(&doc).iter().filter_map(|s| s["text"].as_str()).collect();
        for text in &want.texts {
            assert!(texts.contains(&text.as_str()), "{name}: turn {text:?} is stored");
        }
        for tool in &want.tools {
            assert!(segments(&doc).iter().any(|s| s["tool"]["name"] == tool.as_str()), "{name}: tool {tool} is stored");
        }
        let urls = [call["recording_url"].as_str(), call["recording_multi_channel_url"].as_str()];
        for url in &want.recordings {
            assert!(urls.contains(&Some(url.as_str())), "{name}: recording {url} is stored");
        }
        assert_eq!(call["disconnection_reason"].as_str(), want.ended.as_deref(), "{name}: ended reason");
        assert_eq!(call["call_cost"].as_f64(), want.cents, "{name}: cost in cents");
        assert_eq!(doc["call"]["provider"], "vapi", "{name}: the provider is said");
        assert_eq!(doc["operation"], "provider_webhook");
    }
}

#[test]
fn vapi_tools_are_joined_with_their_results_and_latencies_go_on_their_turns() {
    let doc = document(Provider::Vapi, "vapi_tools");
    let call = tool(&doc, "agent_function", "checkBalance");
    assert_eq!(call["tool"]["params"], serde_json::json!({"account": "A-17"}));
    assert_eq!(call["tool"]["result"], serde_json::json!({"value": "Balance is $5."}), "joined by id");
    assert_eq!((call["tool"]["start_ms"].as_i64(), call["tool"]["end_ms"].as_i64()), (Some(4500), Some(5200)));
    let turns = segments(&doc);
    let reply = turns.iter().find(|s| s["text"] == "One moment.").unwrap();
    assert_eq!(reply["metadata"]["e2e_latency"], 1100.0);
    assert_eq!(reply["metadata"]["llm_node_ttft"], 400.0);
    let asked = turns.iter().find(|s| s["text"] == "What's my balance?").unwrap();
    assert_eq!(asked["metadata"]["stt_node_ttfb"], 200.0);
    assert_eq!(asked["words"][1]["start_ms"], 3500, "word times in ms from the start");
    assert!(turns.iter().all(|s| s["role"] != "system"), "the prompt is metadata, not a turn");
    let meta = &doc["call"]["general_meta_data_raw"];
    assert_eq!(meta["customizable_prompt"], "You are the desk.");
    assert_eq!(meta["ai_models"]["llm_model"], "openai/gpt-4o");
    assert_eq!(doc["call"]["call_type"], "phone_call");
    assert_eq!(doc["call"]["call_successful"], true);
    assert_eq!(doc["call"]["collected_dynamic_variables"], serde_json::json!({"account": "A-17"}));
}

#[test]
fn vapi_squads_transfers_voicemail_and_silent_calls() {
    let squad = document(Provider::Vapi, "vapi_squad");
    let handoff = segments(&squad).iter().find(|s| s["role"] == "node_transition").expect("a handoff");
    assert_eq!(
        (handoff["node"]["from"].as_str(), handoff["node"]["to"].as_str()),
        (Some("Receptionist"), Some("Sales"))
    );
    assert_eq!(squad["call"]["call_successful"], Value::Null, "a grade that is not true/false is not a success");
    assert_eq!(squad["call"]["call_analysis"]["successEvaluation"], "PASS", "but stays in the analysis");
    let interrupted = segments(&squad).iter().find(|s| s["text"] == "Sales here, what are you looking for?").unwrap();
    assert_eq!(interrupted["metadata"]["interrupted"], true, "the caller spoke 500 ms before it ended");
    let transfer = document(Provider::Vapi, "vapi_transfer");
    let to = segments(&transfer).iter().find(|s| s["role"] == "node_transition").expect("a transfer");
    assert_eq!((to["node"]["to"].as_str(), to["node"]["reason"].as_str()), (Some("+15550123"), Some("transfer")));
    let voicemail = document(Provider::Vapi, "vapi_voicemail");
    assert_eq!(voicemail["call"]["in_voicemail"], true);
    let silent = document(Provider::Vapi, "vapi_no_transcript");
    assert_eq!(segments(&silent).len(), 0, "no turn is invented");
    assert!(silent["call"].get("recording_url").is_none(), "no recording is invented");
}

#[test]
fn retells_two_events_are_one_call_at_two_stages() {
    let ended = providers::read(Provider::Retell, &fixture("retell_call_ended")).unwrap();
    let analyzed = providers::read(Provider::Retell, &fixture("retell_call_analyzed")).unwrap();
    let (Event::Call(ended), Event::Call(analyzed)) = (ended, analyzed) else { panic!("both are calls") };
    assert!(analyzed.stage > ended.stage, "the analysis is a later stage");
    assert_eq!(ended.agent.as_deref(), Some("agent_4d2c8e"));
    let doc = document(Provider::Retell, "retell_call_analyzed");
    let call = &doc["call"];
    assert_eq!((call["call_cost"].as_f64(), call["user_sentiment"].as_str()), (Some(11.9), Some("positive")));
    assert_eq!(call["call_successful"], true);
    assert_eq!(call["call_status"], "call_ended");
    let invoked = tool(&doc, "agent_function", "reschedule_appointment");
    assert_eq!(invoked["tool"]["result"], serde_json::json!({"ok": true, "slot": "2024-11-22T10:00"}));
    assert_eq!(invoked["tool"]["is_error"], false);
    let node = segments(&doc).iter().find(|s| s["role"] == "node_transition").unwrap();
    assert_eq!((node["node"]["from"].as_str(), node["node"]["to"].as_str()), (Some("Greeting"), Some("Reschedule")));
    let first = &segments(&doc)[0];
    assert_eq!((first["start_ms"].as_i64(), first["end_ms"].as_i64()), (Some(420), Some(2200)));
    assert_eq!(first["metadata"]["e2e_latency"], Value::Null, "the greeting is no turn");
    let booked = segments(&doc).iter().find(|s| s["text"] == "Done, you're booked for Friday at 10.").unwrap();
    assert_eq!(booked["metadata"]["e2e_latency"], 640.0, "the first response's latency");
    assert!(
        matches!(providers::read(Provider::Retell, &fixture("retell_call_started")), Ok(Event::Ignored(e)) if e == "call_started")
    );
}

#[test]
fn elevenlabs_turns_keep_their_start_only_and_cost_stays_in_credits() {
    let doc = document(Provider::ElevenLabs, "elevenlabs_transcription");
    let call = &doc["call"];
    assert!(call.get("recording_url").is_none() && call.get("call_cost").is_none());
    assert_eq!(call["general_meta_data_raw"]["cost_credits"], 296.0);
    assert_eq!(call["start_timestamp"], 1_739_537_260_000i64);
    assert_eq!(call["end_timestamp"], 1_739_537_291_000i64);
    let first = &segments(&doc)[0];
    assert_eq!((first["start_ms"].as_i64(), first.get("end_ms")), (Some(0), None), "no end is invented");
    assert_eq!(first["metadata"]["llm_node_ttft"], 370);
    let node = segments(&doc).iter().find(|s| s["role"] == "node_transition").unwrap();
    assert_eq!((node["node"]["from"].as_str(), node["node"]["to"].as_str()), (Some("node_greet"), Some("node_orders")));
    let looked = tool(&doc, "agent_function", "order_status");
    assert_eq!((looked["tool"]["start_ms"].as_i64(), looked["tool"]["end_ms"].as_i64()), (Some(5000), Some(5800)));
    assert_eq!(call["caller_phone_number"], "+15550144");
    assert!(matches!(
        providers::read(Provider::ElevenLabs, &fixture("elevenlabs_initiation_failure")),
        Ok(Event::Ignored(e)) if e == "call_initiation_failure"
    ));
    assert!(
        matches!(providers::read(Provider::Vapi, &fixture("vapi_status_update")), Ok(Event::Ignored(e)) if e == "status-update")
    );
}

/// A provider's payload is read as free-form JSON without serde_json's private keys: a
/// key `$serde_json::private::RawValue` is data, its string never parsed a second time
/// (`Value` would, past the count limits; here the string is not even JSON).
#[test]
fn serde_jsons_private_keys_in_a_payload_are_data() {
    let mut status: Value = serde_json::from_slice(&fixture("vapi_status_update")).unwrap();
    status["message"]["extra"] = serde_json::json!({"$serde_json::private::RawValue": "[{},{"});
    let body = serde_json::to_vec(&status).unwrap();
    let read = providers::read(Provider::Vapi, &body);
    assert!(matches!(read, Ok(Event::Ignored(ref e)) if e == "status-update"), "{read:?}");
}

/// The mapped record of a Retell `call_ended` whose timeline is `rows`.
fn retell_mapped(rows: Vec<Value>) -> serde_json::Map<String, Value> {
    let mut event: Value = serde_json::from_slice(&fixture("retell_call_ended")).unwrap();
    event["call"]["transcript_with_tool_calls"] = Value::Array(rows);
    match providers::read(Provider::Retell, &serde_json::to_vec(&event).unwrap()) {
        Ok(Event::Call(mapped)) => mapped.record,
        other => panic!("{other:?}"),
    }
}

/// A result row names its call's tool: a long name is clipped where it is read, not copied
/// whole into every result that cites it (1,000 results × 16 MiB would be 16 GB).
#[test]
fn a_long_tool_name_is_clipped_before_results_copy_it() {
    let name = "n".repeat(10_000);
    let mut rows = vec![serde_json::json!({"role": "tool_call_invocation", "tool_call_id": "a", "name": name})];
    rows.extend((0..3).map(|_| serde_json::json!({"role": "tool_call_result", "tool_call_id": "a", "content": "ok"})));
    let record = retell_mapped(rows);
    let names: Vec<usize> = record["transcript_with_tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["tool"]["name"].as_str().map(|n| n.chars().count()))
        .collect();
    assert_eq!(names, [providers::MAX_TOOL_NAME; 4], "the call and its three results");
}

/// Tools' JSON text is parsed within what the payload's own count left of the values
/// limit, one budget for all of them: text past it is kept as text.
#[test]
fn tools_json_text_shares_one_budget_of_values() {
    // Each text counts about 700,000 values: two fit in 1,500,000, the third does not.
    let text = format!("{{\"a\":[{}]}}", vec!["0"; 700_000].join(","));
    let rows: Vec<Value> = (0..3)
        .map(|i| serde_json::json!({"role": "tool_call_invocation", "tool_call_id": format!("t{i}"), "name": "f", "arguments": text}))
        .collect();
    let record = retell_mapped(rows);
    let params: Vec<&Value> =
        record["transcript_with_tool_calls"].as_array().unwrap().iter().map(|s| &s["tool"]["params"]).collect();
    assert_eq!(params.len(), 3);
    assert!(params[0]["a"].is_array() && params[1]["a"].is_array(), "the first two are parsed");
    assert_eq!(params[2], &serde_json::json!({"value": text}), "the third is kept as sent");
}

#[test]
fn payloads_that_are_not_the_providers_shape_are_refused_clearly() {
    for (provider, body) in [
        (Provider::Vapi, &br#"{"type":"end-of-call-report"}"#[..]),
        (Provider::Vapi, br#"{"message":{"type":"end-of-call-report","startedAt":"2026-01-01T00:00:00Z"}}"#),
        (Provider::Retell, br#"{"event":"call_ended"}"#),
        (Provider::ElevenLabs, br#"{"type":"post_call_transcription","data":{"conversation_id":"c"}}"#),
        (Provider::Retell, b"[1]"),
        (Provider::ElevenLabs, b"not json"),
    ] {
        assert!(providers::ingest(provider, body).is_err(), "{provider:?} {}", String::from_utf8_lossy(body));
    }
}

proptest! {
    #[test]
    fn a_signature_holds_for_its_own_body_only(
        body in prop::collection::vec(any::<u8>(), 0..300),
        secret in prop::collection::vec(any::<u8>(), 1..40),
        flip in any::<prop::sample::Index>(),
        skew in -400_000i64..400_000,
    ) {
        let now = 1_764_000_000_000i64;
        let at = now - skew;
        let retell = format!("v={at},d={}", signature::sign(&secret, &[&body, at.to_string().as_bytes()]));
        let header = |n: &str| (n == "x-retell-signature").then_some(retell.as_str());
        let fresh = skew.abs() <= 300_000;
        let verdict = signature::verify(Provider::Retell, header, &body, &[&secret], now, SecretHeader::BEARER);
        prop_assert_eq!(verdict.is_ok(), fresh);
        if fresh && !body.is_empty() {
            let mut tampered = body.clone();
            let i = flip.index(tampered.len());
            tampered[i] ^= 1;
            let verdict = signature::verify(Provider::Retell, header, &tampered, &[&secret], now, SecretHeader::BEARER);
            prop_assert_eq!(verdict, Err(signature::Refused::Mismatch));
        }
    }

    #[test]
    fn no_header_value_panics_or_passes_without_the_secret(value in ".{0,120}", provider in 0usize..3) {
        let provider = Provider::ALL[provider];
        for name in ["x-vapi-secret", "authorization", "x-signature", "x-retell-signature", "elevenlabs-signature"] {
            for shared in [SecretHeader::BEARER, SecretHeader::LEGACY] {
                let v = value.clone();
                let header = |n: &str| (n == name || n == "x-timestamp").then_some(v.as_str());
                let verdict = signature::verify(provider, header, b"{}", &[b"the secret"], 1_764_000_000_000, shared);
                prop_assert!(verdict.is_err());
            }
        }
    }
}

#[test]
fn a_payload_that_would_grow_past_the_segment_limit_is_refused_before_it_grows() {
    let activations = vec!["{}"; 60_000].join(",");
    let body = format!(
        r#"{{"message":{{"type":"end-of-call-report","startedAt":"2026-01-01T00:00:00Z","call":{{"id":"c"}},"artifact":{{"assistantActivations":[{activations}]}}}}}}"#
    );
    assert!(matches!(
        providers::ingest(Provider::Vapi, body.as_bytes()),
        Err(call_ingest_core::call::Rejection::OverLimit(_))
    ));
    let calls = vec![r#"{"id":"x","function":{"name":"f"}}"#; 60_000].join(",");
    let body = format!(
        r#"{{"message":{{"type":"end-of-call-report","startedAt":"2026-01-01T00:00:00Z","call":{{"id":"c"}},"messages":[{{"role":"tool_calls","toolCalls":[{calls}]}}]}}}}"#
    );
    assert!(matches!(
        providers::ingest(Provider::Vapi, body.as_bytes()),
        Err(call_ingest_core::call::Rejection::OverLimit(_))
    ));
    let huge = br#"{"message":{"type":"end-of-call-report","startedAt":1e300,"durationMs":1e300,"call":{"id":"c"}}}"#;
    assert!(providers::ingest(Provider::Vapi, huge).is_err(), "a time past 2^53 is no time");
}
