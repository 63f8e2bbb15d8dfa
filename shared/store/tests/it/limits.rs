//! Per-workspace fairness (`directory::limits`): a workspace's limit holds across several
//! instances, a full second is answered from memory, the limiter fails open, and limits
//! are set per workspace within bounds. The 429 itself is tested in call-ingest-http.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use call_ingest_store::directory::admin::AdminError;
use call_ingest_store::directory::limits::{Admission, Limiter};
use serde_json::json;
use testkit::Tables;

/// A clock the tests move by hand: a fixed second, so no test straddles two.
static SECOND: AtomicU64 = AtomicU64::new(1_900_000_000);

fn held_clock() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(SECOND.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_limit_holds_across_instances_and_a_full_second_costs_no_more_writes() {
    let t = Tables::new().await;
    let instances: Vec<Limiter> =
        (0..3).map(|_| Limiter::with_clock(t.client.clone(), &t.directory, held_clock)).collect();
    let writes = t.fault(json!({"op": "UpdateItem", "fault": "observe", "times": 1000, "table": t.directory}));
    let second = SECOND.load(Ordering::SeqCst);
    let mut admitted = 0;
    for i in 0..30 {
        match instances[i % 3].count(7, async { 5 }).await {
            Admission::Admitted => admitted += 1,
            Admission::Limited { retry_after_secs } => assert_eq!(retry_after_secs, 1),
        }
    }
    assert_eq!(admitted, 5, "the limit is per workspace, not per instance");
    assert_eq!(t.fired(writes), 5 + 3, "each instance learns the second is full once, then answers from memory");
    // Another workspace has its own count.
    assert_eq!(instances[0].count(8, async { 5 }).await, Admission::Admitted);
    // The next second starts afresh (only this test moves the clock, and only forward,
    // past the second it used).
    SECOND.compare_exchange(second, second + 10, Ordering::SeqCst, Ordering::SeqCst).ok();
    assert_eq!(instances[1].count(7, async { 5 }).await, Admission::Admitted);
    t.delete().await;
}

#[tokio::test]
async fn the_limiter_fails_open_when_its_counter_cannot_be_written() {
    let t = Tables::new().await;
    let limiter = Limiter::new(t.client.clone(), &t.directory);
    t.fault(json!({"op": "UpdateItem", "fault": "throttle", "times": 3, "table": t.directory}));
    assert_eq!(limiter.count(1, async { 1 }).await, Admission::Admitted, "a throttled counter refused a good call");
    t.delete().await;
}

#[tokio::test]
async fn limits_are_set_per_workspace_within_bounds() {
    let t = Tables::new().await;
    let backend = t.backend(&[]);
    let d = backend.directory();
    let ws = d.create_workspace("one").await.unwrap().id;
    assert_eq!(d.set_rate_limit(ws, Some(3)).await.unwrap().rate_limit, Some(3));
    assert_eq!(d.workspace(ws).await.unwrap().unwrap().rate_limit, Some(3));
    assert_eq!(d.set_rate_limit(ws, None).await.unwrap().rate_limit, None);
    for bad in [0, 1001] {
        assert!(matches!(d.set_rate_limit(ws, Some(bad)).await, Err(AdminError::Invalid(_))));
    }
    assert!(matches!(d.set_rate_limit(99, Some(3)).await, Err(AdminError::NoWorkspace(99))));
    t.delete().await;
}
