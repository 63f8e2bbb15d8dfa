//! A batch split into its traces: each trace's spans with their resource and scope, so a
//! trace's part can be kept (and erased) apart from every other trace's.

use std::collections::BTreeMap;

use crate::{ExportTraceServiceRequest, ResourceSpans, ScopeSpans};

/// A trace id as 32 lower-case hex digits (OTLP JSON's form).
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The traces of `request`, by trace id (hex), each as an export of its own spans only:
/// the resources and scopes around them kept as they were.
pub fn by_trace(request: ExportTraceServiceRequest) -> BTreeMap<String, ExportTraceServiceRequest> {
    let mut out: BTreeMap<String, ExportTraceServiceRequest> = BTreeMap::new();
    for resource in request.resource_spans {
        let ResourceSpans { resource: res, scope_spans, schema_url } = resource;
        for scope in scope_spans {
            let ScopeSpans { scope: sc, spans, schema_url: scope_schema } = scope;
            // Group this scope's spans by trace, keeping their order.
            let mut groups: BTreeMap<String, Vec<_>> = BTreeMap::new();
            for span in spans {
                groups.entry(hex(&span.trace_id)).or_default().push(span);
            }
            for (trace, spans) in groups {
                let export = out.entry(trace).or_default();
                let scoped = ScopeSpans { scope: sc.clone(), spans, schema_url: scope_schema.clone() };
                // One ResourceSpans per resource of the batch: scopes of one resource stay together.
                match export.resource_spans.last_mut() {
                    Some(last) if last.resource == res && last.schema_url == schema_url => {
                        last.scope_spans.push(scoped)
                    }
                    _ => export.resource_spans.push(ResourceSpans {
                        resource: res.clone(),
                        scope_spans: vec![scoped],
                        schema_url: schema_url.clone(),
                    }),
                }
            }
        }
    }
    out
}

/// How many traces an export holds.
pub fn trace_count(request: &ExportTraceServiceRequest) -> usize {
    let ids: std::collections::BTreeSet<&[u8]> = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| s.trace_id.as_slice())
        .collect();
    ids.len()
}

/// How many spans an export holds.
pub fn span_count(request: &ExportTraceServiceRequest) -> usize {
    request.resource_spans.iter().flat_map(|r| &r.scope_spans).map(|s| s.spans.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Span;

    fn span(trace: u8, id: u8) -> Span {
        Span { trace_id: vec![trace; 16], span_id: vec![id; 8], ..Default::default() }
    }

    #[test]
    fn each_trace_gets_its_own_spans_with_their_resource_and_scope() {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![
                    ScopeSpans { spans: vec![span(1, 1), span(2, 2), span(1, 3)], ..Default::default() },
                    ScopeSpans { spans: vec![span(2, 4)], ..Default::default() },
                ],
                ..Default::default()
            }],
        };
        let traces = by_trace(request);
        assert_eq!(traces.len(), 2);
        let one = &traces[&"01".repeat(16)];
        assert_eq!(span_count(one), 2);
        let two = &traces[&"02".repeat(16)];
        assert_eq!((two.resource_spans.len(), two.resource_spans[0].scope_spans.len(), span_count(two)), (1, 2, 2));
    }
}
