//! What joins a trace to a call: the attributes that may name the call's provider call id,
//! best first. A trace joins as a whole on the first of its keys, in this order, that names
//! a call of the workspace; a span's own attributes come before its resource's.

use std::collections::BTreeSet;

use crate::{any_value, ExportTraceServiceRequest, KeyValue};

/// The attributes that may name a call, in the order they are tried. Keys on one line are
/// of equal rank.
pub const JOIN_KEYS: &[&[&str]] = &[
    &["callingest.call_id"],
    &["gen_ai.conversation.id"],
    &["conversation.id"],
    &["session.id", "langfuse.session.id"],
    &["lk.room_sid", "lk.sip.callID", "lk.job_id"],
];

/// The longest value taken as a key: a provider call id is at most 200 characters, of up
/// to 4 bytes each.
pub const MAX_KEY_BYTES: usize = 800;

/// A candidate key: its rank (lower is tried first: twice the key's line in [`JOIN_KEYS`],
/// plus one when it came from a resource) and the value.
pub type Candidate = (u8, String);

fn rank_of(key: &str) -> Option<u8> {
    JOIN_KEYS.iter().position(|line| line.contains(&key)).map(|p| p as u8 * 2)
}

fn value_of(kv: &KeyValue) -> Option<String> {
    let value = match kv.value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => s.trim().to_owned(),
        any_value::Value::IntValue(i) => i.to_string(),
        _ => return None,
    };
    (!value.is_empty() && value.len() <= MAX_KEY_BYTES && !value.chars().any(char::is_control)).then_some(value)
}

fn collect(attributes: &[KeyValue], from_resource: bool, into: &mut BTreeSet<Candidate>) {
    for kv in attributes {
        if let (Some(rank), Some(value)) = (rank_of(&kv.key), value_of(kv)) {
            into.insert((rank + u8::from(from_resource), value));
        }
    }
}

/// The candidate keys of one trace's export (see [`crate::split::by_trace`]), best first.
pub fn candidates(trace: &ExportTraceServiceRequest) -> Vec<Candidate> {
    let mut found = BTreeSet::new();
    for resource in &trace.resource_spans {
        if let Some(r) = &resource.resource {
            collect(&r.attributes, true, &mut found);
        }
        for span in resource.scope_spans.iter().flat_map(|s| &s.spans) {
            collect(&span.attributes, false, &mut found);
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ResourceSpans, ScopeSpans, Span};
    use opentelemetry_proto::tonic::resource::v1::Resource;

    use crate::text_attribute as kv;

    #[test]
    fn keys_are_ranked_span_before_resource_and_by_their_line() {
        let trace = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("callingest.call_id", "from-resource"), kv("service.name", "bot")],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![
                        Span {
                            attributes: vec![kv("lk.room_sid", "RM_1"), kv("conversation.id", "conv-1")],
                            ..Default::default()
                        },
                        Span {
                            attributes: vec![kv("conversation.id", "conv-1"), kv("session.id", " ")],
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        assert_eq!(
            candidates(&trace),
            vec![(1, "from-resource".to_owned()), (4, "conv-1".to_owned()), (8, "RM_1".to_owned())]
        );
    }
}
