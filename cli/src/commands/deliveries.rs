//! `callctl endpoint attempts | replay | recover`: what was sent to an endpoint, and sending
//! it again. Every attempt of the last 30 days is kept with the message it sent; a message
//! is sent again by putting it back on the deliveries queue (`EVENTS_QUEUE_URL`, the
//! stack's output `EventDeliveriesQueueUrl`), where send-events takes it as new: the same
//! `webhook-id` and body, and the whole retry schedule again.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{anyhow, bail};
use call_ingest_store::calls::now_ms;
use call_ingest_store::directory::attempts::{Attempt, KEPT_FOR_SECONDS};
use call_ingest_store::Backend;
use serde_json::json;

use crate::output::{table, time_ms, Output};

/// The attempts of `endpoint` since `since` ago (at most 30 days).
pub async fn attempts(backend: &Backend, out: &Output, endpoint: &str, since: Option<Duration>) -> anyhow::Result<()> {
    let found = backend.directory().attempts(endpoint, since_ms(since)).await?;
    out.show(&json!({"endpoint": endpoint, "attempts": found}), || {
        if found.is_empty() {
            return format!("no attempts to endpoint {endpoint}\n");
        }
        let rows: Vec<Vec<String>> = found
            .iter()
            .map(|a| {
                let outcome = match (&a.status, &a.error) {
                    (Some(status), _) => format!("{status} {}", first_chars(&a.answer, 60)),
                    (None, Some(error)) => first_chars(error, 60),
                    (None, None) => String::new(),
                };
                vec![
                    time_ms(a.at),
                    a.message_id.clone(),
                    a.kind.clone(),
                    a.attempt.to_string(),
                    format!("{} ms", a.millis),
                    outcome,
                ]
            })
            .collect();
        table(&["TIME", "MESSAGE", "TYPE", "ATTEMPT", "TOOK", "ANSWER"], &rows)
    })?;
    Ok(())
}

/// Sends message `message` to `endpoint` again.
pub async fn replay(backend: &Backend, out: &Output, endpoint: &str, message: &str) -> anyhow::Result<()> {
    let found = backend.directory().attempts(endpoint, since_ms(None)).await?;
    let Some(sent) = found.into_iter().rev().find(|a| a.message_id == message) else {
        bail!("no attempt of message {message:?} to endpoint {endpoint} in the last 30 days");
    };
    let queued = queue(backend, vec![sent]).await?;
    out.show(&json!({"endpoint": endpoint, "queued": queued}), || format!("message {message} queued again\n"))?;
    Ok(())
}

/// Sends `endpoint` again every message tried since `since` ago that it never took (a 2xx).
pub async fn recover(backend: &Backend, out: &Output, endpoint: &str, since: Duration) -> anyhow::Result<()> {
    let found = backend.directory().attempts(endpoint, since_ms(Some(since))).await?;
    let mut by_message: BTreeMap<String, (bool, Attempt)> = BTreeMap::new();
    for attempt in found {
        let delivered = attempt.delivered();
        let entry = by_message.entry(attempt.message_id.clone()).or_insert((false, attempt));
        entry.0 |= delivered;
    }
    let missed: Vec<Attempt> = by_message.into_values().filter(|(delivered, _)| !delivered).map(|(_, a)| a).collect();
    let queued = queue(backend, missed).await?;
    out.show(&json!({"endpoint": endpoint, "queued": queued}), || {
        format!("{} message(s) queued again for endpoint {endpoint}\n", queued.len())
    })?;
    Ok(())
}

/// Puts the messages of `attempts` back on the deliveries queue; answers their ids.
async fn queue(backend: &Backend, attempts: Vec<Attempt>) -> anyhow::Result<Vec<String>> {
    let url = std::env::var("EVENTS_QUEUE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| anyhow!("EVENTS_QUEUE_URL is not set (the stack's output EventDeliveriesQueueUrl)"))?;
    let sqs = backend.sqs_client().ok_or_else(|| anyhow!("no SQS client"))?;
    let (ids, bodies): (Vec<String>, Vec<String>) =
        attempts.into_iter().filter_map(|a| a.delivery.map(|d| (a.message_id, d.afresh(now_ms()).to_json()))).unzip();
    call_ingest_store::sqs::send_all(&sqs, &url, &bodies).await.map_err(|e| anyhow!(e))?;
    Ok(ids)
}

fn since_ms(since: Option<Duration>) -> u64 {
    let kept = Duration::from_secs(KEPT_FOR_SECONDS);
    now_ms().saturating_sub(since.unwrap_or(kept).min(kept).as_millis() as u64)
}

fn first_chars(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().nth(n).is_some() {
        out.push('…');
    }
    out
}
