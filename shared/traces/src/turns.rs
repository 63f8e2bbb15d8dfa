//! A call's spans as the answer shows them, and the per-turn table derived from them:
//! where the time of each turn went (the caller's wait, speech-to-text, the LLM, tools,
//! text-to-speech), from pipecat's spans (`turn` → `stt` / `llm` / `tts`, keyed on
//! `gen_ai.operation.name`) or LiveKit Agents' (`agent_turn` → `llm_node`, `tts_node`,
//! `function_tool`, with `lk.*` measures).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::split::hex;
use crate::{any_value, AnyValue, ExportTraceServiceRequest, KeyValue};

/// One span as answered: ids in hex, times in unix milliseconds and, when the call's start
/// is known, milliseconds from it; its attributes (content ones were dropped at ingest).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpanView {
    pub trace_id: String,
    pub span_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    pub name: String,
    pub start_unix_ms: f64,
    pub end_unix_ms: f64,
    pub duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<f64>,
    pub attributes: Map<String, Value>,
    /// `ok`, `error` or `unset`.
    pub status: &'static str,
}

/// A service's share of a turn.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Service {
    /// Time to first byte (the first token for an LLM), ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfb_ms: Option<f64>,
    /// The service's spans' time in the turn, ms.
    pub duration_ms: f64,
}

/// One turn of the table.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Turn {
    pub turn: u64,
    pub start_unix_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<f64>,
    pub duration_ms: f64,
    /// From the caller's last word to the agent's first sound, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_to_agent_latency_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stt: Option<Service>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<Service>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tts: Option<Service>,
    /// Time in tool calls, ms, and how many.
    pub tools_ms: f64,
    pub tool_calls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    pub interrupted: bool,
    /// The turn's service and tool spans in start order, each from the turn's start: its
    /// waterfall (STT → LLM → tools → TTS, as they ran).
    pub steps: Vec<Step>,
}

/// One bar of a turn's waterfall.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Step {
    /// `stt`, `llm`, `tool` or `tts`.
    pub kind: &'static str,
    /// The span's name (a tool's: its function's name, when the span says it).
    pub name: String,
    /// From the turn's start, ms.
    pub offset_ms: f64,
    pub duration_ms: f64,
}

/// What a span does in a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Turn,
    Stt,
    Llm,
    Tts,
    Tool,
    Other,
}

fn kind(name: &str, attributes: &Map<String, Value>) -> Kind {
    let op = attributes.get("gen_ai.operation.name").and_then(Value::as_str).unwrap_or("");
    match (name, op) {
        ("turn" | "agent_turn", _) => Kind::Turn,
        (_, "stt") => Kind::Stt,
        (_, "chat" | "llm" | "text_completion" | "generate_content") => Kind::Llm,
        (_, "tts") => Kind::Tts,
        (_, "execute_tool") => Kind::Tool,
        ("llm_node", _) => Kind::Llm,
        ("tts_node", _) => Kind::Tts,
        ("function_tool", _) => Kind::Tool,
        _ if attributes.contains_key("tool.function_name") => Kind::Tool,
        // pipecat before gen_ai.operation.name: `stt_deepgramsttservice`, `llm_…`, `tts_…`.
        _ if name.starts_with("stt_") => Kind::Stt,
        _ if name.starts_with("llm_") => Kind::Llm,
        _ if name.starts_with("tts_") => Kind::Tts,
        _ => Kind::Other,
    }
}

fn value(v: &AnyValue) -> Value {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => Value::from(s.as_str()),
        Some(any_value::Value::BoolValue(b)) => Value::from(*b),
        Some(any_value::Value::IntValue(i)) => Value::from(*i),
        Some(any_value::Value::DoubleValue(d)) => serde_json::Number::from_f64(*d).map_or(Value::Null, Value::Number),
        Some(any_value::Value::ArrayValue(a)) => Value::Array(a.values.iter().map(value).collect()),
        Some(any_value::Value::KvlistValue(l)) => Value::Object(attributes(&l.values)),
        Some(any_value::Value::BytesValue(b)) => Value::from(hex(b)),
        _ => Value::Null,
    }
}

fn attributes(kvs: &[KeyValue]) -> Map<String, Value> {
    kvs.iter().map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, value))).collect()
}

fn ms(nanos: u64) -> f64 {
    (nanos / 1_000) as f64 / 1_000.0
}

/// A number attribute (or a numeric string), if any.
fn number(attributes: &Map<String, Value>, key: &str) -> Option<f64> {
    match attributes.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn seconds_ms(attributes: &Map<String, Value>, key: &str) -> Option<f64> {
    number(attributes, key).map(|s| (s * 1_000_000.0).round() / 1_000.0)
}

fn flag(attributes: &Map<String, Value>, key: &str) -> bool {
    matches!(attributes.get(key), Some(Value::Bool(true)))
        || attributes.get(key).and_then(Value::as_str) == Some("true")
}

/// The spans of a call's traces, by start time, and its per-turn table. `call_start_ms`:
/// the call's start (unix ms), to which offsets are aligned.
pub fn view(traces: &[ExportTraceServiceRequest], call_start_ms: Option<u64>) -> (Vec<SpanView>, Vec<Turn>) {
    let offset = |t: f64| call_start_ms.map(|s| ((t - s as f64) * 1_000.0).round() / 1_000.0);
    let mut spans: Vec<SpanView> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for export in traces {
        for resource in &export.resource_spans {
            for span in resource.scope_spans.iter().flat_map(|s| &s.spans) {
                // A span sent twice (an exporter's retry) is shown once.
                if !seen.insert((span.trace_id.clone(), span.span_id.clone())) {
                    continue;
                }
                let (start, end) =
                    (ms(span.start_time_unix_nano), ms(span.end_time_unix_nano.max(span.start_time_unix_nano)));
                spans.push(SpanView {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: (!span.parent_span_id.is_empty()).then(|| hex(&span.parent_span_id)),
                    name: span.name.clone(),
                    start_unix_ms: start,
                    end_unix_ms: end,
                    duration_ms: ((end - start) * 1_000.0).round() / 1_000.0,
                    offset_ms: offset(start),
                    attributes: attributes(&span.attributes),
                    status: match span.status.as_ref().map(|s| s.code) {
                        Some(1) => "ok",
                        Some(2) => "error",
                        _ => "unset",
                    },
                });
            }
        }
    }
    spans.sort_by(|a, b| a.start_unix_ms.total_cmp(&b.start_unix_ms).then_with(|| a.span_id.cmp(&b.span_id)));
    let turns = turns(&spans, &offset);
    (spans, turns)
}

/// The turn each span belongs to: its nearest ancestor that is a turn.
fn turn_of<'a>(span: &'a SpanView, by_id: &HashMap<&str, &'a SpanView>) -> Option<&'a str> {
    let mut at = span;
    for _ in 0..64 {
        if kind(&at.name, &at.attributes) == Kind::Turn {
            return Some(&at.span_id);
        }
        at = by_id.get(at.parent_span_id.as_deref()?)?;
    }
    None
}

fn turns(spans: &[SpanView], offset: &dyn Fn(f64) -> Option<f64>) -> Vec<Turn> {
    let by_id: HashMap<&str, &SpanView> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let mut table: BTreeMap<&str, Turn> = BTreeMap::new();
    let mut order = Vec::new();
    for s in spans.iter().filter(|s| kind(&s.name, &s.attributes) == Kind::Turn) {
        order.push(s.span_id.as_str());
        let a = &s.attributes;
        table.insert(
            &s.span_id,
            Turn {
                turn: number(a, "turn.number").map_or(order.len() as u64, |n| n as u64),
                start_unix_ms: s.start_unix_ms,
                offset_ms: offset(s.start_unix_ms),
                duration_ms: seconds_ms(a, "turn.duration_seconds").unwrap_or(s.duration_ms),
                user_to_agent_latency_ms: seconds_ms(a, "turn.user_bot_latency_seconds")
                    .or_else(|| seconds_ms(a, "lk.e2e_latency")),
                interrupted: flag(a, "turn.was_interrupted") || flag(a, "lk.interrupted"),
                ..Turn::default()
            },
        );
    }
    for s in spans {
        let k = kind(&s.name, &s.attributes);
        if k == Kind::Turn {
            continue;
        }
        let Some(turn) = turn_of(s, &by_id).and_then(|t| table.get_mut(t)) else { continue };
        let a = &s.attributes;
        if turn.user_to_agent_latency_ms.is_none() {
            turn.user_to_agent_latency_ms = seconds_ms(a, "lk.e2e_latency");
        }
        turn.interrupted |= flag(a, "lk.interrupted");
        let ttfb = seconds_ms(a, "metrics.ttfb").or_else(|| match k {
            Kind::Llm => seconds_ms(a, "lk.response.ttft"),
            Kind::Tts => seconds_ms(a, "lk.response.ttfb"),
            _ => None,
        });
        let step = match k {
            Kind::Stt => "stt",
            Kind::Llm => "llm",
            Kind::Tts => "tts",
            Kind::Tool => "tool",
            _ => continue,
        };
        let named = ["tool.function_name", "lk.function_tool.name", "gen_ai.tool.name"].iter().find_map(|k| a.get(*k));
        let name = named.and_then(Value::as_str).unwrap_or(&s.name).to_owned();
        let from = ((s.start_unix_ms - turn.start_unix_ms) * 1_000.0).round() / 1_000.0;
        turn.steps.push(Step { kind: step, name, offset_ms: from, duration_ms: s.duration_ms });
        let service = match k {
            Kind::Stt => &mut turn.stt,
            Kind::Llm => &mut turn.llm,
            Kind::Tts => &mut turn.tts,
            Kind::Tool => {
                turn.tools_ms += s.duration_ms;
                turn.tool_calls += 1;
                continue;
            }
            _ => continue,
        };
        let service = service.get_or_insert_with(Service::default);
        service.duration_ms += s.duration_ms;
        // The first of the turn's spans of this service gives its time to first byte.
        service.ttfb_ms = service.ttfb_ms.or(ttfb);
        if k == Kind::Llm {
            let add = |total: &mut Option<u64>, key| {
                if let Some(n) = number(a, key) {
                    *total = Some(total.unwrap_or(0).saturating_add(n as u64));
                }
            };
            add(&mut turn.input_tokens, "gen_ai.usage.input_tokens");
            add(&mut turn.output_tokens, "gen_ai.usage.output_tokens");
        }
    }
    // LiveKit measures speech-to-text on the user's turn (`user_turn` → `eou_detection`, its
    // `lk.transcription_delay`): it counts for the agent's turn that follows it.
    for s in spans.iter().filter(|s| s.attributes.contains_key("lk.transcription_delay")) {
        let next = order.iter().find(|id| table.get(**id).is_some_and(|t| t.start_unix_ms >= s.start_unix_ms));
        if let (Some(turn), Some(delay)) =
            (next.and_then(|id| table.get_mut(*id)), seconds_ms(&s.attributes, "lk.transcription_delay"))
        {
            if turn.stt.is_none() {
                turn.stt = Some(Service { ttfb_ms: Some(delay), duration_ms: delay });
                // Its bar ends where the user's turn was detected over, before the agent's.
                let from = ((s.end_unix_ms - delay - turn.start_unix_ms) * 1_000.0).round() / 1_000.0;
                turn.steps.insert(0, Step { kind: "stt", name: s.name.clone(), offset_ms: from, duration_ms: delay });
            }
        }
    }
    let mut out: Vec<Turn> = order.into_iter().filter_map(|id| table.remove(id)).collect();
    for t in &mut out {
        t.tools_ms = (t.tools_ms * 1_000.0).round() / 1_000.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KeyValue, ResourceSpans, ScopeSpans, Span};

    const T0: u64 = 1_763_700_000_000;

    fn f(key: &str, v: f64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(any_value::Value::DoubleValue(v)) }),
            ..Default::default()
        }
    }

    fn span(id: u8, parent: Option<u8>, name: &str, from: u64, to: u64, attributes: Vec<KeyValue>) -> Span {
        Span {
            trace_id: vec![9; 16],
            span_id: vec![id; 8],
            parent_span_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
            name: name.into(),
            start_time_unix_nano: (T0 + from) * 1_000_000,
            end_time_unix_nano: (T0 + to) * 1_000_000,
            attributes,
            ..Default::default()
        }
    }

    /// What LiveKit Agents 1.x exports of a turn (livekit.agents.telemetry: its span names
    /// and `lk.*` attributes): the user's turn with its end-of-utterance detection, then the
    /// agent's turn with its LLM, tool and TTS nodes.
    fn livekit() -> ExportTraceServiceRequest {
        let mut interrupted = crate::text_attribute("lk.interrupted", "");
        interrupted.value = Some(AnyValue { value: Some(any_value::Value::BoolValue(false)) });
        let spans = vec![
            span(1, None, "agent_session", 0, 42_000, vec![crate::text_attribute("lk.room_sid", "RM_x")]),
            span(2, Some(1), "user_turn", 0, 900, vec![]),
            span(
                3,
                Some(2),
                "eou_detection",
                900,
                1_000,
                vec![f("lk.transcription_delay", 0.12), f("lk.eou.endpointing_delay", 0.5)],
            ),
            span(4, Some(1), "agent_turn", 1_000, 4_200, vec![f("lk.e2e_latency", 0.85), interrupted]),
            span(5, Some(4), "llm_node", 1_300, 2_100, vec![f("lk.response.ttft", 0.35)]),
            span(
                6,
                Some(4),
                "function_tool",
                1_500,
                1_700,
                vec![crate::text_attribute("lk.function_tool.name", "lookup")],
            ),
            span(7, Some(4), "tts_node", 2_100, 4_000, vec![f("lk.response.ttfb", 0.2)]),
        ];
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn livekits_spans_give_the_turn_table_pipecats_give() {
        let (_, turns) = view(&[livekit()], Some(T0));
        let turn = Turn {
            turn: 1,
            start_unix_ms: (T0 + 1_000) as f64,
            offset_ms: Some(1_000.0),
            duration_ms: 3_200.0,
            user_to_agent_latency_ms: Some(850.0),
            stt: Some(Service { ttfb_ms: Some(120.0), duration_ms: 120.0 }),
            llm: Some(Service { ttfb_ms: Some(350.0), duration_ms: 800.0 }),
            tts: Some(Service { ttfb_ms: Some(200.0), duration_ms: 1_900.0 }),
            tools_ms: 200.0,
            tool_calls: 1,
            input_tokens: None,
            output_tokens: None,
            interrupted: false,
            steps: vec![
                Step { kind: "stt", name: "eou_detection".into(), offset_ms: -120.0, duration_ms: 120.0 },
                Step { kind: "llm", name: "llm_node".into(), offset_ms: 300.0, duration_ms: 800.0 },
                Step { kind: "tool", name: "lookup".into(), offset_ms: 500.0, duration_ms: 200.0 },
                Step { kind: "tts", name: "tts_node".into(), offset_ms: 1_100.0, duration_ms: 1_900.0 },
            ],
        };
        assert_eq!(turns, [turn]);
    }
}
