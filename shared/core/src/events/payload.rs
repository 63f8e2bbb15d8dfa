//! An event's body: thin, no transcript nor anything a caller said (a receiver fetches what
//! it needs with a read key, and no personal data sits in its logs). The fields are Get
//! Call's listing fields, with the same names and units.
//!
//! ```json
//! {"type":"call.stored","timestamp":"2026-11-28T10:00:00Z","data":{"id":5,
//!  "provider_call_id":"c-1","agent_remote_identifier":"desk","revision":1,
//!  "started_at":"…","ended_at":"…","duration_ms":800,"call_status":"ended",
//!  "links":{"self":"https://api.example.com/api/v1/public/call/5?workspace_id=7"}}}
//! {"type":"call.erased","timestamp":"…","data":{"id":5,"provider_call_id":"c-1","erased_at":"…"}}
//! ```

use serde::Serialize;

use super::change::Change;
use super::EventType;
use crate::normalize::timestamps::millis_rfc3339;

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    timestamp: String,
    data: Data<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Data<'a> {
    Call {
        id: u64,
        provider_call_id: &'a str,
        agent_remote_identifier: Option<&'a str>,
        revision: u64,
        started_at: Option<String>,
        ended_at: Option<String>,
        duration_ms: Option<u64>,
        call_status: Option<&'a str>,
        links: Links,
    },
    Erased {
        id: u64,
        provider_call_id: &'a str,
        erased_at: String,
    },
}

#[derive(Serialize)]
struct Links {
    #[serde(rename = "self")]
    this: String,
}

/// The body of `change`'s event. `agent_remote_identifier`: its agent's, `None` when the
/// agent is gone from the directory; `base_url`: where the API is (`PUBLIC_BASE_URL`, no
/// trailing slash). Its `timestamp` is when the change was made, so every copy of an event
/// has the same body.
pub fn body(change: &Change, agent_remote_identifier: Option<&str>, base_url: &str) -> Vec<u8> {
    let h = &change.head;
    let id = h.id.unwrap_or(0);
    let (at, data) = match change.kind {
        EventType::CallErased => {
            let at = h.erased_at.unwrap_or(0);
            (at, Data::Erased { id, provider_call_id: &h.call_id, erased_at: millis_rfc3339(at) })
        }
        EventType::CallStored | EventType::CallRevised => (
            h.updated_at.unwrap_or(0),
            Data::Call {
                id,
                provider_call_id: &h.call_id,
                agent_remote_identifier,
                revision: h.revision,
                started_at: h.start_ms.map(millis_rfc3339),
                ended_at: h.end_ms.map(millis_rfc3339),
                duration_ms: h.duration_ms,
                call_status: h.call_status.as_deref(),
                links: Links { this: format!("{base_url}/api/v1/public/call/{id}?workspace_id={}", h.workspace_id) },
            },
        ),
    };
    let body = Body { kind: change.kind.as_str(), timestamp: millis_rfc3339(at), data };
    // A struct of strings and numbers always serialises.
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::events::change::{changes, Head};

    fn head(id: Option<u64>, revision: u64) -> Head {
        Head {
            id,
            revision,
            workspace_id: 7,
            call_id: "c-1".into(),
            agent_id: "ag".into(),
            start_ms: Some(1_795_000_000_000),
            end_ms: Some(1_795_000_060_000),
            duration_ms: Some(60_000),
            call_status: Some("ended".into()),
            updated_at: Some(1_795_000_100_000),
            erased_at: None,
        }
    }

    #[test]
    fn a_stored_call_is_sent_as_its_listing_line() {
        let change = changes(None, Some(&head(Some(5), 1))).remove(0);
        let sent: Value = serde_json::from_slice(&body(&change, Some("desk"), "https://api.example.com")).unwrap();
        assert_eq!(
            sent,
            json!({"type": "call.stored", "timestamp": "2026-11-18T11:08:20Z", "data": {
                "id": 5, "provider_call_id": "c-1", "agent_remote_identifier": "desk", "revision": 1,
                "started_at": "2026-11-18T11:06:40Z", "ended_at": "2026-11-18T11:07:40Z",
                "duration_ms": 60_000, "call_status": "ended",
                "links": {"self": "https://api.example.com/api/v1/public/call/5?workspace_id=7"}}})
        );
    }

    #[test]
    fn an_erased_call_is_sent_as_its_ids_alone() {
        let tombstone = Head { erased_at: Some(1_795_000_200_000), ..head(None, 0) };
        let change = changes(Some(&head(Some(5), 3)), Some(&tombstone)).remove(0);
        let sent: Value = serde_json::from_slice(&body(&change, Some("desk"), "https://x")).unwrap();
        assert_eq!(
            sent,
            json!({"type": "call.erased", "timestamp": "2026-11-18T11:10:00Z",
                   "data": {"id": 5, "provider_call_id": "c-1", "erased_at": "2026-11-18T11:10:00Z"}})
        );
    }
}
