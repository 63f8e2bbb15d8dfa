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
            changed_at_ms: if erased { h.erased_at } else { h.updated_at }.unwrap_or(0),
        }
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
