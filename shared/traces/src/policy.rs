//! What is kept of an export: spans whose ids are valid, without content attributes, at
//! most [`MAX_SPANS_PER_TRACE`] of one trace in a batch. Whatever is refused is counted for
//! the answer's `partialSuccess`; whatever is dropped of a kept span is added to its
//! `dropped_attributes_count`, as OpenTelemetry's own limits do.

use std::collections::HashMap;

use crate::{ExportTraceServiceRequest, KeyValue, Span};

/// The most spans one call's trace may hold (a 60-minute pipecat call has about 2,000).
pub const MAX_SPANS_PER_TRACE: usize = 20_000;

/// Attributes that hold what was said or written (transcripts, prompts, completions, tool
/// arguments and results): dropped at ingest until a data policy keeps them. pipecat's
/// `transcript`, `input`, `output` and `text`; OpenTelemetry's GenAI conventions; LiveKit's
/// (which it strips itself before any exporter but its own, unless `allow_pii=True`);
/// OpenInference's `input.value` / `output.value`.
const CONTENT_KEYS: &[&str] = &[
    "transcript",
    "input",
    "output",
    "text",
    "system",
    "input.value",
    "output.value",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "tool.arguments",
    "tool.result",
    "lk.user_input",
    "lk.user_transcript",
    "lk.response.text",
    "lk.instructions",
    "lk.chat_ctx",
    "lk.function_tool.arguments",
    "lk.function_tool.output",
];
/// Prefixes of content attributes (indexed forms such as `gen_ai.prompt.0.content`).
const CONTENT_PREFIXES: &[&str] =
    &["lk.pii.", "gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages", "llm.output_messages"];

/// Whether an attribute holds content, not a measure (see [`CONTENT_KEYS`]).
pub fn is_content(key: &str) -> bool {
    CONTENT_KEYS.contains(&key) || CONTENT_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// What is kept of an export.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Kept {
    /// The export without the spans refused and the content attributes, and without any
    /// resource or scope left with no span.
    pub request: ExportTraceServiceRequest,
    pub spans: u64,
    pub rejected: u64,
    /// Why spans were refused (empty when none were).
    pub message: String,
}

/// Why a span is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Refusal {
    BadIds,
    OverCap,
}

impl Refusal {
    fn says(self) -> &'static str {
        match self {
            Refusal::BadIds => "trace ids must be 16 bytes and span ids 8 bytes, not all zero",
            Refusal::OverCap => "a trace holds at most 20000 spans",
        }
    }
}

fn valid_id(id: &[u8], len: usize) -> bool {
    id.len() == len && id.iter().any(|b| *b != 0)
}

fn refusal(span: &Span, seen: &mut HashMap<Vec<u8>, usize>) -> Option<Refusal> {
    let parent_ok = span.parent_span_id.is_empty() || span.parent_span_id.len() == 8;
    if !valid_id(&span.trace_id, 16) || !valid_id(&span.span_id, 8) || !parent_ok {
        return Some(Refusal::BadIds);
    }
    let n = seen.entry(span.trace_id.clone()).or_default();
    *n += 1;
    (*n > MAX_SPANS_PER_TRACE).then_some(Refusal::OverCap)
}

/// `attributes` without content; answers how many were dropped.
fn without_content(attributes: &mut Vec<KeyValue>) -> u32 {
    let before = attributes.len();
    attributes.retain(|kv| !is_content(&kv.key));
    u32::try_from(before - attributes.len()).unwrap_or(u32::MAX)
}

/// Applies the policy to an export.
pub fn keep(mut request: ExportTraceServiceRequest) -> Kept {
    let (mut spans, mut rejected) = (0u64, 0u64);
    let mut why = std::collections::BTreeSet::new();
    let mut seen = HashMap::new();
    for resource in &mut request.resource_spans {
        if let Some(r) = resource.resource.as_mut() {
            r.dropped_attributes_count = r.dropped_attributes_count.saturating_add(without_content(&mut r.attributes));
        }
        for scope in &mut resource.scope_spans {
            scope.spans.retain_mut(|span| {
                if let Some(refused) = refusal(span, &mut seen) {
                    rejected += 1;
                    why.insert(refused);
                    return false;
                }
                spans += 1;
                let dropped = without_content(&mut span.attributes);
                span.dropped_attributes_count = span.dropped_attributes_count.saturating_add(dropped);
                for event in &mut span.events {
                    let dropped = without_content(&mut event.attributes);
                    event.dropped_attributes_count = event.dropped_attributes_count.saturating_add(dropped);
                }
                for link in &mut span.links {
                    let dropped = without_content(&mut link.attributes);
                    link.dropped_attributes_count = link.dropped_attributes_count.saturating_add(dropped);
                }
                true
            });
        }
        resource.scope_spans.retain(|s| !s.spans.is_empty());
    }
    request.resource_spans.retain(|r| !r.scope_spans.is_empty());
    let message = why.iter().map(|r| r.says()).collect::<Vec<_>>().join("; ");
    Kept { request, spans, rejected, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ResourceSpans, ScopeSpans};

    use crate::text_attribute as kv;

    fn span(trace: u8, id: u8, attributes: Vec<KeyValue>) -> Span {
        Span { trace_id: vec![trace; 16], span_id: vec![id; 8], name: "turn".into(), attributes, ..Default::default() }
    }

    fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn content_attributes_are_dropped_and_counted_measures_kept() {
        let kept = keep(export(vec![span(
            1,
            1,
            vec![kv("transcript", "hello"), kv("lk.pii.user", "x"), kv("turn.number", "3"), kv("metrics.ttfb", "0.2")],
        )]));
        let s = &kept.request.resource_spans[0].scope_spans[0].spans[0];
        let keys: Vec<&str> = s.attributes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["turn.number", "metrics.ttfb"]);
        assert_eq!((s.dropped_attributes_count, kept.spans, kept.rejected), (2, 1, 0));
        assert!(kept.message.is_empty());
    }

    #[test]
    fn spans_with_bad_ids_are_refused_and_said_why() {
        let mut short = span(1, 2, vec![]);
        short.trace_id.truncate(8);
        let zero = span(0, 3, vec![]);
        let mut bad_parent = span(1, 4, vec![]);
        bad_parent.parent_span_id = vec![1; 3];
        let kept = keep(export(vec![span(1, 1, vec![]), short, zero, bad_parent]));
        assert_eq!((kept.spans, kept.rejected), (1, 3));
        assert!(kept.message.contains("16 bytes"), "{}", kept.message);
    }

    #[test]
    fn a_trace_keeps_at_most_its_cap_and_empty_scopes_go() {
        let many: Vec<Span> = (0..MAX_SPANS_PER_TRACE + 2).map(|i| span(7, (i % 250) as u8 + 1, vec![])).collect();
        let kept = keep(export(many));
        assert_eq!((kept.spans, kept.rejected), (MAX_SPANS_PER_TRACE as u64, 2));
        let all_bad = keep(export(vec![span(0, 0, vec![])]));
        assert!(all_bad.request.resource_spans.is_empty());
    }
}
