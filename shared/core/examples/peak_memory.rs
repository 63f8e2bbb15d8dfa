//! Peak memory of the pure pipeline on a large call: runs `call::ingest` (parse, validate,
//! normalise) once and prints the process's peak resident set size (`VmHWM` from
//! `/proc/self/status`, Linux only).
//!
//! ```text
//! # generates the ~5.8 MB call in-process (the generator's own memory counts too):
//! cargo run --release -p call-ingest-core --example peak_memory
//! # reads the body from a file, as the function gets it:
//! cargo run --release -p callgen -- --bytes 5800000 --seed 3 > /tmp/max.json
//! cargo run --release -p call-ingest-core --example peak_memory -- /tmp/max.json
//! ```
//!
//! The target is a peak under 100 MB, so the function fits a 128 MB Lambda.

use std::process::ExitCode;

use call_ingest_core::call::{self, CallDocument, Operation};

/// A `kB` line of `/proc/self/status` (`VmHWM`, `VmRSS`), in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

fn mb(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "unknown".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

fn main() -> ExitCode {
    let (body, source) = match std::env::args_os().nth(1) {
        Some(path) => match std::fs::read(&path) {
            Ok(body) => (body, format!("file {}", path.to_string_lossy())),
            Err(e) => {
                eprintln!("peak_memory: reading {}: {e}", path.to_string_lossy());
                return ExitCode::FAILURE;
            }
        },
        None => (callgen::create_call_bytes(5_800_000, 3), "callgen::create_call_bytes(5_800_000, 3)".to_owned()),
    };
    let before = status_bytes("VmHWM");
    let doc = match call::ingest(Operation::CreateCall, &body) {
        Ok(doc) => doc,
        Err(rejection) => {
            let what = match rejection {
                call::Rejection::Invalid(list) => format!("{} violations", list.len()),
                other => format!("{other:?}"),
            };
            println!("input: {} bytes, refused: {what}", body.len());
            println!("peak RSS before: {}, after: {}", mb(before), mb(status_bytes("VmHWM")));
            return ExitCode::SUCCESS;
        }
    };
    let after_ingest = status_bytes("VmHWM");
    // What the store does next with the document (not part of the target, shown for scale).
    let json = doc.to_json();
    let digest = CallDocument::digest_of("agt_example", &json);
    let after_store = status_bytes("VmHWM");

    println!("input:                          {} bytes ({source})", body.len());
    println!("segments:                       {}", doc.call.transcript_with_tool_calls.as_ref().map_or(0, Vec::len));
    println!("peak RSS before ingest:         {}", mb(before));
    println!("peak RSS after ingest:          {}  <- target: under 100 MB", mb(after_ingest));
    println!(
        "peak RSS after to_json+digest:  {} (stored JSON {} bytes, sha256 {}…)",
        mb(after_store),
        json.len(),
        &digest[..12]
    );
    drop(doc);
    ExitCode::SUCCESS
}
