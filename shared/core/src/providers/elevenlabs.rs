//! ElevenLabs' `post_call_transcription` (body `{"type": …, "event_timestamp": …, "data":
//! {…}}`) as operation B's record. Its turns have a start (`time_in_call_secs`, whole
//! seconds) and no end: they are kept with their start only. Tool calls and their results
//! are in the turns, joined by `request_id`; a change of `workflow_node_id` is a node
//! transition. ElevenLabs sends no recording URL in this event, no sentiment, no voicemail
//! flag, and its cost in credits, not money: kept in metadata (`cost_credits`), not as
//! `call_cost`.
//!
//! `call_initiation_failure` (a call that never connected: no times, no transcript) and
//! `post_call_audio` are not calls: answered 200, nothing stored.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::fields::{self, array, clip, ms_of_seconds, number, object, text, tool_value, Record, TextBudget};
use super::{Event, Mapped};
use crate::call::Rejection;

/// ElevenLabs' per-turn metrics (seconds) and ours (ms).
const METRICS: [(&str, &str); 3] = [
    ("convai_llm_service_ttfb", "llm_node_ttft"),
    ("convai_tts_service_ttfb", "tts_node_ttfb"),
    ("convai_asr_trailing_service_latency", "stt_node_ttfb"),
];

pub(super) fn read(payload: &Map<String, Value>, texts: &TextBudget) -> Result<Event, Rejection> {
    let kind = payload.get("type").and_then(Value::as_str).unwrap_or("(no type)");
    if kind != "post_call_transcription" {
        return Ok(Event::Ignored(kind.to_owned()));
    }
    let Some(data) = payload.get("data").filter(|d| d.is_object()) else {
        return Err(super::unmappable("/data", "is required: ElevenLabs' events are {\"type\": ..., \"data\": {...}}"));
    };
    let call_id =
        text(data, &[&["conversation_id"]]).ok_or_else(|| super::unmappable("/data/conversation_id", "is required"))?;
    let start = number(data, &[&["metadata", "start_time_unix_secs"]]).and_then(ms_of_seconds).ok_or_else(|| {
        super::unmappable("/data/metadata/start_time_unix_secs", "is required: when the call started")
    })?;
    let duration = number(data, &[&["metadata", "call_duration_secs"]]).and_then(ms_of_seconds);
    let mut r = Record::default();
    r.set("provider", "elevenlabs").set("provider_event", kind);
    r.set("call_id", call_id);
    let phone = object(data, &[&["metadata", "phone_call"]]);
    r.set("call_type", if phone.is_some() { "phone_call" } else { "web_call" });
    r.set("start_timestamp", start).set("end_timestamp", start + duration.unwrap_or(0));
    r.maybe("duration_ms", duration);
    r.maybe(
        "call_status",
        text(data, &[&["status"]]).map(|s| if s == "done" { "call_ended".to_owned() } else { clip(s, 100) }),
    );
    r.maybe("disconnection_reason", text(data, &[&["metadata", "termination_reason"]]).map(|t| clip(t, 100)));
    let phone_value = phone.map(|p| Value::Object(p.clone())).unwrap_or(Value::Null);
    let customer = text(&phone_value, &[&["external_number"]]);
    r.maybe("caller_phone_number", customer.map(|n| clip(n, 50)));
    r.maybe(
        "call_successful",
        match text(data, &[&["analysis", "call_successful"]]) {
            Some("success") => Some(true),
            Some("failure") => Some(false),
            _ => None,
        },
    );
    r.maybe("call_analysis", object(data, &[&["analysis"]]).cloned().map(Value::Object));
    r.maybe(
        "collected_dynamic_variables",
        object(data, &[&["conversation_initiation_client_data", "dynamic_variables"]]).cloned().map(Value::Object),
    );
    let mut meta = Record::default();
    meta.maybe("cost_credits", number(data, &[&["metadata", "cost"]]));
    meta.maybe("agent_name", text(data, &[&["agent_name"]]));
    meta.maybe("call_direction", text(&phone_value, &[&["direction"]]));
    meta.maybe("agent_phone_number", text(&phone_value, &[&["agent_number"]]));
    meta.maybe("call_sid", text(&phone_value, &[&["call_sid"]]));
    meta.maybe("main_language", text(data, &[&["metadata", "main_language"]]));
    r.set("metadata", Value::Object(meta.0));
    let mut raw = Record::default();
    for key in ["charging", "phone_call", "error", "batch_call", "feedback"] {
        raw.maybe(key, data.get("metadata").and_then(|m| m.get(key)).cloned());
    }
    r.set("general_meta_data_raw", json!({ "elevenlabs": raw.0 }));
    r.set("transcript_with_tool_calls", timeline(data, texts)?);
    let agent = text(data, &[&["agent_id"]]).map(str::to_owned);
    Ok(Event::Call(Mapped { record: r.0, agent, stage: 0 }))
}

/// The turns, their tool calls and results, node changes; each turn's metrics.
fn timeline(data: &Value, texts: &TextBudget) -> Result<Value, Rejection> {
    const AT: &str = "/data/transcript";
    let mut segments: Vec<Value> = Vec::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut node: Option<String> = None;
    for turn in fields::bounded(array(data, &["transcript"]), AT)? {
        // A turn's tool calls and results add segments: the total is bounded as it grows.
        let adds = array(turn, &["tool_calls"]).len() + array(turn, &["tool_results"]).len() + 2;
        if segments.len() + adds > fields::MAX_ITEMS {
            return Err(fields::too_many(AT));
        }
        let at = number(turn, &[&["time_in_call_secs"]]).and_then(ms_of_seconds);
        if let Some(now) = text(turn, &[&["agent_metadata", "workflow_node_id"]]) {
            if let Some(before) = node.as_deref().filter(|b| *b != now) {
                let mut segment =
                    json!({ "role": "node_transition", "node": { "from": before, "to": now, "reason": "workflow" } });
                if let Some(t) = at {
                    segment["start_ms"] = t.into();
                }
                segments.push(segment);
            }
            node = Some(now.to_owned());
        }
        for call in array(turn, &["tool_calls"]) {
            let id = text(call, &[&["request_id"]]).unwrap_or_default();
            let mut tool = Record::default();
            tool.maybe("name", text(call, &[&["tool_name"]]).map(fields::tool_name)).set("request_id", id);
            tool.set("params", call.get("params_as_json").map(|v| tool_value(v, texts)).unwrap_or(Value::Null))
                .maybe("start_ms", at);
            let mut segment = json!({ "role": "agent_function", "tool": tool.0 });
            if let Some(t) = at {
                segment["start_ms"] = t.into();
            }
            calls.entry(id.to_owned()).or_insert(segments.len());
            segments.push(segment);
        }
        for result in array(turn, &["tool_results"]) {
            let id = text(result, &[&["request_id"]]).unwrap_or_default();
            let value = result.get("result_value").map(|v| tool_value(v, texts)).unwrap_or(Value::Null);
            let failed = result.get("is_error").and_then(Value::as_bool);
            let took = number(result, &[&["tool_latency_secs"]]).and_then(ms_of_seconds);
            let called = calls.get(id).copied();
            let begun = called.and_then(|i| segments[i]["tool"]["start_ms"].as_i64()).or(at);
            let ended = begun.zip(took).map(|(b, d)| b + d);
            if let Some(i) = called {
                fields::join_result(&mut segments[i], &value, failed, ended);
            }
            let mut tool = Record::default();
            tool.maybe("name", text(result, &[&["tool_name"]]).map(fields::tool_name))
                .set("request_id", id)
                .set("result", value);
            tool.maybe("is_error", failed).maybe("start_ms", begun).maybe("end_ms", ended);
            let mut segment = json!({ "role": "agent_result", "tool": tool.0 });
            if let Some(t) = ended.or(at) {
                segment["start_ms"] = t.into();
            }
            segments.push(segment);
        }
        let role = match text(turn, &[&["role"]]) {
            Some("agent") => "agent",
            Some("user") => "user",
            _ => continue,
        };
        let Some(message) = text(turn, &[&["message"]]) else { continue };
        let mut segment = Record::default();
        segment.set("role", role).set("text", message).maybe("start_ms", at);
        let mut meta = Map::new();
        let metrics = turn.get("conversation_turn_metrics");
        let metrics = metrics.and_then(|m| m.get("metrics").filter(|x| x.is_object())).or(metrics);
        for (theirs, ours) in METRICS {
            if let Some(ms) = metrics.and_then(|m| number(m, &[&[theirs, "elapsed_time"]])).and_then(ms_of_seconds) {
                meta.insert(ours.into(), ms.into());
            }
        }
        if let Some(true) = turn.get("interrupted").and_then(Value::as_bool) {
            meta.insert("interrupted".into(), true.into());
        }
        if !meta.is_empty() {
            segment.set("metadata", Value::Object(meta));
        }
        segments.push(Value::Object(segment.0));
    }
    Ok(Value::Array(segments))
}
