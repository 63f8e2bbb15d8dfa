//! Validation time against the number of invalid elements: it must grow linearly (it was
//! quadratic: every violation was compared with every wrong-type pointer).
//!
//! ```text
//! cargo bench -p call-ingest-core --bench validation
//! ```
//!
//! Two bodies at 10,000 and 50,000 elements and at the segment limit
//! (`counts::MAX_SEGMENTS`, 50,000 too today): operation A with a transcript of numbers (a wrong type each)
//! and operation B with segments that are empty objects (several violations each). Each
//! runs the whole pure pipeline (`call::ingest`: count check, parse, validate) to its 422.
//! Criterion reports time per element (`Throughput::Elements`): flat means linear.

use std::hint::black_box;
use std::time::Duration;

use call_ingest_core::api::counts::MAX_SEGMENTS;
use call_ingest_core::call::{self, Operation, Rejection};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};

fn body(operation: Operation, n: usize) -> Vec<u8> {
    match operation {
        Operation::SendCallData => {
            format!(r#"{{"agentId":"a","callId":"c","transcript":[{}]}}"#, vec!["1"; n].join(","))
        }
        Operation::CreateCall => format!(r#"{{"transcript_with_tool_calls":[{}]}}"#, vec!["{}"; n].join(",")),
        // A Retell webhook whose turns are all empty: mapped, not refused (time and memory
        // linear in them all the same).
        Operation::ProviderWebhook(_) => format!(
            r#"{{"event":"call_ended","call":{{"call_id":"c","start_timestamp":1,"transcript_with_tool_calls":[{}]}}}}"#,
            vec![r#"{"role":"agent"}"#; n].join(",")
        ),
    }
    .into_bytes()
}

fn main() {
    let mut c = Criterion::default().configure_from_args().sample_size(10).measurement_time(Duration::from_secs(8));
    let retell = Operation::ProviderWebhook(call_ingest_core::providers::Provider::Retell);
    for operation in [Operation::SendCallData, Operation::CreateCall, retell] {
        let mut group = c.benchmark_group(format!("invalid_elements_{}", operation.as_str()));
        group.sampling_mode(SamplingMode::Flat);
        let mut sizes = vec![10_000, 50_000, MAX_SEGMENTS];
        sizes.dedup();
        for n in sizes {
            let body = body(operation, n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::from_parameter(n), &body, |b, body| {
                b.iter(|| match call::ingest(operation, black_box(body)) {
                    Err(Rejection::Invalid(list)) => list.len(),
                    // A provider's payload is mapped leniently: its empty turns are kept.
                    Ok(doc) if matches!(operation, Operation::ProviderWebhook(_)) => {
                        doc.call.transcript_with_tool_calls.map_or(0, |t| t.len())
                    }
                    other => panic!("expected a 422, got {:?}", other.map(|_| ())),
                })
            });
        }
        group.finish();
    }
    c.final_summary();
}
