//! commit-pending: commits the calls that were accepted (202) while DynamoDB could not
//! take them, kept in S3 as pending (`call_ingest_store::calls::pending`). Run on a schedule
//! (EventBridge, every minute); a sweep commits every pending submission, oldest first,
//! through the same idempotent path as a request, each workspace at the rate of its send
//! budget, and stops well inside its timeout.

use std::time::{Duration, Instant};

use call_ingest_http::start;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

/// A sweep starts no commit after this long (the function's timeout is 60 s).
const SWEEP_BUDGET: Duration = Duration::from_secs(45);

#[tokio::main]
async fn main() -> Result<(), Error> {
    let backend = &start().await?;
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| async move {
        let started = Instant::now();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as u64;
        let sweep = backend.sweep_pending(now, started + SWEEP_BUDGET).await?;
        if sweep != Default::default() {
            let ms = started.elapsed().as_millis() as u64;
            let (committed, erased, left) = (sweep.committed, sweep.erased, sweep.left);
            tracing::info!(committed, erased, gone = sweep.gone, unreadable = sweep.unreadable, left, ms, "sweep");
        }
        Ok::<_, Error>(serde_json::to_value(sweep)?)
    }))
    .await
}
