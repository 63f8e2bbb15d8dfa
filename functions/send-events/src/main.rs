//! send-events: events out (issue 33), as Standard Webhooks has them. Two events run it:
//!
//! - **the Calls table's stream** (`NEW_AND_OLD_IMAGES`, filtered to calls' heads): each
//!   committed change to a call makes its events (`call_ingest_core::events::change`), and
//!   each becomes one message on the deliveries queue for every endpoint of its workspace
//!   that takes it ([`fanout`]). A record whose messages could not all be queued is named in
//!   `batchItemFailures`: the stream hands it back, with the records after it.
//! - **the deliveries queue**: each message is sent, signed, to its endpoint ([`deliver`]);
//!   one that failed is followed by a new copy, one attempt on, on Svix's schedule (delayed
//!   up to 15 minutes, the rest slept out by `ChangeMessageVisibility`, 12 h at most), and
//!   every attempt is kept for `callctl endpoint attempts`.
//!
//! Settings: `EVENTS_QUEUE_URL` (the deliveries queue), `PUBLIC_BASE_URL` (where the API
//! is, for an event's `links.self`); the local stack's alone, which `template.rs` checks AWS
//! never sets: `EVENTS_ALLOW_LOOPBACK` and `EVENTS_RETRY_SCALE` (the schedule's waits
//! multiplied by it, so that a test need not wait 5 minutes for a third attempt).

mod deliver;
mod fanout;

use std::sync::Arc;
use std::time::Duration;

use call_ingest_core::events::retry::TIMEOUT_SECONDS;
use call_ingest_events::resolve::System;
use call_ingest_events::send::Sender;
use call_ingest_http::start;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

/// What the function is told by its environment.
pub struct Settings {
    pub queue_url: String,
    pub base_url: String,
    pub retry_scale: f64,
}

impl Settings {
    fn from_env() -> Result<Settings, Error> {
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let queue_url = var("EVENTS_QUEUE_URL").ok_or("EVENTS_QUEUE_URL is not set")?;
        let base_url = var("PUBLIC_BASE_URL").ok_or("PUBLIC_BASE_URL is not set")?.trim_end_matches('/').to_owned();
        let retry_scale = match var("EVENTS_RETRY_SCALE") {
            Some(v) => v.parse::<f64>().ok().filter(|s| *s > 0.0 && *s <= 1.0).ok_or("EVENTS_RETRY_SCALE: (0, 1]")?,
            None => 1.0,
        };
        Ok(Settings { queue_url, base_url, retry_scale })
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let backend = &start().await?;
    let settings = &Settings::from_env()?;
    let sqs = &backend.sqs_client().ok_or("no SQS client")?;
    let timeout = Duration::from_secs(TIMEOUT_SECONDS);
    let sender = &Sender::new(Arc::new(System), backend.config.events_allow_loopback, timeout)?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        if let Some(batch) = call_ingest_http::sqs::received(&event.payload) {
            return Ok::<_, Error>(deliver::batch(backend, sqs, sender, settings, batch).await);
        }
        if fanout::is_stream(&event.payload) {
            return Ok(fanout::batch(backend, sqs, settings, &event.payload).await);
        }
        Err("an event that is neither the Calls table's stream nor the deliveries queue".into())
    }))
    .await
}
