//! The queue's side: each message is one event for one endpoint, sent signed with the
//! endpoint's secrets (both during a rotation's overlap), its answer kept as an attempt.
//! - 2xx: delivered; the endpoint's failing streak, if any, is over.
//! - 410: the endpoint is disabled (`gone`); nothing more is sent to it.
//! - anything else (no answer in 15 s, a refused address, 3xx, 4xx, 5xx): the endpoint is
//!   failing since its first failure after a success; failing for 5 days, it is disabled
//!   (`failing`); else it is sent again on Svix's schedule (`retry::next_wait`, the
//!   receiver's `Retry-After` honoured): a new copy of the message, one attempt on, delayed
//!   (at most SQS's 15 minutes; a longer wait it sleeps out by `ChangeMessageVisibility`
//!   when it comes). So the attempt number is the copy's count of attempts made, which our
//!   own failures, and invocations timed out or throttled (receipts of the same copy), never
//!   raise. After the 8th attempt it is dropped (its attempts stay 30 days: `callctl
//!   endpoint replay` sends it again).
//!
//! A retry's copy first claims its attempt (`Directory::claim_attempt`): a twin (the next
//! copy queued twice) is dropped, so a chain of retries never doubles.
//!
//! A message for an endpoint deleted since is dropped; for one disabled, it is kept as an
//! attempt not made (`callctl endpoint recover` sends it once the endpoint is enabled). One
//! that cannot be sent for our own failure (the directory, KMS) comes back in a minute.

use call_ingest_core::events::delivery::Delivery;
use call_ingest_core::events::retry::{self, Verdict, FAILING_FOR_MS};
use call_ingest_core::events::signing;
use call_ingest_events::send::{Message, Sender};
use call_ingest_http::sqs::{Again, Received};
use call_ingest_http::Backend;
use call_ingest_store::calls::now_ms;
use call_ingest_store::directory::attempts::Attempt;
use call_ingest_store::directory::endpoints::Disabled;
use serde_json::Value;

use crate::Settings;

/// How soon a message comes back when we, not the receiver, failed.
const OUR_FAILURE_SECONDS: u64 = 60;

/// Delivers a batch of messages at once; answers the partial batch response naming those
/// to come back, having told SQS when.
pub async fn batch(
    backend: &Backend,
    sqs: &aws_sdk_sqs::Client,
    sender: &Sender,
    settings: &Settings,
    batch: Vec<Received>,
) -> Value {
    let waits = futures_util::future::join_all(batch.iter().map(|m| one(backend, sqs, sender, settings, m))).await;
    let again: Vec<(&Again, u64)> =
        batch.iter().zip(&waits).filter_map(|(m, wait)| wait.map(|w| (&m.again, w))).collect();
    call_ingest_http::sqs::come_back_in(sqs, &again).await;
    let failed = batch.iter().zip(&waits).filter(|(_, w)| w.is_some()).map(|(m, _)| m.id.as_str());
    call_ingest_http::sqs::batch_item_failures(failed)
}

/// Delivers one message; answers in how many seconds it is to come back, or `None` when it
/// is done with (delivered, dropped, out of attempts, or followed by its next copy).
async fn one(
    backend: &Backend,
    sqs: &aws_sdk_sqs::Client,
    sender: &Sender,
    settings: &Settings,
    message: &Received,
) -> Option<u64> {
    let Some(delivery) = Delivery::from_json(&message.body) else {
        tracing::error!(message = message.id, "not a delivery; dropped");
        return None;
    };
    // A copy waiting longer than SQS delays a message sleeps out the rest.
    let due_in = delivery.due_in_secs(now_ms());
    if due_in > 0 {
        return Some(due_in);
    }
    // A retry is this copy's to make, or a twin's (the next copy queued twice): one only.
    if delivery.attempts_made > 0 {
        let claim = backend.directory().claim_attempt(
            &delivery.endpoint_id,
            &delivery.message_id,
            delivery.run,
            delivery.attempt_number(),
            &message.id,
        );
        match claim.await {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(message = delivery.message_id, "a twin copy makes this attempt; dropped");
                return None;
            }
            Err(e) => return ours(settings, &e.to_string(), "attempt not claimed"),
        }
    }
    let directory = backend.directory();
    let endpoint = match directory.endpoint(&delivery.endpoint_id).await {
        Ok(Some(endpoint)) if endpoint.takes(delivery.kind) => endpoint,
        Ok(Some(endpoint)) => {
            // Disabled (or no longer taking this type): kept as an attempt not made, so that
            // `callctl endpoint recover` sends it once the endpoint is enabled.
            let why = match endpoint.disabled {
                Some(_) => "not sent: the endpoint is disabled",
                None => "not sent: the endpoint no longer takes this type",
            };
            keep(backend, &delivery, not_sent(&delivery, why)).await;
            return None;
        }
        Ok(None) => {
            tracing::info!(endpoint = delivery.endpoint_id, "endpoint deleted; dropped");
            return None;
        }
        Err(e) => return ours(settings, &e.to_string(), "endpoint not read"),
    };
    let now = now_ms();
    let secrets = match backend.sealer() {
        Some(sealer) => directory.endpoint_secrets(sealer, &endpoint, now).await.map_err(|e| e.to_string()),
        None => Err("no KMS client".to_owned()),
    };
    let secrets = match secrets {
        Ok(secrets) => secrets,
        Err(e) => return ours(settings, &e, "endpoint's secrets not opened"),
    };
    let timestamp = now / 1000;
    let body = delivery.body.as_bytes();
    let signature = signing::signature(&secrets, &delivery.message_id, timestamp, body);
    let sent = Message { id: &delivery.message_id, timestamp, body, signature: &signature };
    let answer = sender.send(&endpoint.url, &sent).await;
    let number = delivery.attempt_number();
    let attempt = Attempt {
        at: now,
        status: answer.status,
        millis: answer.millis,
        answer: String::from_utf8_lossy(&answer.first_bytes).into_owned(),
        error: answer.error.clone(),
        ..not_sent(&delivery, "")
    };
    keep(backend, &delivery, attempt).await;
    let verdict = retry::verdict(answer.status, answer.retry_after.as_deref(), now_ms());
    tracing::info!(
        endpoint = endpoint.id,
        message = delivery.message_id,
        kind = delivery.kind.as_str(),
        attempt = number,
        status = answer.status,
        millis = answer.millis,
        since_commit_ms = now_ms().saturating_sub(delivery.changed_at_ms),
        delivered = verdict == Verdict::Delivered,
        "event sent"
    );
    match verdict {
        Verdict::Delivered => {
            if endpoint.failing_since.is_some() {
                if let Err(e) = directory.endpoint_recovered(&endpoint.id).await {
                    tracing::warn!(error = %e, "endpoint's failing streak not ended");
                }
            }
            None
        }
        Verdict::Gone => {
            disable(backend, &endpoint.id, Disabled::Gone).await;
            None
        }
        Verdict::Failed { retry_after } => {
            match directory.endpoint_failed(&endpoint.id, now).await {
                Ok(Some(since)) if now.saturating_sub(since) >= FAILING_FOR_MS => {
                    disable(backend, &endpoint.id, Disabled::Failing).await;
                    return None;
                }
                Ok(None) => return None,
                Ok(Some(_)) => {}
                Err(e) => tracing::warn!(error = %e, "endpoint's failure not noted"),
            }
            // The schedule's wait (shortened by the local stack's EVENTS_RETRY_SCALE), never
            // shorter than the receiver's Retry-After (itself never shortened).
            let scheduled = scaled(retry::next_wait(number, None, jitter())?, settings);
            let wait = scheduled.max(retry_after.unwrap_or(0)).min(retry::MAX_WAIT_SECONDS);
            // The next copy, one attempt on; this one is done with once it is queued. If it
            // cannot be, this copy comes back after the wait instead (its attempt then
            // counted once less: one attempt more at worst).
            let next = delivery.again(wait, now_ms());
            match call_ingest_http::sqs::send_later(sqs, &settings.queue_url, next.to_json(), wait).await {
                Ok(()) => None,
                Err(e) => {
                    tracing::warn!(error = e, "the next attempt not queued; this message comes back instead");
                    Some(wait)
                }
            }
        }
    }
}

/// A message that `failed` for our own `error`: it comes back in a minute (scaled), no
/// attempt made.
fn ours(settings: &Settings, error: &str, failed: &str) -> Option<u64> {
    tracing::warn!(error, "{failed}; the message comes back");
    Some(scaled(OUR_FAILURE_SECONDS, settings))
}

/// `secs` of our own waits, as the local stack's EVENTS_RETRY_SCALE shortens them (at
/// least 1).
fn scaled(secs: u64, settings: &Settings) -> u64 {
    ((secs as f64 * settings.retry_scale).round() as u64).max(1)
}

/// An attempt of `delivery` at sending nothing, for `why`.
fn not_sent(delivery: &Delivery, why: &str) -> Attempt {
    Attempt {
        at: now_ms(),
        message_id: delivery.message_id.clone(),
        kind: delivery.kind.as_str().to_owned(),
        attempt: delivery.attempt_number(),
        status: None,
        millis: 0,
        answer: String::new(),
        error: (!why.is_empty()).then(|| why.to_owned()),
        delivery: None,
    }
}

/// Keeps `attempt` for `callctl endpoint attempts`, `replay` and `recover`.
async fn keep(backend: &Backend, delivery: &Delivery, attempt: Attempt) {
    if let Err(e) = backend.directory().record_attempt(delivery, &attempt).await {
        tracing::warn!(error = %e, "attempt not kept");
    }
}

async fn disable(backend: &Backend, id: &str, why: Disabled) {
    match backend.directory().disable_endpoint(id, why).await {
        Ok(_) => tracing::warn!(endpoint = id, why = ?why, "endpoint disabled"),
        Err(e) => tracing::warn!(endpoint = id, error = %e, "endpoint not disabled"),
    }
}

/// A number in [0, 1) for a wait's jitter: the clock's nanoseconds, which differ from one
/// message to the next as much as a random draw's would for this purpose.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos());
    f64::from(nanos.unwrap_or(0) % 1_000_000) / 1_000_000.0
}
