//! garde rules of our own: allowed values and millisecond fields.

use super::messages::error;
use super::number::MAX_SAFE_INTEGER;
use super::{Code, Number};

/// Segment roles the contract allows.
pub const SEGMENT_ROLES: [&str; 5] = ["user", "agent", "agent_function", "agent_result", "node_transition"];

/// Sentiments the contract allows (matched case-insensitively, stored lower-case).
pub const SENTIMENTS: [&str; 4] = ["positive", "neutral", "negative", "unknown"];

/// `user_sentiment`: one of the four values, in any case.
pub fn sentiment(value: &Option<String>, _: &()) -> garde::Result {
    match value {
        Some(s) if !SENTIMENTS.iter().any(|x| x.eq_ignore_ascii_case(s)) => {
            Err(error(Code::OneOf, "must be one of positive, neutral, negative, unknown"))
        }
        _ => Ok(()),
    }
}

/// A segment's `role`: one of the five the contract names.
pub fn segment_role(value: &Option<String>, _: &()) -> garde::Result {
    match value {
        Some(s) if !SEGMENT_ROLES.contains(&s.as_str()) => {
            Err(error(Code::OneOf, "must be one of user, agent, agent_function, agent_result, node_transition"))
        }
        _ => Ok(()),
    }
}

/// A time in milliseconds: integer or decimal, not negative, at most 2^53 - 1.
pub fn millis(value: &Option<Number>, _: &()) -> garde::Result {
    match value {
        Some(n) if n.is_negative() => Err(error(Code::Range, "must be >= 0")),
        Some(n) if n.ceil_non_negative().is_none() => {
            Err(error(Code::Range, format_args!("must be <= {MAX_SAFE_INTEGER}")))
        }
        _ => Ok(()),
    }
}

/// Any number that must not be negative.
pub fn non_negative(value: &Option<Number>, _: &()) -> garde::Result {
    match value {
        Some(n) if n.is_negative() => Err(error(Code::Range, "must be >= 0")),
        _ => Ok(()),
    }
}
