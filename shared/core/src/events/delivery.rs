//! One event on its way to one endpoint: the message the fan-out puts on the deliveries
//! queue for each endpoint that takes the event, and the delivery function reads. It holds
//! the event's body as it will be sent, so every attempt (and a replay) sends the same bytes
//! under the same `webhook-id`; only `webhook-timestamp` and the signature are the attempt's.

use serde::{Deserialize, Serialize};

use super::change::Change;
use super::EventType;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub endpoint_id: String,
    pub workspace_id: u64,
    /// `webhook-id`.
    pub message_id: String,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The call's internal id.
    pub call_id: u64,
    /// 0 for `call.erased`.
    pub revision: u64,
    /// The event's body, as sent.
    pub body: String,
    /// When the change was committed (epoch ms), to measure commit-to-delivery.
    pub changed_at_ms: u64,
    /// Attempts made before this copy: a copy whose attempt failed is followed by a new one
    /// with one more (`again`), so that neither our own failures nor a timed-out or
    /// throttled invocation (each a receipt of the same copy) counts as an attempt.
    #[serde(default)]
    pub attempts_made: u32,
    /// Not to be sent before (epoch ms): a wait longer than the 15 minutes SQS delays a
    /// message, which the copy sleeps out (`ChangeMessageVisibility`) when it comes early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before_ms: Option<u64>,
    /// Which run of the schedule this copy is in: 0 for the first, else when (epoch ms) a
    /// replay or recover began it. A retry claims its attempt within its run, so a run begun
    /// again is not taken for a twin of the first's copies.
    #[serde(default)]
    pub run: u64,
}

impl Delivery {
    /// `change`'s event, with `body` (`payload::body`), for endpoint `endpoint_id`.
    pub fn new(change: &Change, endpoint_id: &str, body: Vec<u8>) -> Delivery {
        let h = &change.head;
        let erased = change.kind == EventType::CallErased;
        Delivery {
            endpoint_id: endpoint_id.to_owned(),
            workspace_id: h.workspace_id,
            message_id: change.message_id(),
            kind: change.kind,
            call_id: h.id.unwrap_or(0),
            revision: if erased { 0 } else { h.revision },
            // The body is JSON made by `payload::body`: UTF-8.
            body: String::from_utf8(body).unwrap_or_default(),
            changed_at_ms: change.at_ms(),
            attempts_made: 0,
            not_before_ms: None,
            run: 0,
        }
    }

    /// The copy that follows an attempt that failed at `now_ms`: one attempt more, not to be
    /// sent for `wait_secs`.
    pub fn again(&self, wait_secs: u64, now_ms: u64) -> Delivery {
        Delivery {
            attempts_made: self.attempts_made.saturating_add(1),
            not_before_ms: Some(now_ms.saturating_add(wait_secs.saturating_mul(1000))),
            ..self.clone()
        }
    }

    /// This message as sent again by hand (`callctl endpoint replay`, `recover`) at `now_ms`:
    /// its body and `webhook-id`, the schedule from its start, in a run of its own.
    pub fn afresh(&self, now_ms: u64) -> Delivery {
        Delivery { attempts_made: 0, not_before_ms: None, run: now_ms, ..self.clone() }
    }

    /// The number of this copy's attempt (1 for the first).
    pub fn attempt_number(&self) -> u32 {
        self.attempts_made.saturating_add(1)
    }

    /// How many seconds this copy is still to wait at `now_ms` (0: send it now).
    pub fn due_in_secs(&self, now_ms: u64) -> u64 {
        self.not_before_ms.map_or(0, |at| at.saturating_sub(now_ms).div_ceil(1000))
    }

    /// The message's text on the queue. SQS refuses a message holding U+FFFE or U+FFFF
    /// (its characters are #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD and above
    /// #xFFFF), which JSON leaves as they are: a call id holding one would have its record
    /// handed back by the stream, blocking its shard, for 24 hours. They are escaped here
    /// (`\ufffe`), which JSON reads back as the same character; below #x20 serde_json
    /// escapes already, and a Rust string holds no surrogate.
    pub fn to_json(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        match text.contains(['\u{FFFE}', '\u{FFFF}']) {
            // Outside strings JSON is ASCII: every one of them is inside a string.
            true => text.replace('\u{FFFE}', "\\ufffe").replace('\u{FFFF}', "\\uffff"),
            false => text,
        }
    }

    /// A message read from the queue; `None` when it is not one of ours.
    pub fn from_json(text: &str) -> Option<Delivery> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::change::{changes, Head};

    #[test]
    fn a_delivery_reads_back_as_it_was_written() {
        let head = Head { id: Some(5), revision: 2, workspace_id: 7, updated_at: Some(9), ..Head::default() };
        let change = changes(None, Some(&head)).remove(0);
        let d = Delivery::new(&change, "ep_1", b"{\"type\":\"call.stored\"}".to_vec());
        assert_eq!((d.call_id, d.revision, d.changed_at_ms, d.kind), (5, 2, 9, EventType::CallStored));
        assert_eq!(d.message_id, change.message_id());
        assert_eq!(Delivery::from_json(&d.to_json()), Some(d));
        assert_eq!(Delivery::from_json("{}"), None);
    }

    #[test]
    fn a_failed_attempt_is_followed_by_a_copy_one_attempt_on_that_waits() {
        let head = Head { id: Some(5), revision: 1, workspace_id: 7, ..Head::default() };
        let first = Delivery::new(&changes(None, Some(&head)).remove(0), "ep_1", b"{}".to_vec());
        assert_eq!((first.attempt_number(), first.due_in_secs(0)), (1, 0));
        let second = first.again(300, 1_000_000);
        assert_eq!(
            (second.attempt_number(), second.message_id.as_str(), second.body.as_str()),
            (2, &*first.message_id, "{}")
        );
        assert_eq!(
            (second.due_in_secs(1_000_000), second.due_in_secs(1_299_001), second.due_in_secs(1_300_000)),
            (300, 1, 0)
        );
        assert_eq!(Delivery::from_json(&second.to_json()), Some(second.clone()));
        assert_eq!(second.again(5, 0).attempt_number(), 3);
        assert_eq!(second.afresh(7), Delivery { run: 7, ..first.clone() });
        // A message queued before copies counted their attempts: its first.
        let old = first.to_json().replace(",\"attempts_made\":0", "");
        assert!(!old.contains("attempts_made"));
        assert_eq!(Delivery::from_json(&old).map(|d| d.attempt_number()), Some(1));
    }

    #[test]
    fn a_message_holds_only_what_sqs_takes_and_reads_back_the_same() {
        let head = Head { id: Some(5), revision: 1, workspace_id: 7, ..Head::default() };
        let change = changes(None, Some(&head)).remove(0);
        let body = "{\"provider_call_id\":\"a\u{FFFE}b\u{FFFF}\u{1}\u{10FFFF}\"}";
        let d = Delivery::new(&change, "ep_1", body.as_bytes().to_vec());
        let text = d.to_json();
        let sqs_takes = |c: char| {
            matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}') || c > '\u{FFFF}'
        };
        assert!(text.chars().all(sqs_takes), "{text:?}");
        assert_eq!(Delivery::from_json(&text), Some(d));
    }
}
