//! commit-pending: commits the calls that were accepted (202) while DynamoDB could not
//! take them, kept in S3 as pending (`call_ingest_store::calls::pending`). Two events run it:
//!
//! - **the queue** (SQS, fed by S3's notification of each pending object): commits that
//!   submission within seconds, with the older ones of its call before it. A message whose
//!   commit failed is named in `batchItemFailures`, and the function tells SQS to hand it back soon (`ChangeMessageVisibility`: 5 s, then
//!   doubling, at most a minute; `queue::retry_after`), so that a backlog left by an
//!   outage is committed within seconds of storage's return, not at the queue's 6-minute
//!   visibility timeout; after 5 receipts it goes to the dead-letter queue. A paced copy
//!   (a send over its workspace's budget) of a workspace still over it commits nothing
//!   here: the sweep paces it.
//! - **the schedule** (EventBridge, every minute): a sweep commits every pending
//!   submission left, oldest first, the workspaces in turn, the paced copies at the rate of
//!   their workspace's send budget, going round while any is left, and starts no commit after 30 s of its 60 s timeout. It also catches what the queue lost or dead-lettered:
//!   the object stays in S3 until it is committed. Alongside, it releases the webhook
//!   reports held for want of an agent whose agent now exists (`calls::held`): they become
//!   pending, and the queue commits them within seconds.
//!
//! It also indexes the OpenTelemetry batches the trace receiver kept (`traces/in/`, announced
//! on the same queue; `call_ingest_store::traces`): each trace's spans become a part of
//! their trace, joined to its call; the sweep indexes those the queue left, and removes
//! the traces that joined no call within 30 days.

mod queue;

use std::time::{Duration, Instant};

use call_ingest_http::{start, Backend};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

/// No commit starts after this long. The function's timeout is 60 s, and a commit started
/// just before it may take the store's 18 s deadline and its S3 requests: a run that
/// timed out would be retried whole (a batch's messages all come back).
const SWEEP_BUDGET: Duration = Duration::from_secs(30);

/// `PENDING_RETRY_SECONDS`: how long a message whose commit failed first stays hidden
/// (then doubled at each receipt; `queue::retry_after`), 1 to 60; 5 unless set.
const RETRY_BASE_SECS: u32 = 5;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let backend = &start().await?;
    let sqs = &backend.sqs_client();
    let base = std::env::var("PENDING_RETRY_SECONDS").ok().and_then(|v| v.trim().parse().ok());
    let base = &base.filter(|b| (1..=queue::MAX_RETRY_SECS).contains(b)).unwrap_or(RETRY_BASE_SECS);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let started = Instant::now();
        match queue::messages(&event.payload, &backend.config.frames_bucket) {
            Some(batch) => {
                Ok::<_, Error>(commit_batch(backend, sqs.as_ref(), *base, batch, started + SWEEP_BUDGET).await)
            }
            None => sweep(backend, started).await,
        }
    }))
    .await
}

/// Commits the submissions a batch of queue messages announces, the messages at once;
/// answers the messages to deliver again (SQS's partial batch response), having told SQS
/// to hand them back soon.
async fn commit_batch(
    backend: &Backend,
    sqs: Option<&aws_sdk_sqs::Client>,
    base: u32,
    batch: Vec<queue::Message>,
    deadline: Instant,
) -> Value {
    let failed = futures_util::future::join_all(batch.iter().map(|message| async move {
        for key in &message.keys {
            if key.starts_with(call_ingest_http::TRACE_BATCH_PREFIX) {
                match backend.store().index_trace_batch(key).await {
                    Ok(done) => {
                        let (spans, dropped, joined) = (done.spans, done.dropped, done.joined);
                        tracing::info!(spans, dropped, joined, "trace batch indexed");
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "trace batch not indexed; the message comes back");
                        return Some(message);
                    }
                }
            }
            match backend.commit_notified(key, deadline).await {
                Ok(done) => {
                    let (committed, erased, paced) = (done.sweep.committed, done.sweep.erased, done.paced);
                    tracing::info!(committed, erased, paced, "queued commit");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "queued commit failed; the message comes back");
                    return Some(message);
                }
            }
        }
        None
    }))
    .await;
    let failed: Vec<&queue::Message> = failed.into_iter().flatten().collect();
    if let Some(sqs) = sqs {
        again_soon(sqs, base, &failed).await;
    }
    call_ingest_http::sqs::batch_item_failures(failed.iter().map(|m| m.id.as_str()))
}

/// Makes the failed messages visible again after [`queue::retry_after`] (one
/// ChangeMessageVisibilityBatch per queue; a batch holds at most 10, as an event does). A
/// change refused leaves the message to the queue's own visibility timeout, as before.
async fn again_soon(sqs: &aws_sdk_sqs::Client, base: u32, failed: &[&queue::Message]) {
    let waits: Vec<_> =
        failed.iter().map(|m| (&m.again, u64::from(queue::retry_after(m.again.received, base)))).collect();
    call_ingest_http::sqs::come_back_in(sqs, &waits).await;
}

/// How long the release of held reports may take of the sweep's budget.
const RELEASE_BUDGET: Duration = Duration::from_secs(10);
/// How soon a release that left reports (the directory or S3 failing) goes round again.
const RELEASE_AGAIN: Duration = Duration::from_secs(2);

/// Releases the held reports whose agent now exists, alongside the sweep: when the
/// directory or S3 failed, again every [`RELEASE_AGAIN`] until `deadline`, so reports held
/// during an outage are pending (and committed by the queue) within seconds of its end,
/// not at a run after the sweep's. A release that fails leaves its reports for the next.
async fn release(backend: &Backend, deadline: Instant) {
    loop {
        let left = match backend.release_held(deadline.min(Instant::now() + RELEASE_BUDGET)).await {
            Ok(r) => {
                if r != Default::default() {
                    let (released, held, expired, left) = (r.released, r.held, r.expired, r.left);
                    tracing::info!(released, held, expired, left, "release");
                }
                r.left
            }
            Err(e) => {
                tracing::warn!(error = %e, "held reports not released; again shortly");
                1
            }
        };
        if left == 0 || Instant::now() + RELEASE_AGAIN >= deadline {
            return;
        }
        tokio::time::sleep(RELEASE_AGAIN).await;
    }
}

async fn sweep(backend: &Backend, started: Instant) -> Result<Value, Error> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as u64;
    // Trace batches the queue left: those older than a minute (the queue's own are indexed
    // within seconds).
    let traces = backend.store().index_trace_batches(now.saturating_sub(60_000), started + SWEEP_BUDGET);
    // Traces that joined no call in 30 days are removed.
    let expire = backend.store().expire_unjoined_traces(now, started + RELEASE_BUDGET);
    let (_, sweep, traces, expired) = tokio::join!(
        release(backend, started + SWEEP_BUDGET),
        backend.sweep_pending(now, started + SWEEP_BUDGET),
        traces,
        expire
    );
    match traces {
        Ok((0, 0)) => {}
        Ok((indexed, left)) => tracing::info!(indexed, left, "trace batches swept"),
        Err(e) => tracing::warn!(error = %e, "trace batches not listed; next sweep"),
    }
    match expired {
        Ok((0, 0)) => {}
        Ok((removed, kept)) => tracing::info!(removed, kept, "unjoined traces past retention"),
        Err(e) => tracing::warn!(error = %e, "unjoined traces not expired; next sweep"),
    }
    let sweep = sweep?;
    if sweep != Default::default() {
        let ms = started.elapsed().as_millis() as u64;
        let (committed, erased, left) = (sweep.committed, sweep.erased, sweep.left);
        tracing::info!(committed, erased, gone = sweep.gone, unreadable = sweep.unreadable, left, ms, "sweep");
    }
    Ok(serde_json::to_value(sweep)?)
}
