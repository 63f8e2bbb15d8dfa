//! garde's messages, rewritten to say what was expected and to carry our violation code.
//!
//! garde's `Error` holds only a message, so the code travels in front of it, separated by
//! a unit separator, and [`decode`] splits it off again.

use std::borrow::Cow;
use std::fmt::Display;

use garde::i18n::{I18n, InvalidCreditCard, InvalidEmail, InvalidPhoneNumber, InvalidUrl, IpKind};

use super::Code;

const SEP: char = '\u{1f}';

/// A garde error carrying `code`.
pub fn error(code: Code, message: impl Display) -> garde::Error {
    garde::Error::new(format!("{}{SEP}{message}", code.as_str()))
}

/// Splits a garde message into our code and the message.
pub fn decode(message: &str) -> (Code, &str) {
    message.split_once(SEP).and_then(|(code, msg)| Some((Code::parse(code)?, msg))).unwrap_or((Code::Format, message))
}

fn encoded(code: Code, message: impl Display) -> Cow<'static, str> {
    Cow::Owned(format!("{}{SEP}{message}", code.as_str()))
}

/// The messages of the garde rules this crate uses; the rules it does not use keep a
/// plain wording under the `format` code.
pub struct Messages;

impl I18n for Messages {
    fn length_lower_than(&self, min: usize) -> Cow<'static, str> {
        if min == 1 {
            encoded(Code::Length, "must not be empty")
        } else {
            encoded(Code::Length, format_args!("must be at least {min} long"))
        }
    }
    fn length_greater_than(&self, max: usize) -> Cow<'static, str> {
        encoded(Code::Length, format_args!("must be at most {max} characters"))
    }
    fn range_lower_than(&self, min: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Range, format_args!("must be >= {min}"))
    }
    fn range_greater_than(&self, max: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Range, format_args!("must be <= {max}"))
    }
    fn required_not_set(&self) -> Cow<'static, str> {
        encoded(Code::Required, "is required")
    }
    fn credit_card_invalid(&self, reason: InvalidCreditCard) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("not a card number: {reason}"))
    }
    fn pattern_no_match(&self, pattern: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must match {pattern}"))
    }
    fn contains_missing(&self, pattern: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must contain {pattern}"))
    }
    fn url_invalid(&self, reason: InvalidUrl) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must be a URL: {reason}"))
    }
    fn prefix_missing(&self, pattern: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must start with {pattern}"))
    }
    fn suffix_missing(&self, pattern: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must end with {pattern}"))
    }
    fn phone_number_invalid(&self, reason: InvalidPhoneNumber) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must be a phone number: {reason}"))
    }
    fn ip_invalid(&self, kind: IpKind) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must be an IP address ({kind})"))
    }
    fn matches_field_mismatch(&self, field: &dyn Display) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must match {field}"))
    }
    fn email_invalid(&self, reason: InvalidEmail) -> Cow<'static, str> {
        encoded(Code::Format, format_args!("must be an email address: {reason}"))
    }
    fn ascii_invalid(&self) -> Cow<'static, str> {
        encoded(Code::Format, "must be ASCII")
    }
    fn alphanumeric_invalid(&self) -> Cow<'static, str> {
        encoded(Code::Format, "must be alphanumeric")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_survive_the_trip_through_garde() {
        let e = error(Code::OneOf, "must be one of a, b");
        assert_eq!(decode(e.message()), (Code::OneOf, "must be one of a, b"));
        assert_eq!(decode("plain"), (Code::Format, "plain"));
    }
}
