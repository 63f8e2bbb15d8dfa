//! A JSON number as sent: an integer, or a decimal when it has a fraction or is too large.

use serde::{Serialize, Serializer};

/// A JSON number, kept as the integer it was when it was one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// An integer that fits `i64`.
    Int(i64),
    /// Anything else: a decimal, or an integer beyond `i64`.
    Float(f64),
}

/// The largest integer JavaScript (and an IEEE double) represents exactly: 2^53 - 1.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

impl Number {
    /// The value as a double (exact for integers up to 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }

    /// True when the value is below zero.
    pub fn is_negative(self) -> bool {
        self.as_f64() < 0.0
    }

    /// The value rounded up to a whole number, or `None` when that does not fit between
    /// zero and 2^53 - 1 (the range of every millisecond value we store).
    pub fn ceil_non_negative(self) -> Option<i64> {
        match self {
            Number::Int(i) if (0..=MAX_SAFE_INTEGER).contains(&i) => Some(i),
            Number::Int(_) => None,
            Number::Float(f) => {
                let c = f.ceil();
                (c >= 0.0 && c <= MAX_SAFE_INTEGER as f64).then_some(c as i64)
            }
        }
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Number::Int(i) => s.serialize_i64(i),
            Number::Float(f) => s.serialize_f64(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_round_up_and_negatives_do_not_fit() {
        assert_eq!(Number::Float(1200.2).ceil_non_negative(), Some(1201));
        assert_eq!(Number::Float(1200.0).ceil_non_negative(), Some(1200));
        assert_eq!(Number::Int(-1).ceil_non_negative(), None);
        assert_eq!(Number::Float(-0.5).ceil_non_negative(), Some(0));
        assert_eq!(Number::Float(1e300).ceil_non_negative(), None);
        assert_eq!(Number::Int(MAX_SAFE_INTEGER + 1).ceil_non_negative(), None);
    }
}
