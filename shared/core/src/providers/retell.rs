//! Retell's `call_ended` and `call_analyzed` (body `{"event": …, "call": {…}}`) as operation
//! B's record. Retell's call object is close to B's own: the timeline's utterances carry
//! word timings in seconds, tool invocations and results are joined by `tool_call_id`,
//! conversation-flow `node_transition`s become ours. Latencies are per call, not per turn,
//! except the `values` lists (one per response), which go on the turns in order. Retell's
//! tool, node and DTMF entries carry no times: they stay untimed.
//!
//! The two events of one call become one call: `call_analyzed` is stage 2, `call_ended`
//! stage 1, and a late `call_ended` never replaces the analysis (see `Mapped::stage`).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::fields::{self, array, clip, ms_of_seconds, number, object, text, tool_value, Record, TextBudget};
use super::{Event, Mapped};
use crate::call::Rejection;

pub(super) fn read(payload: &Map<String, Value>, texts: &TextBudget) -> Result<Event, Rejection> {
    let event = payload.get("event").and_then(Value::as_str).unwrap_or("(no event)");
    let stage = match event {
        "call_ended" => 1,
        "call_analyzed" => 2,
        other => return Ok(Event::Ignored(other.to_owned())),
    };
    let Some(call) = payload.get("call").filter(|c| c.is_object()) else {
        return Err(super::unmappable("/call", "is required: Retell's events are {\"event\": ..., \"call\": {...}}"));
    };
    let call_id = text(call, &[&["call_id"]]).ok_or_else(|| super::unmappable("/call/call_id", "is required"))?;
    let Some(start) = number(call, &[&["start_timestamp"]]).and_then(fields::ms) else {
        // A call that never connected (`not_connected`, a dial that failed): no time, no talk.
        return Ok(Event::Ignored(format!("{event} of a call that never started")));
    };
    let end = number(call, &[&["end_timestamp"]]).and_then(fields::ms).unwrap_or(start).max(start);
    let mut r = Record::default();
    r.set("provider", "retell").set("provider_event", event);
    r.set("call_id", call_id);
    r.set("call_type", clip(text(call, &[&["call_type"]]).unwrap_or("phone_call"), 100));
    r.set("start_timestamp", start).set("end_timestamp", end);
    r.maybe("duration_ms", number(call, &[&["duration_ms"]]).and_then(fields::ms));
    r.maybe("agent_version", number(call, &[&["agent_version"]]).filter(|v| *v >= 0.0).map(|v| v as i64));
    r.maybe("recording_url", text(call, &[&["recording_url"], &["scrubbed_recording_url"]]).map(|u| clip(u, 1024)));
    r.maybe(
        "recording_multi_channel_url",
        text(call, &[&["recording_multi_channel_url"], &["scrubbed_recording_multi_channel_url"]])
            .map(|u| clip(u, 1024)),
    );
    r.maybe("transcript", text(call, &[&["transcript"]]));
    r.maybe(
        "call_status",
        text(call, &[&["call_status"]]).map(|s| if s == "ended" { "call_ended".to_owned() } else { clip(s, 100) }),
    );
    r.maybe("disconnection_reason", text(call, &[&["disconnection_reason"]]).map(|d| clip(d, 100)));
    // The customer's number: the caller of an inbound call, the callee of an outbound one.
    let customer = match text(call, &[&["direction"]]) {
        Some("outbound") => text(call, &[&["to_number"]]),
        _ => text(call, &[&["from_number"]]),
    };
    r.maybe("caller_phone_number", customer.map(|n| clip(n, 50)));
    if let Some(analysis) = object(call, &[&["call_analysis"]]) {
        r.maybe("call_successful", analysis.get("call_successful").and_then(Value::as_bool));
        r.maybe("in_voicemail", analysis.get("in_voicemail").and_then(Value::as_bool));
        r.maybe(
            "user_sentiment",
            analysis.get("user_sentiment").and_then(Value::as_str).map(|s| clip(&s.to_ascii_lowercase(), 50)),
        );
        r.set("call_analysis", Value::Object(analysis.clone()));
    }
    r.maybe(
        "collected_dynamic_variables",
        object(call, &[&["collected_dynamic_variables"]]).cloned().map(Value::Object),
    );
    r.maybe("call_cost", number(call, &[&["call_cost", "combined_cost"]]));
    let mut meta = Record::default();
    for key in ["direction", "from_number", "to_number", "agent_name", "public_log_url", "transfer_destination"] {
        meta.maybe(key, text(call, &[&[key]]));
    }
    meta.maybe("twilio_call_sid", text(call, &[&["telephony_identifier", "twilio_call_sid"]]));
    if let Some(own) = object(call, &[&["metadata"]]) {
        meta.set("retell_metadata", Value::Object(own.clone()));
    }
    r.set("metadata", Value::Object(meta.0));
    let mut raw = Record::default();
    for key in ["call_cost", "latency", "llm_token_usage", "retell_llm_dynamic_variables", "custom_sip_headers"] {
        raw.maybe(key, call.get(key).cloned());
    }
    r.set("general_meta_data_raw", json!({ "retell": raw.0 }));
    r.set("transcript_with_tool_calls", timeline(call, texts)?);
    let agent = text(call, &[&["agent_id"]]).map(str::to_owned);
    Ok(Event::Call(Mapped { record: r.0, agent, stage }))
}

/// `transcript_with_tool_calls` (or `transcript_object`) in B's roles.
fn timeline(call: &Value, texts: &TextBudget) -> Result<Value, Rejection> {
    let rows = match array(call, &["transcript_with_tool_calls"]) {
        [] => array(call, &["transcript_object"]),
        rows => rows,
    };
    let rows = fields::bounded(rows, "/call/transcript_with_tool_calls")?;
    let mut segments: Vec<Value> = Vec::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    for row in rows {
        let role = text(row, &[&["role"]]).unwrap_or_default();
        match role {
            "agent" | "user" | "transfer_target" => {
                let words: Vec<Value> = array(row, &["words"])
                    .iter()
                    .filter_map(|w| {
                        let s = number(w, &[&["start"]]).and_then(ms_of_seconds)?;
                        let e = number(w, &[&["end"]]).and_then(ms_of_seconds)?.max(s);
                        Some(json!({ "word": text(w, &[&["word"]]).unwrap_or_default(), "start_ms": s, "end_ms": e }))
                    })
                    .collect();
                let mut segment = Record::default();
                // The person a call was transferred to speaks as the caller's side.
                segment.set("role", if role == "agent" { "agent" } else { "user" });
                if role == "transfer_target" {
                    segment.set("retell_role", role);
                }
                segment.set("text", text(row, &[&["content"]]).unwrap_or_default());
                if let (Some(first), Some(last)) = (words.first(), words.last()) {
                    segment.set("start_ms", first["start_ms"].clone()).set("end_ms", last["end_ms"].clone());
                    segment.set("words", words);
                }
                segments.push(Value::Object(segment.0));
            }
            "tool_call_invocation" => {
                let id = text(row, &[&["tool_call_id"]]).unwrap_or_default();
                let mut tool = Record::default();
                tool.maybe("name", text(row, &[&["name"]]).map(fields::tool_name)).set("request_id", id);
                tool.set("params", row.get("arguments").map(|v| tool_value(v, texts)).unwrap_or(Value::Null));
                tool.maybe("type", text(row, &[&["type"]]));
                calls.entry(id.to_owned()).or_insert(segments.len());
                segments.push(json!({ "role": "agent_function", "tool": tool.0 }));
            }
            "tool_call_result" => {
                let id = text(row, &[&["tool_call_id"]]).unwrap_or_default();
                let called = calls.get(id).copied();
                let result = row.get("content").map(|v| tool_value(v, texts)).unwrap_or(Value::Null);
                let failed = row.get("successful").and_then(Value::as_bool).map(|ok| !ok);
                let name = called.and_then(|i| segments[i]["tool"]["name"].as_str().map(str::to_owned));
                if let Some(i) = called {
                    fields::join_result(&mut segments[i], &result, failed, None);
                }
                let mut tool = Record::default();
                tool.maybe("name", name).set("request_id", id).set("result", result).maybe("is_error", failed);
                segments.push(json!({ "role": "agent_result", "tool": tool.0 }));
            }
            "node_transition" => {
                let node = |id: &str, name: &str| text(row, &[&[name], &[id]]).unwrap_or("node").to_owned();
                let mut transition = Record::default();
                transition.set("from", node("former_node_id", "former_node_name"));
                transition.set("to", node("new_node_id", "new_node_name"));
                transition.set("reason", text(row, &[&["transition_type"]]).unwrap_or("transition"));
                segments.push(json!({ "role": "node_transition", "node": transition.0 }));
            }
            _ => {}
        }
    }
    let values =
        |kind: &str| array(call, &["latency", kind, "values"]).iter().filter_map(Value::as_f64).collect::<Vec<_>>();
    let (e2e, llm, tts, asr) = (values("e2e"), values("llm"), values("tts"), values("asr"));
    fields::per_turn(
        &mut segments,
        |k| {
            [("e2e_latency", &e2e), ("llm_node_ttft", &llm), ("tts_node_ttfb", &tts)]
                .into_iter()
                .filter_map(|(key, list)| Some((key, *list.get(k)?)))
                .collect()
        },
        |k| asr.get(k).map(|v| ("stt_node_ttfb", *v)).into_iter().collect(),
    );
    Ok(Value::Array(segments))
}
