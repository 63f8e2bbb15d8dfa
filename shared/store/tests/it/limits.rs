//! Per-workspace fairness (`directory::limits`): a workspace's budget holds across several
//! instances, sends over it are paced and only a flood refused, a spent second is answered
//! from memory, a sparse workspace costs no counter write, a counter that cannot be written admits
//! reads and paces sends, and
//! limits are set per workspace within bounds. The 202 and 429 are tested in
//! call-ingest-http.

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use call_ingest_store::directory::admin::AdminError;
use call_ingest_store::directory::limits::{Admission, Budget, Limiter, FLOOD_FACTOR};
use serde_json::json;
use testkit::Tables;

thread_local! {
    /// A clock each test moves by hand, only forward (each `#[tokio::test]` runs on a thread
    /// of its own, so no test moves another's clock).
    static SECOND: Cell<u64> = const { Cell::new(1_900_000_000) };
}

fn held_clock() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(SECOND.with(Cell::get))
}

/// Moves the held clock to the next second.
fn next_second() {
    SECOND.with(|s| s.set(s.get() + 1));
}

#[tokio::test]
async fn a_read_budget_holds_across_instances_and_a_spent_second_costs_no_more_writes() {
    let t = Tables::new().await;
    let instances: Vec<Limiter> =
        (0..3).map(|_| Limiter::with_clock(t.client.clone(), &t.directory, held_clock)).collect();
    let writes = t.fault(json!({"op": "UpdateItem", "fault": "observe", "times": 1000, "table": t.directory}));
    next_second();
    let mut admitted = 0;
    for i in 0..30 {
        match instances[i % 3].count(7, Budget::Reads, async { 5 }).await {
            Admission::Admitted => admitted += 1,
            Admission::Limited { retry_after_secs } => assert_eq!(retry_after_secs, 1),
            Admission::Over => panic!("a read is never paced: it is admitted or refused"),
        }
    }
    // Each instance takes its first read of the second uncounted, so the budget can be
    // passed by at most one read per instance.
    assert!((5..=5 + 3).contains(&admitted), "the budget is per workspace, not per instance: {admitted}");
    // Writes: none for each instance's first, then one each until the instance learns the
    // second is spent, then none.
    assert!(t.fired(writes) <= 5 + 3, "{} counter writes", t.fired(writes));
    // Another workspace, and the sends of this one, have their own counts.
    assert_eq!(instances[0].count(8, Budget::Reads, async { 5 }).await, Admission::Admitted);
    assert_eq!(instances[0].count(7, Budget::Sends, async { 5 }).await, Admission::Admitted);
    // The next second starts afresh.
    next_second();
    assert_eq!(instances[1].count(7, Budget::Reads, async { 5 }).await, Admission::Admitted);
    t.delete().await;
}

#[tokio::test]
async fn sends_over_the_budget_are_paced_and_only_a_flood_is_refused() {
    let t = Tables::new().await;
    let instances: Vec<Limiter> =
        (0..2).map(|_| Limiter::with_clock(t.client.clone(), &t.directory, held_clock)).collect();
    next_second();
    let (mut admitted, mut over, mut refused) = (0, 0, 0);
    for i in 0..(2 * FLOOD_FACTOR as usize + 10) {
        match instances[i % 2].count(9, Budget::Sends, async { 2 }).await {
            Admission::Admitted => admitted += 1,
            Admission::Over => over += 1,
            Admission::Limited { retry_after_secs } => {
                assert_eq!(retry_after_secs, 1);
                refused += 1
            }
        }
    }
    // A budget of 2: 2 admitted (plus at most one uncounted per instance), up to 10 times
    // the budget paced, the rest refused.
    assert!((2..=4).contains(&admitted), "{admitted} admitted");
    assert_eq!(admitted + over, 2 * FLOOD_FACTOR as usize, "{admitted} admitted, {over} paced");
    assert_eq!(refused, 10);
    t.delete().await;
}

#[tokio::test]
async fn a_workspace_sending_a_call_a_second_costs_no_counter_write() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    let writes = t.fault(json!({"op": "UpdateItem", "fault": "observe", "times": 1000, "table": t.directory}));
    for _ in 0..5 {
        next_second();
        assert_eq!(limiter.count(3, Budget::Sends, async { 20 }).await, Admission::Admitted);
    }
    assert_eq!(t.fired(writes), 0, "the first request of a second is admitted without a write");
    // The second request of a second is counted, with the first.
    assert_eq!(limiter.count(3, Budget::Sends, async { 20 }).await, Admission::Admitted);
    assert_eq!(t.fired(writes), 1);
    t.delete().await;
}

#[tokio::test]
async fn a_counter_that_cannot_be_written_admits_reads_and_paces_sends() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    next_second();
    // Each instance's first request of a second needs no count.
    assert_eq!(limiter.count(1, Budget::Reads, async { 1 }).await, Admission::Admitted);
    assert_eq!(limiter.count(1, Budget::Sends, async { 1 }).await, Admission::Admitted);
    t.fault(json!({"op": "UpdateItem", "fault": "throttle", "times": 6, "table": t.directory}));
    assert_eq!(limiter.count(1, Budget::Reads, async { 1 }).await, Admission::Admitted, "a read refused");
    assert_eq!(
        limiter.count(1, Budget::Sends, async { 1 }).await,
        Admission::Over,
        "a send neither refused nor let through uncounted: made durable, committed later"
    );
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

#[tokio::test]
async fn a_large_read_costs_its_read_units_and_a_small_one_one() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    next_second();
    // Small reads: five fit a budget of five.
    for _ in 0..5 {
        assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Admitted);
    }
    next_second();
    // A read that answered about 5 MiB costs 5 units: the next read of the second is over.
    assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Admitted);
    limiter.charge(7, Budget::Reads, 4);
    assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Limited { retry_after_secs: 1 });
    // Another workspace is not charged for it, and the next second starts afresh.
    assert_eq!(limiter.count(8, Budget::Reads, async { 5 }).await, Admission::Admitted);
    next_second();
    assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Admitted);
    t.delete().await;
}

#[tokio::test]
async fn a_charge_not_reported_in_its_second_is_reported_in_a_later_one() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    next_second();
    assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Admitted);
    limiter.charge(7, Budget::Reads, 5);
    // The large read was the last of its second: the next second owes its 5 units.
    next_second();
    next_second();
    assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Limited { retry_after_secs: 1 });
    next_second();
    assert_eq!(limiter.count(7, Budget::Reads, async { 5 }).await, Admission::Admitted, "paid for");
    t.delete().await;
}

#[tokio::test]
async fn a_commit_takes_a_send_only_when_the_budget_has_room_and_a_refusal_counts_nothing() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    next_second();
    let taken = futures_util::future::join_all((0..6).map(|_| limiter.take(7, Budget::Sends, 1, 3))).await;
    assert_eq!(taken.iter().filter(|t| matches!(t, Ok(true))).count(), 3, "{taken:?}");
    assert_eq!(taken.iter().filter(|t| matches!(t, Ok(false))).count(), 3, "{taken:?}");
    let second = SECOND.with(Cell::get);
    let counter = t
        .client
        .get_item()
        .table_name(&t.directory)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(format!("RATE#7#{second}")))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("RATE".into()))
        .send()
        .await
        .unwrap();
    let n = counter.item.unwrap()["n"].as_n().unwrap().clone();
    assert_eq!(n, "3", "the refused takes added nothing: a queue asking for each paced call cannot flood");
    next_second();
    assert!(limiter.take(7, Budget::Sends, 1, 3).await.unwrap(), "a new second has room again");
    t.delete().await;
}

/// The model's requests are taken all at once: a call needing three takes three or none; a
/// call needing more than the budget takes a whole unused second.
#[tokio::test]
async fn the_models_requests_are_taken_whole_from_a_budget_of_their_own() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    next_second();
    assert!(limiter.take(7, Budget::Model, 3, 5).await.unwrap());
    assert!(!limiter.take(7, Budget::Model, 3, 5).await.unwrap(), "3 more would make 6 of 5");
    assert!(limiter.take(7, Budget::Model, 2, 5).await.unwrap(), "2 more make 5");
    assert!(!limiter.take(7, Budget::Model, 1, 5).await.unwrap());
    assert!(limiter.take(7, Budget::Sends, 1, 5).await.unwrap(), "sends have a budget apart");
    // More than the whole budget: only a second nobody has used, which it fills.
    assert!(!limiter.take(7, Budget::Model, 6, 5).await.unwrap(), "this second is used");
    assert!(limiter.take(8, Budget::Model, 6, 5).await.unwrap(), "workspace 8's is not");
    assert!(!limiter.take(8, Budget::Model, 1, 5).await.unwrap(), "and is full");
    next_second();
    assert!(limiter.take(7, Budget::Model, 5, 5).await.unwrap(), "a new second has room again");
    t.delete().await;
}

/// A counter that cannot be written (refused, throttled, down) is an error, never "no
/// room": a commit counted as paced would be dropped from the queue and passed over by
/// every sweep (in AWS, where commit-pending had no right on the counters, no call
/// answered 202 was ever stored).
#[tokio::test]
async fn a_counter_that_cannot_be_written_is_an_error_not_a_refusal() {
    let t = Tables::new().await;
    let limiter = Limiter::with_clock(t.client.clone(), &t.directory, held_clock);
    next_second();
    t.fault(serde_json::json!({"op": "UpdateItem", "fault": "invalid", "table": t.directory, "times": 1}));
    assert!(limiter.take(7, Budget::Sends, 1, 3).await.is_err(), "a refused counter is an error");
    t.fault(serde_json::json!({"op": "UpdateItem", "fault": "throttle", "table": t.directory, "times": 4}));
    assert!(limiter.take(7, Budget::Sends, 1, 3).await.is_err(), "a throttled counter is an error");
    assert!(limiter.take(7, Budget::Sends, 1, 3).await.unwrap(), "and a counter that answers has room");
    t.delete().await;
}
