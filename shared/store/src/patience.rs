//! How long a send waits for DynamoDB on this instance before it is kept as pending (202).
//!
//! Normally [`FULL`]: a call stored at once answers 201 with its id. But when DynamoDB is
//! throttled or slow, every send would hold its instance for the whole budget before going
//! to S3, and Lambda runs only so many instances (the reserved concurrency API Gateway's
//! route throttles are sized from, at about 250 ms a call): past them Lambda throttles, and
//! API Gateway answers 500, a call lost. So once a commit on this instance failed or was
//! slow, the next ones get [`SHORT`] for [`HOLD`], and a quick commit ends that early. The
//! calls are no less durable (S3 first, committed within seconds by the queue); instances
//! are freed four to five times sooner while DynamoDB is unwell.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A healthy DynamoDB's budget: the commit and its retries.
pub const FULL: Duration = Duration::from_secs(4);
/// The budget while DynamoDB is unwell.
pub const SHORT: Duration = Duration::from_millis(750);
/// A commit slower than this (or one that failed) makes the next budgets short.
pub const SLOW: Duration = Duration::from_millis(1500);
/// For how long.
pub const HOLD: Duration = Duration::from_secs(10);

/// One per instance (in the `Backend`).
#[derive(Debug, Default)]
pub struct Patience {
    short_until: Mutex<Option<Instant>>,
}

impl Patience {
    /// The budget for the next commit.
    pub fn budget(&self) -> Duration {
        let short_until = *self.short_until.lock().unwrap_or_else(|p| p.into_inner());
        match short_until {
            Some(until) if Instant::now() < until => SHORT,
            _ => FULL,
        }
    }

    /// Records how a commit went: `stored` within `took`, or not.
    pub fn record(&self, took: Duration, stored: bool) {
        let mut short_until = self.short_until.lock().unwrap_or_else(|p| p.into_inner());
        *short_until = match stored && took <= SLOW {
            true => None,
            false => Some(Instant::now() + HOLD),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_or_slow_commit_shortens_the_next_budgets_until_a_quick_one() {
        let p = Patience::default();
        assert_eq!(p.budget(), FULL);
        p.record(Duration::from_millis(20), true);
        assert_eq!(p.budget(), FULL);
        p.record(FULL, false);
        assert_eq!(p.budget(), SHORT);
        p.record(Duration::from_secs(2), true);
        assert_eq!(p.budget(), SHORT, "stored, but slowly");
        p.record(Duration::from_millis(30), true);
        assert_eq!(p.budget(), FULL, "a quick commit ends it");
    }
}
