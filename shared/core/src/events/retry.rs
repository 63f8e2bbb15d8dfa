//! What a delivery's answer means, and when a failed one is tried again: on Svix's schedule
//! (immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after the attempt before),
//! each wait stretched or shrunk by up to a fifth at random so that a receiver that was down
//! is not met by every message at once, and never shorter than the receiver's
//! `Retry-After`, which is capped at 12 hours (the longest SQS keeps a message out of sight).

use time::format_description::FormatItem;
use time::macros::format_description;
use time::PrimitiveDateTime;

/// The waits before the attempts after the first, in seconds.
pub const SCHEDULE: [u64; 7] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
/// Attempts in all: the first and one after each wait.
pub const ATTEMPTS: u32 = SCHEDULE.len() as u32 + 1;
/// The longest wait, `Retry-After` included.
pub const MAX_WAIT_SECONDS: u64 = 12 * 3_600;
/// An endpoint whose deliveries have failed for this long (none succeeding) is disabled.
pub const FAILING_FOR_MS: u64 = 5 * 86_400_000;
/// How long a delivery waits for its answer.
pub const TIMEOUT_SECONDS: u64 = 15;

/// What an answer (or the lack of one) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A 2xx: delivered.
    Delivered,
    /// 410: the receiver says the endpoint is gone; it is disabled.
    Gone,
    /// Anything else (no answer, a timeout, 3xx: redirects are not followed, 4xx, 5xx):
    /// tried again, `retry_after` seconds at the earliest when the answer said so.
    Failed { retry_after: Option<u64> },
}

/// The verdict on an answer of `status` (`None`: no answer), with its `Retry-After` header
/// if any, at `now_ms`.
pub fn verdict(status: Option<u16>, retry_after: Option<&str>, now_ms: u64) -> Verdict {
    match status {
        Some(200..=299) => Verdict::Delivered,
        Some(410) => Verdict::Gone,
        _ => Verdict::Failed { retry_after: retry_after.and_then(|v| retry_after_seconds(v, now_ms)) },
    }
}

/// After attempt `attempt` (1 for the first) failed: how many seconds until the next one,
/// or `None` when it was the last. `jitter` is a number in [0, 1) drawn for this wait.
pub fn next_wait(attempt: u32, retry_after: Option<u64>, jitter: f64) -> Option<u64> {
    let scheduled = *SCHEDULE.get(usize::try_from(attempt).ok()?.checked_sub(1)?)?;
    let stretched = (scheduled as f64 * (0.8 + 0.4 * jitter.clamp(0.0, 1.0))).round() as u64;
    Some(stretched.max(retry_after.unwrap_or(0)).min(MAX_WAIT_SECONDS))
}

/// `Retry-After`'s seconds: a number of seconds, or an HTTP date less now; `None` when it
/// is neither. Capped at [`MAX_WAIT_SECONDS`].
pub fn retry_after_seconds(value: &str, now_ms: u64) -> Option<u64> {
    let value = value.trim();
    let seconds = match value.parse::<u64>() {
        Ok(seconds) => seconds,
        Err(_) => {
            let at = http_date(value, now_ms)?.assume_utc().unix_timestamp();
            u64::try_from(at).ok()?.saturating_sub(now_ms / 1000)
        }
    };
    Some(seconds.min(MAX_WAIT_SECONDS))
}

/// An HTTP date in any of the three forms a recipient must read (RFC 9110, 5.6.7):
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850
/// (`Sunday, 06-Nov-94 08:49:37 GMT`, its two-digit year the nearest one not more than 50
/// years ahead of `now_ms`) and asctime (`Sun Nov  6 08:49:37 1994`).
fn http_date(value: &str, now_ms: u64) -> Option<PrimitiveDateTime> {
    const IMF_FIXDATE: &[FormatItem<'_>] =
        format_description!("[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT");
    const RFC_850: &[FormatItem<'_>] =
        format_description!("[weekday repr:long], [day]-[month repr:short]-[year] [hour]:[minute]:[second] GMT");
    const ASCTIME: &[FormatItem<'_>] = format_description!(
        "[weekday repr:short] [month repr:short] [day padding:space] [hour]:[minute]:[second] [year]"
    );
    if let Ok(at) = PrimitiveDateTime::parse(value, IMF_FIXDATE) {
        return Some(at);
    }
    if let Ok(at) = PrimitiveDateTime::parse(value, ASCTIME) {
        return Some(at);
    }
    // RFC 850: its year of two digits made whole, then read as the others are.
    let (weekday, rest) = value.split_once(", ")?;
    let (date, time) = rest.split_once(' ')?;
    let (day_month, year) = date.rsplit_once('-')?;
    if year.len() != 2 || !year.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let this_year = 1970 + (now_ms / 1000 / 31_556_952) as i64;
    let short: i64 = year.parse().ok()?;
    let mut whole = this_year - this_year.rem_euclid(100) + short;
    if whole > this_year + 50 {
        whole -= 100;
    }
    PrimitiveDateTime::parse(&format!("{weekday}, {day_month}-{whole} {time}"), RFC_850).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waits_follow_svix_within_a_fifth() {
        let at = |jitter| (1..=ATTEMPTS).map(|n| next_wait(n, None, jitter)).collect::<Vec<_>>();
        assert_eq!(
            at(0.5),
            [Some(5), Some(300), Some(1_800), Some(7_200), Some(18_000), Some(36_000), Some(36_000), None]
        );
        assert_eq!(at(0.0)[1], Some(240));
        assert_eq!(at(0.999_999)[1], Some(360));
        assert_eq!(next_wait(0, None, 0.5), None);
    }

    #[test]
    fn retry_after_makes_a_wait_longer_never_shorter_and_at_most_12_hours() {
        assert_eq!(next_wait(1, Some(60), 0.5), Some(60));
        assert_eq!(next_wait(2, Some(60), 0.5), Some(300));
        assert_eq!(next_wait(7, Some(999_999), 0.5), Some(MAX_WAIT_SECONDS));
        // The last attempt is the last, whatever the receiver asks.
        assert_eq!(next_wait(ATTEMPTS, Some(5), 0.5), None);
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_a_date() {
        let now = 1_795_000_000_000; // Wed, 18 Nov 2026 11:06:40 GMT
        assert_eq!(retry_after_seconds("120", now), Some(120));
        assert_eq!(retry_after_seconds(" 7 ", now), Some(7));
        assert_eq!(retry_after_seconds("Wed, 18 Nov 2026 11:08:40 GMT", now), Some(120));
        assert_eq!(retry_after_seconds("Wed, 18 Nov 2026 11:00:00 GMT", now), Some(0), "past");
        assert_eq!(retry_after_seconds("99999999", now), Some(MAX_WAIT_SECONDS));
        // The obsolete forms a recipient must read too (RFC 9110, 5.6.7).
        assert_eq!(retry_after_seconds("Wednesday, 18-Nov-26 11:08:40 GMT", now), Some(120));
        assert_eq!(retry_after_seconds("Wed Nov 18 11:08:40 2026", now), Some(120));
        assert_eq!(retry_after_seconds("Wednesday, 18-Nov-99 11:08:40 GMT", now), Some(0), "1999, not 2099");
        for bad in ["", "-1", "soon", "1.5", "Wed, 18 Nov 2026 11:08:40 PST", "Wednesday, 18-Nov-2026 11:08:40 GMT"] {
            assert_eq!(retry_after_seconds(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn answers_are_sorted() {
        assert_eq!(verdict(Some(200), None, 0), Verdict::Delivered);
        assert_eq!(verdict(Some(204), Some("5"), 0), Verdict::Delivered);
        assert_eq!(verdict(Some(410), None, 0), Verdict::Gone);
        assert_eq!(verdict(Some(429), Some("30"), 0), Verdict::Failed { retry_after: Some(30) });
        assert_eq!(verdict(Some(503), None, 0), Verdict::Failed { retry_after: None });
        assert_eq!(verdict(Some(301), None, 0), Verdict::Failed { retry_after: None });
        assert_eq!(verdict(None, None, 0), Verdict::Failed { retry_after: None });
    }
}
