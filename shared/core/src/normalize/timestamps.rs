//! Call timestamps: Unix seconds or milliseconds, and RFC 3339 text, to epoch milliseconds.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::api::Number;

/// Below this a Unix time is in seconds; from it on, in milliseconds.
pub const SECONDS_BELOW: f64 = 1e11;
/// From this on a Unix time is finer than milliseconds (microseconds, nanoseconds).
pub const MILLIS_BELOW: f64 = 1e14;

/// Epoch milliseconds of a Unix time sent in seconds (below 10^11) or milliseconds.
/// Fractions of a millisecond round up.
pub fn epoch_millis(value: Number) -> Result<u64, &'static str> {
    let v = value.as_f64();
    if v <= 0.0 {
        return Err("must be a positive Unix time in seconds or milliseconds");
    }
    if v >= MILLIS_BELOW {
        return Err("must be a Unix time in seconds or milliseconds, not microseconds or nanoseconds");
    }
    let ms = match value {
        Number::Int(i) if v >= SECONDS_BELOW => i as u64,
        Number::Int(i) => i as u64 * 1000,
        Number::Float(f) if f >= SECONDS_BELOW => f.ceil() as u64,
        Number::Float(f) => seconds_to_millis(f).unwrap_or_default(),
    };
    // A positive time too small for a whole millisecond (5e-324 s) would be stored as 0.
    if ms == 0 {
        return Err("must be a positive Unix time in seconds or milliseconds");
    }
    Ok(ms)
}

/// Whole milliseconds of a decimal number of seconds, rounded up, or `None` when negative
/// or beyond 2^53 ms. Rounds to a microsecond first to undo the binary fraction
/// (2.007 * 1000 is 2007.0000000000002, which must stay 2007).
pub fn seconds_to_millis(seconds: f64) -> Option<u64> {
    let ms = ((seconds * 1_000_000.0).round() / 1000.0).ceil();
    (ms >= 0.0 && ms <= crate::api::number::MAX_SAFE_INTEGER as f64).then_some(ms as u64)
}

/// RFC 3339 text (UTC) of epoch milliseconds; the number itself if it is out of range.
pub fn millis_rfc3339(ms: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// Epoch milliseconds of an RFC 3339 time, or `None` when it is not one.
pub fn rfc3339_millis(text: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_milliseconds_split_at_ten_to_the_eleven() {
        assert_eq!(epoch_millis(Number::Int(99_999_999_999)), Ok(99_999_999_999_000));
        assert_eq!(epoch_millis(Number::Int(100_000_000_000)), Ok(100_000_000_000));
        assert_eq!(epoch_millis(Number::Int(1_763_700_000)), Ok(1_763_700_000_000));
        assert_eq!(epoch_millis(Number::Float(1_763_700_000.123)), Ok(1_763_700_000_123));
        assert_eq!(epoch_millis(Number::Float(1_763_700_000_000.2)), Ok(1_763_700_000_001));
    }

    #[test]
    fn decimal_seconds_become_exact_milliseconds() {
        assert_eq!(seconds_to_millis(2.007), Some(2007));
        assert_eq!(seconds_to_millis(2.011), Some(2011));
        assert_eq!(seconds_to_millis(0.0001), Some(1));
        assert_eq!(seconds_to_millis(-1.0), None);
    }

    #[test]
    fn zero_negative_and_finer_than_milliseconds_are_refused() {
        assert!(epoch_millis(Number::Int(0)).is_err());
        assert!(epoch_millis(Number::Int(-5)).is_err());
        assert!(epoch_millis(Number::Int(1_763_700_000_000_000)).is_err());
        assert!(epoch_millis(Number::Int(99_999_999_999_999)).is_ok());
        // Found by Schemathesis: positive, yet less than half a microsecond of seconds.
        assert!(epoch_millis(Number::Float(5e-324)).is_err());
        assert_eq!(epoch_millis(Number::Float(0.0004)), Ok(1));
    }

    #[test]
    fn rfc3339_text_becomes_milliseconds() {
        assert_eq!(rfc3339_millis("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(rfc3339_millis("2026-11-21T10:00:00+01:00"), Some(1_795_251_600_000));
        assert_eq!(rfc3339_millis("yesterday"), None);
        assert_eq!(rfc3339_millis("2026-11-21 10:00"), None);
    }
}
