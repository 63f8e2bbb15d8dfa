//! Vapi's `end-of-call-report` (body `{"message": report}`) as operation B's record.
//!
//! The report's timeline is `artifact.messages` (`messages` in older reports): `user`,
//! `bot`, `tool_calls` and `tool_call_result` rows, timed by `secondsFromStart` (seconds
//! from `startedAt`) and `duration` (ms). Tool calls are joined with their results by id;
//! `artifact.performanceMetrics.turnLatencies` (one per turn that produced agent output,
//! the greeting has none) go on each turn's first agent reply; squads' assistant handoffs,
//! workflow nodes and transfers become node transitions. Vapi sends no sentiment, agent
//! version, word timing for the agent, or tool error flag: those stay missing.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::fields::{
    self, array, at, clip, epoch_ms, ms, ms_of_seconds, number, object, text, tool_value, Record, TextBudget,
};
use super::{unmappable, Event, Mapped};
use crate::call::Rejection;

/// The roles of Vapi's timeline rows that are speech, and ours.
fn speaker(role: &str) -> Option<&'static str> {
    match role {
        "user" => Some("user"),
        "bot" | "assistant" => Some("agent"),
        _ => None,
    }
}

/// Vapi's built-in variables, not collected from the caller.
const BUILT_INS: [&str; 12] = [
    "now",
    "currentDateTime",
    "date",
    "time",
    "year",
    "month",
    "day",
    "customer",
    "phoneNumber",
    "transport",
    "call",
    "assistant",
];

/// An agent reply starting this long before the caller's turn ends was interrupted.
const INTERRUPTED_MS: i64 = 200;

pub(super) fn read(payload: &Map<String, Value>, texts: &TextBudget) -> Result<Event, Rejection> {
    let Some(report) = payload.get("message").filter(|m| m.is_object()) else {
        return Err(unmappable("/message", "is required: Vapi's server messages are {\"message\": {...}}"));
    };
    let kind = text(report, &[&["type"]]).unwrap_or("(no type)");
    if kind != "end-of-call-report" {
        return Ok(Event::Ignored(kind.to_owned()));
    }
    let call_id = text(report, &[&["call", "id"], &["artifact", "variables", "call", "id"]])
        .ok_or_else(|| unmappable("/message/call/id", "is required: the call's id"))?;
    let start = epoch_ms(at(report, &["startedAt"]))
        .or_else(|| epoch_ms(at(report, &["call", "createdAt"])))
        .ok_or_else(|| unmappable("/message/startedAt", "is required: when the call started"))?;
    let duration = number(report, &[&["durationMs"]]).and_then(ms);
    let end = epoch_ms(at(report, &["endedAt"])).or(duration.map(|d| start + d)).unwrap_or(start).max(start);

    let mut r = Record::default();
    r.set("provider", "vapi").set("provider_event", "end-of-call-report");
    r.set("call_id", call_id);
    let raw_type = text(report, &[&["call", "type"]]);
    r.set("call_type", call_type(raw_type));
    r.set("start_timestamp", start).set("end_timestamp", end).maybe("duration_ms", duration);
    r.maybe(
        "recording_url",
        text(
            report,
            &[&["artifact", "recording", "mono", "combinedUrl"], &["artifact", "recordingUrl"], &["recordingUrl"]],
        )
        .map(|u| clip(u, 1024)),
    );
    r.maybe(
        "recording_multi_channel_url",
        text(
            report,
            &[&["artifact", "recording", "stereoUrl"], &["artifact", "stereoRecordingUrl"], &["stereoRecordingUrl"]],
        )
        .map(|u| clip(u, 1024)),
    );
    r.maybe("transcript", text(report, &[&["artifact", "transcript"], &["transcript"]]));
    r.set("call_status", "call_ended");
    let ended = text(report, &[&["endedReason"]]);
    r.maybe("disconnection_reason", ended.map(|e| clip(e, 100)));
    r.maybe(
        "caller_phone_number",
        text(report, &[&["call", "customer", "number"], &["customer", "number"]]).map(|n| clip(n, 50)),
    );
    r.maybe("call_successful", success(at(report, &["analysis", "successEvaluation"])));
    if ended == Some("voicemail") {
        r.set("in_voicemail", true);
    }
    r.maybe("call_cost", number(report, &[&["cost"], &["costBreakdown", "total"]]).and_then(fields::cents_of_dollars));
    let mut analysis = object(report, &[&["analysis"]]).cloned().unwrap_or_default();
    if let (false, Some(summary)) = (analysis.contains_key("summary"), text(report, &[&["summary"]])) {
        analysis.insert("summary".into(), summary.into());
    }
    if !analysis.is_empty() {
        r.set("call_analysis", Value::Object(analysis));
    }
    r.maybe("collected_dynamic_variables", variables(report));
    r.set("metadata", metadata(report, raw_type));
    r.set("general_meta_data_raw", json!({ "vapi": raw_meta(report) }));
    r.set("transcript_with_tool_calls", timeline(report, start, texts)?);

    let agent =
        text(report, &[&["call", "assistantId"], &["assistant", "id"], &["call", "squadId"]]).map(str::to_owned);
    Ok(Event::Call(Mapped { record: r.0, agent, stage: 0 }))
}

fn call_type(raw: Option<&str>) -> String {
    match raw {
        Some("inboundPhoneCall" | "outboundPhoneCall") | None => "phone_call".into(),
        Some("webCall") => "web_call".into(),
        Some("vapi.websocketCall") => "websocket_call".into(),
        Some(other) => clip(other, 100),
    }
}

/// `successEvaluation`: "true" / "false" (or booleans) only; any other rubric's grade stays
/// in `call_analysis`.
fn success(value: Option<&Value>) -> Option<bool> {
    match value? {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

fn variables(report: &Value) -> Option<Value> {
    let all = object(report, &[&["artifact", "variableValues"], &["artifact", "variables"]])?;
    let kept: Map<String, Value> =
        all.iter().filter(|(k, _)| !BUILT_INS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// The models, usage, and what identifies the call at Vapi and at the carrier.
fn metadata(report: &Value, raw_type: Option<&str>) -> Value {
    let costs = array(report, &["costs"]);
    let cost_of = |kind: &str| costs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind));
    let model_name = |v: Option<&Value>, key: &str| {
        let v = v?.get(key)?;
        match (text(v, &[&["provider"]]), text(v, &[&["model"]])) {
            (Some(p), Some(m)) => Some(format!("{p}/{m}")),
            (None, Some(m)) => Some(m.to_owned()),
            _ => None,
        }
    };
    let mut models = Record::default();
    models.maybe("asr_model", model_name(cost_of("transcriber"), "transcriber"));
    models.maybe(
        "llm_model",
        model_name(cost_of("model"), "model")
            .or_else(|| text(report, &[&["assistant", "model", "model"]]).map(str::to_owned)),
    );
    models.maybe("tts_model", model_name(cost_of("voice"), "voice"));
    let mut usage = Record::default();
    usage.maybe(
        "stt_duration_seconds",
        cost_of("transcriber").and_then(|c| number(c, &[&["minutes"]])).map(|m| m * 60.0),
    );
    let tokens = ["llmPromptTokens", "llmCompletionTokens"].map(|k| number(report, &[&["costBreakdown", k]]));
    usage.maybe("llm_token", tokens.iter().flatten().copied().reduce(|a, b| a + b));
    usage.maybe("tts_characters_count", number(report, &[&["costBreakdown", "ttsCharacters"]]));
    let mut meta = Record::default();
    if !models.0.is_empty() {
        meta.set("ai_models", Value::Object(models.0));
    }
    if !usage.0.is_empty() {
        meta.set("usage_token", Value::Object(usage.0));
    }
    let prompt = array(report, &["artifact", "messages"])
        .iter()
        .chain(array(report, &["messages"]))
        .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
        .and_then(|m| text(m, &[&["message"]]));
    meta.maybe("customizable_prompt", prompt);
    meta.maybe("vapi_call_type", raw_type);
    meta.maybe(
        "call_direction",
        raw_type.and_then(|t| t.strip_suffix("PhoneCall")).filter(|d| ["inbound", "outbound"].contains(d)),
    );
    meta.maybe("agent_phone_number", text(report, &[&["phoneNumber", "number"]]));
    meta.maybe("assistant_id", text(report, &[&["call", "assistantId"]]));
    meta.maybe("squad_id", text(report, &[&["call", "squadId"]]));
    meta.maybe("phone_number_id", text(report, &[&["call", "phoneNumberId"]]));
    meta.maybe(
        "sip_call_id",
        text(
            report,
            &[
                &["call", "assistantOverrides", "variableValues", "cid"],
                &["call", "transport", "sbcCallSid"],
                &["call", "phoneCallProviderDetails", "sbcCallId"],
            ],
        ),
    );
    meta.maybe("recipient", text(report, &[&["call", "customer", "sipUri"], &["call", "customer", "number"]]));
    meta.maybe("recording_assistant_url", text(report, &[&["artifact", "recording", "mono", "assistantUrl"]]));
    meta.maybe("recording_customer_url", text(report, &[&["artifact", "recording", "mono", "customerUrl"]]));
    meta.maybe("log_url", text(report, &[&["artifact", "logUrl"]]));
    Value::Object(meta.0)
}

/// Vapi's own figures with no place in the record, kept as sent (never the call's live
/// control URLs, carrier tokens or SIP invite in the mapped record; the raw payload, kept
/// byte for byte and readable with the read scope, has them all).
fn raw_meta(report: &Value) -> Value {
    let mut raw = Record::default();
    for (key, path) in [
        ("costBreakdown", &["costBreakdown"][..]),
        ("costs", &["costs"]),
        ("assistantActivations", &["artifact", "assistantActivations"]),
        ("nodes", &["artifact", "nodes"]),
        ("transfers", &["artifact", "transfers"]),
        ("durationSeconds", &["durationSeconds"]),
    ] {
        raw.maybe(key, at(report, path).cloned());
    }
    if let Some(Value::Object(metrics)) = at(report, &["artifact", "performanceMetrics"]) {
        let kept: Map<String, Value> =
            metrics.iter().filter(|(k, _)| *k != "turnLatencies").map(|(k, v)| (k.clone(), v.clone())).collect();
        raw.set("performanceMetrics", Value::Object(kept));
    }
    Value::Object(raw.0)
}

/// The timeline: speech, tool events joined by id, latencies, interruptions and node
/// transitions, in Vapi's order.
fn timeline(report: &Value, start: i64, texts: &TextBudget) -> Result<Value, Rejection> {
    const AT: &str = "/message/artifact/messages";
    let rows = match array(report, &["artifact", "messages"]) {
        [] => array(report, &["messages"]),
        rows => rows,
    };
    let rows = fields::bounded(rows, AT)?;
    // Milliseconds from the call's start of a row.
    let offset = |row: &Value| {
        number(row, &[&["secondsFromStart"]])
            .and_then(ms_of_seconds)
            .or_else(|| number(row, &[&["time"]]).and_then(|t| ms(t - start as f64)))
    };
    let mut segments: Vec<Value> = Vec::new();
    // Tool call id → index of its `agent_function` segment.
    let mut calls: HashMap<String, usize> = HashMap::new();
    for row in rows {
        let role = text(row, &[&["role"]]).unwrap_or_default();
        if let Some(ours) = speaker(role) {
            let Some(begin) = offset(row) else { continue };
            let end = number(row, &[&["duration"]])
                .and_then(ms)
                .map(|d| begin + d)
                .or_else(|| number(row, &[&["endTime"]]).and_then(|t| ms(t - start as f64)))
                .unwrap_or(begin)
                .max(begin);
            let mut segment = Record::default();
            segment.set("role", ours).set("text", text(row, &[&["message"]]).unwrap_or_default());
            segment.set("start_ms", begin).set("end_ms", end).set("duration_ms", end - begin);
            let words = words(array(row, &["metadata", "wordLevelConfidence"]), start);
            if !words.is_empty() {
                segment.set("words", words);
            }
            segments.push(Value::Object(segment.0));
        } else if role == "tool_calls" {
            let t = offset(row).unwrap_or(0);
            for call in array(row, &["toolCalls"]) {
                let id = text(call, &[&["id"]]).unwrap_or_default();
                let mut tool = Record::default();
                tool.maybe("name", text(call, &[&["function", "name"], &["name"]]).map(fields::tool_name));
                tool.set("request_id", id);
                tool.set(
                    "params",
                    at(call, &["function", "arguments"]).map(|v| tool_value(v, texts)).unwrap_or(Value::Null),
                );
                tool.set("start_ms", t).set("end_ms", t);
                if segments.len() >= fields::MAX_ITEMS {
                    return Err(fields::too_many(AT));
                }
                calls.entry(id.to_owned()).or_insert(segments.len());
                segments.push(json!({ "role": "agent_function", "start_ms": t, "end_ms": t, "tool": tool.0 }));
            }
        } else if role == "tool_call_result" {
            let t = offset(row).unwrap_or(0);
            let id = text(row, &[&["toolCallId"]]).unwrap_or_default();
            let called = calls.get(id).copied();
            let called_at = called.and_then(|i| segments[i]["tool"]["start_ms"].as_i64()).unwrap_or(t);
            let name = text(row, &[&["name"]])
                .map(fields::tool_name)
                .or_else(|| called.and_then(|i| segments[i]["tool"]["name"].as_str().map(str::to_owned)));
            let result = at(row, &["result"]).map(|v| tool_value(v, texts)).unwrap_or(Value::Null);
            let error = text(row, &[&["error"]]).map(str::to_owned);
            if let Some(i) = called {
                // Joined by id: the call's event gets its result and how long it took.
                fields::join_result(&mut segments[i], &result, Some(error.is_some()), Some(t.max(called_at)));
                segments[i]["end_ms"] = t.max(called_at).into();
            }
            let mut tool = Record::default();
            tool.maybe("name", name).set("request_id", id).set("result", result).set("is_error", error.is_some());
            tool.maybe("error", error).set("start_ms", called_at).set("end_ms", t.max(called_at));
            segments.push(json!({ "role": "agent_result", "start_ms": t, "end_ms": t, "tool": tool.0 }));
        }
    }
    latencies(&mut segments, array(report, &["artifact", "performanceMetrics", "turnLatencies"]));
    interruptions(&mut segments);
    let segments = transitions(segments, report)?;
    Ok(Value::Array(segments))
}

/// `wordLevelConfidence` as words, in ms from the call's start (seconds in today's
/// reports, epoch ms in older ones).
fn words(list: &[Value], start: i64) -> Vec<Value> {
    let time = |v: f64| {
        if v > 1e11 {
            ms(v - start as f64)
        } else if v < 1e5 {
            ms_of_seconds(v)
        } else {
            ms(v)
        }
    };
    list.iter()
        .filter_map(|w| {
            let (s, e) = (time(number(w, &[&["start"]])?)?, time(number(w, &[&["end"]])?)?);
            let mut word = Record::default();
            word.set("word", text(w, &[&["punctuated_word"], &["word"]]).unwrap_or_default());
            word.set("start_ms", s).set("end_ms", e.max(s)).maybe("confidence", number(w, &[&["confidence"]]));
            Some(Value::Object(word.0))
        })
        .collect()
}

/// `turnLatencies[k]` on the k-th turn (see [`fields::per_turn`]).
fn latencies(segments: &mut [Value], turns: &[Value]) {
    let figure = |k: usize, key: &str| turns.get(k).and_then(|t| number(t, &[&[key]]));
    fields::per_turn(
        segments,
        |k| {
            [
                ("e2e_latency", "turnLatency"),
                ("llm_node_ttft", "modelLatency"),
                ("tts_node_ttfb", "voiceLatency"),
                ("endpointing_latency", "endpointingLatency"),
            ]
            .into_iter()
            .filter_map(|(ours, theirs)| Some((ours, figure(k, theirs)?)))
            .collect()
        },
        |k| figure(k, "transcriberLatency").map(|v| ("stt_node_ttfb", v)).into_iter().collect(),
    );
}

/// An agent reply the caller spoke over (its next caller turn starts well before it ends):
/// one pass from the end, carrying the next caller turn's start.
fn interruptions(segments: &mut [Value]) {
    let mut next_user: Option<i64> = None;
    for segment in segments.iter_mut().rev() {
        match segment["role"].as_str() {
            Some("user") => next_user = segment["start_ms"].as_i64(),
            Some("agent") => {
                let end = segment["end_ms"].as_i64().unwrap_or_default();
                if next_user.is_some_and(|u| u.saturating_add(INTERRUPTED_MS) < end) {
                    fields::segment_meta(segment).insert("interrupted".into(), true.into());
                }
            }
            _ => {}
        }
    }
}

/// Workflow nodes, squad handoffs and transfers out as `node_transition` segments.
fn transitions(segments: Vec<Value>, report: &Value) -> Result<Vec<Value>, Rejection> {
    let mut found: Vec<(Option<i64>, Value)> = Vec::new();
    let nodes = fields::bounded(array(report, &["artifact", "nodes"]), "/message/artifact/nodes")?;
    for pair in nodes.windows(2) {
        let name = |n: &Value| text(n, &[&["nodeName"]]).unwrap_or("node").to_owned();
        let at_ms = array(&pair[1], &["messages"])
            .first()
            .and_then(|m| number(m, &[&["secondsFromStart"]]))
            .and_then(ms_of_seconds);
        found.push((at_ms, json!({ "from": name(&pair[0]), "to": name(&pair[1]), "reason": "workflow" })));
    }
    let named = |a: &Value| text(a, &[&["assistantName"], &["assistantId"]]).unwrap_or("assistant").to_owned();
    let activations = fields::bounded(
        array(report, &["artifact", "assistantActivations"]),
        "/message/artifact/assistantActivations",
    )?;
    let handoffs: Vec<(i64, String)> = segments
        .iter()
        .filter(|s| s["role"] == "agent_function")
        .filter_map(|s| {
            let name = s["tool"]["name"].as_str()?;
            let lower = name.to_ascii_lowercase();
            (lower.contains("handoff") || lower.contains("transfer"))
                .then(|| (s["end_ms"].as_i64().unwrap_or(0), name.to_owned()))
        })
        .collect();
    for (k, pair) in activations.windows(2).enumerate() {
        let (at_ms, reason) = match handoffs.get(k) {
            Some((t, tool)) => (Some(*t), format!("handoff: {tool}")),
            None => (None, "handoff".to_owned()),
        };
        found.push((at_ms, json!({ "from": named(&pair[0]), "to": named(&pair[1]), "reason": reason })));
    }
    if text(report, &[&["endedReason"]]) == Some("assistant-forwarded-call") && activations.len() < 2 {
        let transfer = segments.iter().rev().find(|s| {
            s["role"] == "agent_function"
                && s["tool"]["name"].as_str().is_some_and(|n| n.to_ascii_lowercase().contains("transfer"))
        });
        let to = transfer
            .and_then(|s| {
                let p = &s["tool"]["params"];
                text(p, &[&["destination", "number"], &["destination"], &["number"], &["phoneNumber"]])
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "transfer".into());
        let from = activations.last().map(named).unwrap_or_else(|| "assistant".into());
        found.push((
            transfer.and_then(|s| s["end_ms"].as_i64()),
            json!({ "from": from, "to": to, "reason": "transfer" }),
        ));
    }
    if segments.len() + found.len() > fields::MAX_ITEMS {
        return Err(fields::too_many("/message/artifact"));
    }
    // Each in place by its time (before the first segment that starts after it), in one
    // merge; the untimed ones last.
    found.sort_by_key(|(at_ms, _)| at_ms.unwrap_or(i64::MAX));
    let transition = |at_ms: Option<i64>, node: Value| match at_ms {
        Some(t) => json!({ "role": "node_transition", "node": node, "start_ms": t, "end_ms": t }),
        None => json!({ "role": "node_transition", "node": node }),
    };
    let mut found = found.into_iter().peekable();
    let mut merged = Vec::with_capacity(segments.len() + found.len());
    for segment in segments {
        let starts = segment["start_ms"].as_i64();
        while let Some((Some(t), _)) = found.peek() {
            if starts.is_none_or(|s| s <= *t) {
                break;
            }
            let (at_ms, node) = found.next().unwrap_or_else(|| unreachable!("peeked"));
            merged.push(transition(at_ms, node));
        }
        merged.push(segment);
    }
    merged.extend(found.map(|(at_ms, node)| transition(at_ms, node)));
    Ok(merged)
}
