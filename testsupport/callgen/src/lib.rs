//! Deterministic generator of realistic voice-agent call records, for call-ingest's
//! tests, benchmarks and fuzz seeds.
//!
//! Mirrors the shape and size of the Python reference generator (`gen_call.py`):
//! same fields in the same order, similar byte sizes for the same options. The random
//! stream is this crate's own splitmix64, so the same seed always gives the same bytes
//! (but not the same bytes as Python).

mod body;
mod json;
mod rng;
mod timeline;

use rng::Rng;

/// How big a generated call should be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// Call duration in minutes; values that are not finite and positive mean 10.
    Minutes(f64),
    /// Grow the timeline until the body is about this many bytes (operation B only).
    Bytes(usize),
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Duration or approximate byte size.
    pub size: Size,
    /// PRNG seed; the same options always produce the same bytes.
    pub seed: u64,
    /// Call id to use; by default `call_{seed}_{10 random hex digits}`.
    pub call_id: Option<String>,
}

impl Default for Options {
    /// A 10-minute call with seed 1, like gen_call.py without arguments.
    fn default() -> Self {
        Options { size: Size::Minutes(10.0), seed: 1, call_id: None }
    }
}

const DEFAULT_MINUTES: f64 = 10.0;

fn minutes_ms(minutes: f64) -> f64 {
    let m = if minutes.is_finite() && minutes > 0.0 { minutes } else { DEFAULT_MINUTES };
    m * 60_000.0
}

/// Seeds the PRNG and picks the call id (drawing it first, as gen_call.py does).
fn start(opts: &Options) -> (Rng, String) {
    let mut rng = Rng::new(opts.seed);
    let id = match &opts.call_id {
        Some(id) => id.clone(),
        None => format!("call_{}_{:010x}", opts.seed, rng.bits(40)),
    };
    (rng, id)
}

fn to_bytes(body: &json::J) -> Vec<u8> {
    let mut out = Vec::new();
    body.write(&mut out);
    out
}

/// Operation B (create-call) body, compact JSON bytes (like `json.dump` with
/// separators `(",", ":")`).
pub fn create_call(opts: &Options) -> Vec<u8> {
    let (mut rng, id) = start(opts);
    let body = match opts.size {
        Size::Minutes(m) => body::create_call(&mut rng, Some(minutes_ms(m)), None, &id),
        Size::Bytes(b) => body::create_call(&mut rng, None, Some(b), &id),
    };
    to_bytes(&body)
}

/// Operation A (send-call-data) body, compact JSON bytes. Operation A is sized in
/// minutes only: `Size::Bytes` means the default 10 minutes, as in gen_call.py.
pub fn send_call_data(opts: &Options) -> Vec<u8> {
    let (mut rng, id) = start(opts);
    let minutes = match opts.size {
        Size::Minutes(m) => m,
        Size::Bytes(_) => DEFAULT_MINUTES,
    };
    to_bytes(&body::send_call_data(&mut rng, minutes_ms(minutes), &id))
}

/// Operation B body for a call of `minutes` minutes (benchmarks use 10 and 60 with seed 1).
pub fn create_call_minutes(minutes: f64, seed: u64) -> Vec<u8> {
    create_call(&Options { size: Size::Minutes(minutes), seed, call_id: None })
}

/// Operation B body of about `bytes` bytes (benchmarks use 5_800_000 with seed 3).
pub fn create_call_bytes(bytes: usize, seed: u64) -> Vec<u8> {
    create_call(&Options { size: Size::Bytes(bytes), seed, call_id: None })
}

#[cfg(test)]
mod tests;
