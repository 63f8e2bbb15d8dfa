//! The error body every rejection answers with: RFC 9457 `application/problem+json`,
//! listing every violation with a JSON pointer, a short code and a message.

use serde::Serialize;

/// A short, stable name for what kind of rule a value broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// A required field is missing or null.
    Required,
    /// A value of the wrong JSON type.
    Type,
    /// A string or array too short or too long.
    Length,
    /// A number out of bounds, or an end before its start.
    Range,
    /// A value outside a fixed list.
    OneOf,
    /// A string that is not in the expected format (an RFC 3339 time, ...).
    Format,
    /// Past a count limit of the body (segments, words, members, nesting, values).
    Limit,
}

impl Code {
    /// The code's name as it appears in the body.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Required => "required",
            Code::Type => "type",
            Code::Length => "length",
            Code::Range => "range",
            Code::OneOf => "one_of",
            Code::Format => "format",
            Code::Limit => "limit",
        }
    }

    /// The code named `s`, as written by [`Code::as_str`].
    pub fn parse(s: &str) -> Option<Code> {
        [Code::Required, Code::Type, Code::Length, Code::Range, Code::OneOf, Code::Format, Code::Limit]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// One thing wrong with a request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    /// Where: a JSON pointer into the body (or to a query parameter: `/query/<name>`).
    pub pointer: String,
    pub code: Code,
    /// What was expected, in a few words. Never more than a short prefix of the value.
    pub message: String,
}

impl Violation {
    pub fn new(pointer: impl Into<String>, code: Code, message: impl Into<String>) -> Self {
        Violation { pointer: pointer.into(), code, message: message.into() }
    }
}

/// The start of a client's value, safe to quote back: at most 24 characters.
pub fn preview(value: &str) -> String {
    const MAX: usize = 24;
    match value.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}…", &value[..cut]),
        None => format!("{value:?}"),
    }
}

/// Why a body could not be read at all (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body is not valid JSON ({0})")]
    NotJson(String),
    #[error("the body must be a JSON object")]
    NotObject,
}

impl BodyError {
    /// Classifies a serde_json error from reading a request record.
    pub fn from_json(e: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        match e.classify() {
            Category::Data => BodyError::NotObject,
            Category::Syntax | Category::Eof | Category::Io => {
                BodyError::NotJson(format!("{} at line {} column {}", syntax_reason(e), e.line(), e.column()))
            }
        }
    }
}

/// serde_json's message without its position suffix, which we add ourselves.
fn syntax_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// An error response: status, a stable type, and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub status: u16,
    /// The last part of the type URI: `validation`, `unauthorized`, ...
    pub slug: &'static str,
    pub title: &'static str,
    pub detail: String,
    /// The violations listed: at most [`MAX_LISTED`].
    pub errors: Vec<Violation>,
    /// How many more there were, not listed (the answer stays small whatever the body).
    pub unlisted: usize,
}

/// Most violations one answer lists; the rest are counted.
pub const MAX_LISTED: usize = 100;

impl Problem {
    pub fn new(status: u16, slug: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        Problem { status, slug, title, detail: detail.into(), errors: Vec::new(), unlisted: 0 }
    }

    /// 422 listing `errors` (sorted by pointer, so the body is stable): the first
    /// [`MAX_LISTED`], and how many more there were.
    pub fn invalid(mut errors: Vec<Violation>) -> Self {
        errors.sort();
        errors.dedup();
        let detail = match errors.len() {
            1 => "1 field is invalid".to_owned(),
            n if n > MAX_LISTED => format!("{n} fields are invalid; the first {MAX_LISTED} are listed"),
            n => format!("{n} fields are invalid"),
        };
        let unlisted = errors.len().saturating_sub(MAX_LISTED);
        errors.truncate(MAX_LISTED);
        Problem { errors, unlisted, ..Problem::new(422, "validation", "Request body is invalid", detail) }
    }

    /// 422 for a body past a count limit (segments, words, keys, nesting): parsing stopped
    /// there, so this violation alone is reported, and the detail names the limit.
    pub fn over_limit(violation: Violation) -> Self {
        let detail = format!("{} at {}; parsing stopped there", violation.message, violation.pointer);
        Problem { errors: vec![violation], ..Problem::new(422, "validation", "Request body is invalid", detail) }
    }

    /// 400 for a body that cannot be read.
    pub fn unreadable(e: &BodyError) -> Self {
        Problem::new(400, "invalid-json", "Request body is not a JSON object", e.to_string())
    }

    /// The body; operation A's adds its `success` / `message` envelope.
    pub fn to_json(&self, envelope: bool, request_id: &str) -> Vec<u8> {
        #[derive(Serialize)]
        struct Body<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            success: Option<bool>,
            #[serde(skip_serializing_if = "Option::is_none")]
            message: Option<&'a str>,
            #[serde(rename = "type")]
            kind: String,
            title: &'a str,
            status: u16,
            detail: &'a str,
            request_id: &'a str,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            errors: &'a [Violation],
            #[serde(skip_serializing_if = "is_zero")]
            errors_not_listed: usize,
        }
        let body = Body {
            success: envelope.then_some(false),
            message: envelope.then_some(self.detail.as_str()),
            kind: format!("urn:call-ingest:problem:{}", self.slug),
            title: self.title,
            status: self.status,
            detail: &self.detail,
            request_id,
            errors: &self.errors,
            errors_not_listed: self.unlisted,
        };
        // Serialising plain strings and numbers into a Vec cannot fail.
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_quotes_at_most_a_short_prefix() {
        assert_eq!(preview("abc"), "\"abc\"");
        let long = "x".repeat(500);
        let p = preview(&long);
        assert!(p.len() < 40, "{p}");
        assert!(p.ends_with('…'));
    }

    #[test]
    fn operation_a_errors_carry_its_envelope() {
        let p = Problem::invalid(vec![Violation::new("/callId", Code::Required, "is required")]);
        let a: serde_json::Value = serde_json::from_slice(&p.to_json(true, "r1")).unwrap();
        assert_eq!(a["success"], false);
        assert_eq!(a["message"], "1 field is invalid");
        assert_eq!(a["status"], 422);
        assert_eq!(a["errors"][0]["code"], "required");
        let b: serde_json::Value = serde_json::from_slice(&p.to_json(false, "r1")).unwrap();
        assert!(b.get("success").is_none());
        assert_eq!(b["type"], "urn:call-ingest:problem:validation");
        assert_eq!(b["request_id"], "r1");
    }
}
