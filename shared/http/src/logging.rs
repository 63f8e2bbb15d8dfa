//! Logs and metrics: one line per request (JSON in Lambda, text locally) and CloudWatch
//! Embedded Metric Format lines. Never a credential, a transcript or a phone number: the
//! request line holds only the fields below.

use std::time::Duration;

use serde_json::json;
use tracing_subscriber::filter::Targets;

use crate::Endpoint;
use call_ingest_store::calls::{Outcome, Stored};

/// Starts logging to stdout: JSON lines when `json`, readable text otherwise. `RUST_LOG`
/// filters (`info`, or `target=level,...`; default `info`). Calling it twice is harmless.
pub fn init(json: bool) {
    let filter: Targets = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO));
    let builder = tracing_subscriber::fmt().with_target(false);
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = if json {
        builder.json().flatten_event(true).without_time().finish().with(filter).try_init()
    } else {
        builder.finish().with(filter).try_init()
    };
}

/// What one request did, logged when it ends.
#[derive(Debug)]
pub struct RequestLog {
    pub endpoint: Endpoint,
    pub workspace: Option<u64>,
    pub status: u16,
    pub problem: Option<&'static str>,
    pub bytes_in: usize,
    pub stored: Option<Stored>,
    /// Accepted as pending (202), committed later.
    pub accepted: bool,
}

impl RequestLog {
    pub fn new(endpoint: Endpoint, bytes_in: usize) -> Self {
        RequestLog { endpoint, workspace: None, status: 0, problem: None, bytes_in, stored: None, accepted: false }
    }

    /// Writes the request line, and in Lambda (`emf`) the metrics line.
    pub fn finish(&self, request_id: &str, elapsed: Duration, emf: bool) {
        let duration_ms = elapsed.as_secs_f64() * 1000.0;
        tracing::info!(
            request_id,
            operation = self.endpoint.as_str(),
            workspace = self.workspace,
            status = self.status,
            problem = self.problem,
            is_new = self.stored.map(|s| s.is_new()),
            accepted = self.accepted,
            revision = self.stored.map(|s| s.revision),
            bytes_in = self.bytes_in,
            bytes_stored = self.stored.map_or(0, |s| s.bytes_written),
            duration_ms,
            "request"
        );
        if emf {
            println!("{}", self.metrics(request_id));
        }
    }

    /// The request's metrics as one CloudWatch Embedded Metric Format object.
    pub fn metrics(&self, request_id: &str) -> serde_json::Value {
        let outcome = self.stored.map(|s| s.outcome);
        let count = |o: Outcome| u8::from(outcome == Some(o));
        json!({
            "_aws": {
                "Timestamp": call_ingest_store::calls::now_ms(),
                "CloudWatchMetrics": [{
                    "Namespace": "CallIngest",
                    "Dimensions": [["Operation"], ["Operation", "Status"]],
                    "Metrics": [
                        {"Name": "CallsCreated", "Unit": "Count"},
                        {"Name": "Replays", "Unit": "Count"},
                        {"Name": "Revisions", "Unit": "Count"},
                        {"Name": "Accepted", "Unit": "Count"},
                        {"Name": "Rejected", "Unit": "Count"},
                        {"Name": "BytesStored", "Unit": "Bytes"}
                    ]
                }]
            },
            "Operation": self.endpoint.as_str(),
            "Status": self.status.to_string(),
            "request_id": request_id,
            "CallsCreated": count(Outcome::Created),
            "Replays": count(Outcome::Unchanged),
            "Revisions": count(Outcome::Revised),
            "Accepted": u8::from(self.accepted),
            "Rejected": u8::from(self.status >= 400),
            "BytesStored": self.stored.map_or(0, |s| s.bytes_written),
        })
    }
}
