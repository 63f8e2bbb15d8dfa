//! Operation A's request body (Send Call Data), as sent.

use super::number::Number;
use super::rules;
use crate::record;

record! {
    /// The body of `POST /v1/calls`.
    pub struct SendCallData {
        #[garde(required, length(chars, min = 1, max = 200))]
        "agentId" agent_id: String,
        #[garde(required, length(chars, min = 1, max = 200))]
        "callId" call_id: String,
        #[garde(required, dive)]
        "transcript" transcript: Vec<TranscriptItem>,
        #[garde(skip)]
        "startedAt" started_at: String,
        #[garde(skip)]
        "endedAt" ended_at: String,
        #[garde(dive)]
        "metadata" metadata: SimpleMetadata,
    }
}

record! {
    /// One message of operation A's transcript.
    pub struct TranscriptItem {
        #[garde(required, length(min = 1))]
        "role" role: String,
        #[garde(required)]
        "content" content: String,
        #[garde(skip)]
        "timestamp" timestamp: String,
    }
}

record! {
    /// Operation A's small metadata object.
    pub struct SimpleMetadata {
        #[garde(custom(rules::non_negative))]
        "durationSeconds" duration_seconds: Number,
        #[garde(skip)]
        "callDirection" call_direction: String,
        #[garde(skip)]
        "callerPhone" caller_phone: String,
        #[garde(skip)]
        "outcome" outcome: String,
    }
}

/// How many bytes of an operation A body are read before its credential is known.
pub const PEEK_BYTES: usize = 4096;

/// The top-level `agentId` string, if the body's first [`PEEK_BYTES`] bytes hold it (as
/// callers that serialise sorted keys, or write it first, do). Nothing beyond that prefix
/// is read, whatever the body's size; an escaped, non-string or later `agentId` is `None`.
/// It only lets the credential and the agent be read in one round trip: the agent the
/// request is judged by is the one of the full parse.
pub fn peek_agent_id(body: &[u8]) -> Option<&str> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};

    struct Peek<'a, 'p>(&'p mut Option<&'a str>);

    impl<'de, 'p> Visitor<'de> for Peek<'de, 'p> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
            while let Some(key) = map.next_key::<&'de str>()? {
                if key == "agentId" {
                    *self.0 = map.next_value::<&'de str>().ok();
                    // Stop here: the rest of the body is not read.
                    return Err(serde::de::Error::custom("peeked"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let prefix = &body[..body.len().min(PEEK_BYTES)];
    let mut found = None;
    let _ = serde_json::Deserializer::from_slice(prefix).deserialize_map(Peek(&mut found));
    found.filter(|id| !id.is_empty() && id.chars().count() <= 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_is_peeked_from_the_first_bytes_only() {
        assert_eq!(peek_agent_id(br#"{"agentId":"agt_1","callId":"c"}"#), Some("agt_1"));
        assert_eq!(peek_agent_id(br#" { "x": [1, {"agentId": "no"}], "agentId" : "agt_2" "#), Some("agt_2"));
        let late = format!(r#"{{"transcript":"{}","agentId":"agt_3"}}"#, "a".repeat(PEEK_BYTES));
        assert_eq!(peek_agent_id(late.as_bytes()), None);
        for body in
            [&b""[..], b"[]", b"{", br#"{"agentId":7}"#, br#"{"agentId":"a\"b"}"#, br#"{"agentId":""}"#, b"\xff"]
        {
            assert_eq!(peek_agent_id(body), None, "{}", String::from_utf8_lossy(body));
        }
        let long = format!(r#"{{"agentId":"{}"}}"#, "a".repeat(201));
        assert_eq!(peek_agent_id(long.as_bytes()), None);
    }
}
