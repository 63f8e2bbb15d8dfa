//! A JSON number read as serde_json reads it, from the bytes: one rule for the counted
//! parse's reader (`reader`) and the plain word (`plain_word`).
//!
//! serde_json visits a non-negative integer as a `u64`, a negative one as an `i64`, and a
//! decimal, or `-0`, as an `f64`; a decimal is its digits divided by a power of ten
//! (`f64_from_parts` without `float_roundtrip`). Read here only where that is exact and
//! simple: at most [`MAX_DIGITS`] digits and no exponent. Anything else is `None` (not JSON,
//! or left to serde_json).

/// The most digits a number may have: 10^18 < 2^64, so they fit a `u64`.
pub(crate) const MAX_DIGITS: usize = 18;

/// Powers of ten as serde_json writes them (`POW10`): exact up to 10^22.
const POW10: [f64; MAX_DIGITS + 1] =
    [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18];

/// A number as serde_json hands it to a visitor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum JsonNumber {
    U64(u64),
    I64(i64),
    F64(f64),
}

/// The number that starts at byte `at` of `bytes`, and the byte after it.
pub(crate) fn read(bytes: &[u8], at: usize) -> Option<(JsonNumber, usize)> {
    let negative = bytes.get(at) == Some(&b'-');
    let first = at + usize::from(negative);
    let mut end = first;
    let mut significand: u64 = 0;
    let mut digits = 0usize;
    let mut fraction = 0usize;
    let mut point = false;
    while let Some(&b) = bytes.get(end) {
        match b {
            b'0'..=b'9' => {
                digits += 1;
                fraction += usize::from(point);
                if digits > MAX_DIGITS {
                    return None;
                }
                significand = significand * 10 + u64::from(b - b'0');
            }
            b'.' if !point && digits > 0 => point = true,
            _ => break,
        }
        end += 1;
    }
    let leading_zero = digits > 0 && bytes[first] == b'0' && digits - fraction > 1;
    if digits == 0 || leading_zero || (point && fraction == 0) || matches!(bytes.get(end), Some(b'e' | b'E')) {
        return None;
    }
    let number = match (point, negative) {
        (true, _) => {
            let f = significand as f64 / POW10[fraction];
            JsonNumber::F64(if negative { -f } else { f })
        }
        (false, false) => JsonNumber::U64(significand),
        // serde_json reads `-0` as a decimal.
        (false, true) if significand == 0 => JsonNumber::F64(-0.0),
        (false, true) => JsonNumber::I64(-(significand as i64)),
    };
    Some((number, end))
}
