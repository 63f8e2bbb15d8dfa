//! Throughput of the pure pipeline (parse + validate + normalise, `call::ingest`) against a
//! bare `serde_json::from_slice::<serde_json::Value>` of the same bytes, on realistic calls
//! from `callgen`: a 10-minute call, a 60-minute call and one of about 5.8 MB.
//!
//! ```text
//! cargo bench -p call-ingest-core --bench pipeline
//! ```
//!
//! Each input is one criterion group with `Throughput::Bytes`, holding `value` (the generic
//! tree) and `ingest` (typed records, validated and normalised). The store's work on the
//! normalised document (`CallDocument::to_json` + `CallDocument::digest_of`) is measured
//! separately, on the 60-minute call: it is not part of the ratio. After criterion's own
//! output the run prints a summary table: MB/s of both (MB = 10^6 bytes; criterion's
//! lines say MiB/s) and the ratio of ingest's time to value's, from this run's estimates.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use call_ingest_core::api::counts;
use call_ingest_core::call::{self, CallDocument, Operation};
use call_ingest_core::privacy::{self, Policy, Storage};
use criterion::{Criterion, SamplingMode, Throughput};

/// One benchmark input: a criterion group name, a label for the summary, and the body.
struct Input {
    group: &'static str,
    label: &'static str,
    body: Vec<u8>,
    /// Measurement time for this input.
    measurement: Duration,
    /// Flat for the big input: linear sampling would need 210 iterations (~10 s).
    sampling: SamplingMode,
}

fn inputs() -> Vec<Input> {
    vec![
        Input {
            group: "call_10min",
            label: "10-minute call",
            body: callgen::create_call_minutes(10.0, 1),
            measurement: Duration::from_secs(4),
            sampling: SamplingMode::Auto,
        },
        Input {
            group: "call_60min",
            label: "60-minute call",
            body: callgen::create_call_minutes(60.0, 1),
            measurement: Duration::from_secs(5),
            sampling: SamplingMode::Auto,
        },
        Input {
            group: "call_5_8mb",
            label: "5.8 MB call",
            body: callgen::create_call_bytes(5_800_000, 3),
            measurement: Duration::from_secs(5),
            sampling: SamplingMode::Flat,
        },
    ]
}

/// `value` and `ingest` on each input.
fn pipeline(c: &mut Criterion, inputs: &[Input]) {
    for input in inputs {
        let body = input.body.as_slice();
        // Check once, outside the measurement, that the body is valid and ingest succeeds:
        // timing a rejection would measure the wrong thing.
        serde_json::from_slice::<serde_json::Value>(body).expect("generated body is JSON");
        if let Err(rejection) = call::ingest(Operation::CreateCall, body) {
            panic!("{}: generated body refused: {rejection:?}", input.label);
        }

        let mut group = c.benchmark_group(input.group);
        group
            .throughput(Throughput::Bytes(body.len() as u64))
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(input.measurement)
            .sampling_mode(input.sampling);
        group.bench_function("value", |b| b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(body))));
        group.bench_function("ingest", |b| b.iter(|| call::ingest(Operation::CreateCall, black_box(body))));
        // Ingest under a `redacted` data policy (issue 32): the identity of the content as
        // sent, then every string of the call read by the rules and its values replaced.
        let redacted = Policy { storage: Storage::Redacted, ..Policy::default() };
        group.bench_function("ingest+redact", |b| {
            b.iter(|| {
                let mut doc = call::ingest(Operation::CreateCall, black_box(body)).expect("accepted");
                privacy::apply(&mut doc, &redacted, b"bench identity key", "agt_bench");
                doc
            })
        });
        // The count limits' pass alone (part of ingest): what refusing early costs a valid call.
        group.bench_function("counts", |b| b.iter(|| counts::check(black_box(body), counts::Layout::CREATE_CALL)));
        group.finish();
    }
}

/// The store's work on the normalised 60-minute document: its JSON form, and the digest of
/// that. Not part of the ratio.
fn store_work(c: &mut Criterion, sixty_minutes: &[u8]) {
    let doc = call::ingest(Operation::CreateCall, sixty_minutes).expect("60-minute call accepted");
    let json = doc.to_json();
    let mut group = c.benchmark_group("store_60min");
    group
        .throughput(Throughput::Bytes(json.len() as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("to_json", |b| b.iter(|| black_box(&doc).to_json()));
    group.bench_function("to_json+digest_of", |b| {
        b.iter(|| CallDocument::digest_of("agt_bench", &black_box(&doc).to_json()))
    });
    group.finish();
}

/// Where criterion writes its estimates: as criterion itself decides, except that when
/// neither `CRITERION_HOME` nor `CARGO_TARGET_DIR` is set the target directory is taken
/// from this executable's path (`<target>/<profile>/deps/pipeline-…`), not from
/// `cargo metadata`. The directory is then handed to criterion, so both agree.
fn output_directory() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .map_or_else(|| PathBuf::from("target/criterion"), |t| t.join("criterion"))
}

/// Criterion's headline time, in nanoseconds, of one benchmark of this run: the slope
/// for linear sampling, the mean otherwise. `None` when it did not run (filtered out, or
/// `cargo test --benches`, which writes no estimates).
fn estimate_ns(dir: &Path, group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = dir.join(group).join(function).join("new").join("estimates.json");
    let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
    if modified < since {
        return None; // a previous run's
    }
    let estimates: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    ["slope", "mean"].iter().find_map(|kind| estimates.get(kind)?.get("point_estimate")?.as_f64())
}

/// The Pydantic peer's milliseconds per call by input (`bench/pydantic_peer/peer.py`'s last
/// line, a file named by `PEER_RESULTS`; `make bench-peer` writes it), keyed by its label,
/// which is the input's group name.
fn peer_ms() -> Vec<(String, f64)> {
    let Some(path) = std::env::var_os("PEER_RESULTS") else { return Vec::new() };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some(last) = text.lines().rev().find(|l| l.starts_with('{')) else { return Vec::new() };
    let results: serde_json::Value = serde_json::from_str(last).unwrap_or_default();
    let files = results["files"].as_array().cloned().unwrap_or_default();
    files.iter().filter_map(|f| Some((f["label"].as_str()?.to_owned(), f["ms"].as_f64()?))).collect()
}

/// Targets (issue 30): ingest at most half of a bare `Value` parse, and ten times a peer.
const MAX_RATIO: f64 = 0.50;
const MIN_PEER_TIMES: f64 = 10.0;

fn summary(dir: &Path, inputs: &[Input], since: SystemTime) {
    let mut rows = Vec::new();
    for input in inputs {
        let value = estimate_ns(dir, input.group, "value", since);
        let ingest = estimate_ns(dir, input.group, "ingest", since);
        let redact = estimate_ns(dir, input.group, "ingest+redact", since);
        if let (Some(value), Some(ingest)) = (value, ingest) {
            rows.push((input, value, ingest, redact));
        }
    }
    if rows.is_empty() {
        return;
    }
    let peers = peer_ms();
    let mb_per_s = |bytes: usize, ns: f64| bytes as f64 / ns * 1e9 / 1e6;
    println!();
    println!(
        "parse + validate + normalise vs serde_json::Value (MB = 10^6 bytes; targets: ratio <= {MAX_RATIO:.2}, \
         >= {MIN_PEER_TIMES:.0}x the Pydantic peer)"
    );
    println!(
        "{:<16} {:>9} {:>11} {:>11} {:>12} {:>9} {:>9}  {:>6} {:>11} {:>8}",
        "input",
        "bytes",
        "value MB/s",
        "ingest MB/s",
        "redacted MB/s",
        "value ms",
        "ingest ms",
        "ratio",
        "peer ms",
        "x peer"
    );
    for (input, value, ingest, redact) in rows {
        let ratio = ingest / value;
        let peer = peers.iter().find(|(label, _)| label == input.group).map(|(_, ms)| *ms);
        let times = peer.map(|ms| ms * 1e6 / ingest);
        let shortfall = ratio > MAX_RATIO || times.is_some_and(|t| t < MIN_PEER_TIMES);
        println!(
            "{:<16} {:>9} {:>11.1} {:>11.1} {:>12} {:>9.3} {:>9.3}  {:>6.2} {:>11} {:>8}{}",
            input.label,
            input.body.len(),
            mb_per_s(input.body.len(), value),
            mb_per_s(input.body.len(), ingest),
            redact.map_or_else(|| "-".to_owned(), |ns| format!("{:.1}", mb_per_s(input.body.len(), ns))),
            value / 1e6,
            ingest / 1e6,
            ratio,
            peer.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.3}")),
            times.map_or_else(|| "-".to_owned(), |t| format!("{t:.1}")),
            if shortfall { "  (short of target)" } else { "" }
        );
    }
}

fn main() {
    let started = SystemTime::now();
    let dir = output_directory();
    let inputs = inputs();
    let mut c = Criterion::default().output_directory(&dir).configure_from_args();
    pipeline(&mut c, &inputs);
    store_work(&mut c, &inputs[1].body);
    c.final_summary();
    summary(&dir, &inputs, started);
}
