//! The HTTP edge's costs, on calls from `callgen`:
//!
//! * `decompress_60min`: CPU time to decompress the 60-minute call sent with
//!   `Content-Encoding: gzip` (level 6) or `zstd` (level 3), through the handler's own
//!   capped decoder (`Encoding::decode`, with the default 32 MiB cap);
//! * `anonymous_6mib`: what an anonymous operation A request of at least 6 MiB (callgen's first
//!   size past it, 8.2 MB) costs before its
//!   credential is known (`peek_agent_id`, the first 4 KiB), against the full parse that
//!   ran there before.
//!
//! ```text
//! cargo bench -p call-ingest-http --bench edge
//! ```

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use call_ingest_core::api::send_call_data::peek_agent_id;
use call_ingest_core::call;
use call_ingest_http::encoding::Encoding;
use criterion::{Criterion, Throughput};

/// The decompressed size cap the functions run with by default (`MAX_DECOMPRESSED_BYTES`).
const CAP: usize = 32 << 20;

fn decompress(c: &mut Criterion) {
    let body = callgen::create_call_minutes(60.0, 1);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(&body).unwrap();
    let gz = e.finish().unwrap();
    let zst = zstd::encode_all(&body[..], 3).unwrap();
    println!("60-minute call: {} bytes, gzip {} bytes, zstd {} bytes", body.len(), gz.len(), zst.len());
    let mut group = c.benchmark_group("decompress_60min");
    group.throughput(Throughput::Bytes(body.len() as u64)).sample_size(20).measurement_time(Duration::from_secs(4));
    for (name, encoding, data) in [("gzip", Encoding::Gzip, &gz), ("zstd", Encoding::Zstd, &zst)] {
        assert_eq!(encoding.decode(data, CAP).unwrap().len(), body.len());
        group.bench_function(name, |b| b.iter(|| encoding.decode(black_box(data), CAP).map(|d| d.len()).is_ok()));
    }
    group.finish();
}

fn anonymous(c: &mut Criterion) {
    let mut minutes = 60.0;
    let body = loop {
        let opts = callgen::Options { size: callgen::Size::Minutes(minutes), seed: 1, call_id: None };
        let body = callgen::send_call_data(&opts);
        if body.len() >= 6 << 20 {
            break body;
        }
        minutes *= 1.5;
    };
    println!("operation A body: {} bytes ({minutes:.0} minutes)", body.len());
    let mut group = c.benchmark_group("anonymous_6mib");
    group.sample_size(20).measurement_time(Duration::from_secs(4));
    group.bench_function("peek", |b| b.iter(|| peek_agent_id(black_box(&body)).map(str::len)));
    group.bench_function("full_parse", |b| b.iter(|| call::parse_send_call_data(black_box(&body)).is_ok()));
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    decompress(&mut c);
    anonymous(&mut c);
    c.final_summary();
}
