//! erase-call: erasing a call, `DELETE /api/v1/public/call/{id}`, and, on a schedule
//! (EventBridge), the retention sweep: the calls past their workspace's `retention_days`
//! erased through the same path (`Backend::sweep_retention`). A thin entry point; the
//! handler lives in call-ingest-http.

use std::time::{Duration, Instant};

use call_ingest_http::{answer, start, Endpoint};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::value::RawValue;

/// No erase starts after this long: the function's timeout is 29 s.
const SWEEP_BUDGET: Duration = Duration::from_secs(20);

#[tokio::main]
async fn main() -> Result<(), Error> {
    let backend = &start().await?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Box<RawValue>>| async move {
        if scheduled(&event.payload) {
            let now = call_ingest_store::calls::now_ms();
            let sweep = backend.sweep_retention(now, Instant::now() + SWEEP_BUDGET).await?;
            tracing::info!(?sweep, "retention sweep");
            return Ok::<_, Error>(serde_json::to_value(sweep)?);
        }
        Ok(answer(backend, Endpoint::EraseCall, event).await)
    }))
    .await
}

/// Whether the event is EventBridge's scheduled one (API Gateway's never has `source`).
fn scheduled(payload: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Source<'a> {
        #[serde(borrow)]
        source: Option<&'a str>,
        #[serde(rename = "detail-type", borrow)]
        detail_type: Option<&'a str>,
    }
    serde_json::from_str::<Source<'_>>(payload.get())
        .is_ok_and(|s| s.source == Some("aws.events") && s.detail_type == Some("Scheduled Event"))
}
