//! Which events a change to a call's head makes, read from the Calls table's stream (its
//! old and new images). An event is derived from what was committed, never from what a
//! request meant to do: a replay writes nothing and makes none; a send answered 202 makes
//! its event when its pending copy is committed; a copy dropped by an erase makes none.
//!
//! A head is the item `HEAD` of a call's partition: a call (it has an `id`), or an erased
//! call's tombstone (no `id`). What changes it, and what that makes:
//! - created (nothing or a tombstone before, a call after): `call.stored`;
//! - its `revision` higher (a revision, or a late one kept below newer content, which
//!   moves the head by two): `call.revised`, with the head's new revision;
//! - erased (a call before, a tombstone or nothing after): `call.erased`;
//! - anything else (an erase begun, its raw body removed, a policy applied, a pending copy
//!   noted as committed): nothing.

use serde_json::Value;

use super::EventType;

/// What of a call's head an event needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// `None` on a tombstone.
    pub id: Option<u64>,
    pub revision: u64,
    pub workspace_id: u64,
    /// The provider's call id.
    pub call_id: String,
    /// The internal id of its agent (its remote identifier is the directory's).
    pub agent_id: String,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub call_status: Option<String>,
    /// When this revision was received (epoch ms).
    pub updated_at: Option<u64>,
    /// On a tombstone: when the last erase under this key happened (epoch ms).
    pub erased_at: Option<u64>,
}

/// One event a change makes: its type, and the head it speaks of (the new one; for
/// `call.erased`, the call as it was, with `erased_at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: EventType,
    pub head: Head,
}

impl Change {
    /// When the change was committed (epoch ms; 0 when its image does not say).
    pub fn at_ms(&self) -> u64 {
        match self.kind {
            EventType::CallErased => self.head.erased_at,
            EventType::CallStored | EventType::CallRevised => self.head.updated_at,
        }
        .unwrap_or(0)
    }

    /// The event's identity: the same for every copy of it (a stream record read twice,
    /// a delivery retried), different for any two events. Standard Webhooks' `webhook-id`.
    pub fn message_id(&self) -> String {
        use sha2::{Digest, Sha256};
        let h = &self.head;
        let revision = if self.kind == EventType::CallErased { 0 } else { h.revision };
        let what = format!("{}\n{}\n{}\n{}", h.workspace_id, h.id.unwrap_or(0), self.kind.as_str(), revision);
        let digest = Sha256::digest(what.as_bytes());
        format!("msg_{}", crate::call::hex(&digest[..16]))
    }
}

/// The events a head's change from `old` to `new` makes (`None`: no item, before or after).
pub fn changes(old: Option<&Head>, new: Option<&Head>) -> Vec<Change> {
    let old_id = old.and_then(|h| h.id);
    let new_id = new.and_then(|h| h.id);
    let mut out = Vec::new();
    if let (Some(before), Some(_)) = (old, old_id) {
        if new_id != old_id {
            // Erased: a tombstone after it (which says when), or nothing.
            let erased_at = new.and_then(|h| h.erased_at).or(before.updated_at);
            out.push(Change { kind: EventType::CallErased, head: Head { erased_at, ..before.clone() } });
        }
    }
    if let (Some(after), Some(_)) = (new, new_id) {
        if new_id != old_id {
            out.push(Change { kind: EventType::CallStored, head: after.clone() });
        } else if old.is_some_and(|before| after.revision > before.revision) {
            out.push(Change { kind: EventType::CallRevised, head: after.clone() });
        }
    }
    out
}

/// The events one record of the Calls table's stream makes (Lambda's event JSON: its
/// `eventName` and `dynamodb` with `NewImage` and `OldImage`; the stream must keep both
/// images). `Err` for a record this cannot read: a `MODIFY` or `REMOVE` without its old image
/// would read as a creation, so it is refused rather than guessed at. A call erased with no
/// tombstone after it is erased at the record's `ApproximateCreationDateTime`.
pub fn record_changes(record: &Value) -> Result<Vec<Change>, String> {
    let name = record.get("eventName").and_then(Value::as_str).ok_or("a stream record without eventName")?;
    let images = record.get("dynamodb").ok_or("a stream record without dynamodb")?;
    let image = |key: &str| images.get(key).and_then(Head::from_image);
    if matches!(name, "MODIFY" | "REMOVE") && images.get("OldImage").is_none() {
        return Err(format!("a {name} record without its old image: the stream must be NEW_AND_OLD_IMAGES"));
    }
    let at_ms = images.get("ApproximateCreationDateTime").and_then(Value::as_f64).map(|s| (s * 1000.0) as u64);
    let mut found = changes(image("OldImage").as_ref(), image("NewImage").as_ref());
    for change in &mut found {
        match change.kind {
            EventType::CallErased if image("NewImage").is_none() => {
                change.head.erased_at = at_ms.or(change.head.erased_at);
            }
            // When the change was committed: a late insert keeps the `updated_at` of the
            // content it keeps current (hours old, maybe), so the record's own time (to the
            // second, rounded down) stands in when it is later. The same in every copy.
            EventType::CallStored | EventType::CallRevised => {
                change.head.updated_at = change.head.updated_at.max(at_ms);
            }
            EventType::CallErased => {}
        }
    }
    Ok(found)
}

impl Head {
    /// A stream record's image (`NewImage`, `OldImage`: DynamoDB's JSON, `{"S": …}`,
    /// `{"N": …}`) of a call's head; `None` for any other item, or one this cannot read.
    pub fn from_image(image: &Value) -> Option<Head> {
        let s = |name: &str| image.get(name)?.get("S")?.as_str().map(str::to_owned);
        let n = |name: &str| image.get(name)?.get("N")?.as_str()?.parse::<u64>().ok();
        if s("sk")?.as_str() != "HEAD" {
            return None;
        }
        let pk = s("pk")?;
        let (workspace_id, call_id) = crate::call_key::parse_call_pk(&pk)?;
        let call_id = call_id.to_owned();
        Some(Head {
            id: n("id"),
            revision: n("revision").unwrap_or(0),
            workspace_id,
            call_id,
            agent_id: s("agent_id").unwrap_or_default(),
            start_ms: n("start_ms"),
            end_ms: n("end_ms"),
            duration_ms: n("duration_ms"),
            call_status: s("call_status"),
            updated_at: n("updated_at"),
            erased_at: n("erased_at"),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn head(id: Option<u64>, revision: u64) -> Head {
        Head { id, revision, workspace_id: 7, call_id: "c#1".into(), updated_at: Some(1_000), ..Head::default() }
    }

    fn kinds(changes: Vec<Change>) -> Vec<(EventType, Option<u64>, u64)> {
        changes.into_iter().map(|c| (c.kind, c.head.id, c.head.revision)).collect()
    }

    #[test]
    fn each_change_of_a_head_makes_its_events() {
        use EventType::*;
        let (call, tombstone) = (head(Some(5), 1), Head { erased_at: Some(9_000), ..head(None, 0) });
        assert_eq!(kinds(changes(None, Some(&call))), [(CallStored, Some(5), 1)]);
        assert_eq!(kinds(changes(Some(&tombstone), Some(&call))), [(CallStored, Some(5), 1)]);
        assert_eq!(kinds(changes(Some(&call), Some(&head(Some(5), 2)))), [(CallRevised, Some(5), 2)]);
        // A late revision kept below newer content: the head moves by two.
        assert_eq!(kinds(changes(Some(&head(Some(5), 2)), Some(&head(Some(5), 4)))), [(CallRevised, Some(5), 4)]);
        let erased = changes(Some(&call), Some(&tombstone));
        assert_eq!(kinds(erased.clone()), [(CallErased, Some(5), 1)]);
        assert_eq!(erased[0].head.erased_at, Some(9_000));
        assert_eq!(kinds(changes(Some(&call), None)), [(CallErased, Some(5), 1)]);
        // Stored again after an erase, in one change as far as the stream tells.
        assert_eq!(
            kinds(changes(Some(&call), Some(&head(Some(6), 1)))),
            [(CallErased, Some(5), 1), (CallStored, Some(6), 1)]
        );
    }

    #[test]
    fn changes_that_are_not_events_make_none() {
        let call = head(Some(5), 3);
        // An erase begun, a raw body removed, a policy applied, a copy noted committed.
        assert!(changes(Some(&call), Some(&call)).is_empty());
        // A tombstone rewritten or expired.
        let tombstone = head(None, 0);
        assert!(changes(Some(&tombstone), Some(&tombstone)).is_empty());
        assert!(changes(Some(&tombstone), None).is_empty());
        assert!(changes(None, None).is_empty());
    }

    #[test]
    fn an_event_keeps_its_id_and_two_events_never_share_one() {
        let stored = changes(None, Some(&head(Some(5), 1))).remove(0);
        assert_eq!(stored.message_id(), stored.clone().message_id());
        assert!(stored.message_id().starts_with("msg_"));
        let revised = changes(Some(&head(Some(5), 1)), Some(&head(Some(5), 2))).remove(0);
        let erased = changes(Some(&head(Some(5), 2)), None).remove(0);
        let other = changes(None, Some(&head(Some(6), 1))).remove(0);
        let ids = [&stored, &revised, &erased, &other].map(|c| c.message_id());
        assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 4, "{ids:?}");
    }

    #[test]
    fn a_stream_record_without_its_old_image_is_refused() {
        let new = json!({"pk": {"S": "CALL#7#c"}, "sk": {"S": "HEAD"}, "id": {"N": "5"}, "revision": {"N": "2"},
                         "updated_at": {"N": "1000"}});
        let old = json!({"pk": {"S": "CALL#7#c"}, "sk": {"S": "HEAD"}, "id": {"N": "5"}, "revision": {"N": "1"}});
        let modify = json!({"eventName": "MODIFY", "dynamodb": {"NewImage": new.clone(), "OldImage": old.clone()}});
        assert_eq!(kinds(record_changes(&modify).unwrap()), [(EventType::CallRevised, Some(5), 2)]);
        let insert = json!({"eventName": "INSERT", "dynamodb": {"NewImage": old.clone()}});
        assert_eq!(kinds(record_changes(&insert).unwrap()), [(EventType::CallStored, Some(5), 1)]);
        // A late insert: the head keeps its content's updated_at, the record is of now.
        let late = json!({"eventName": "MODIFY", "dynamodb": {"NewImage": new.clone(), "OldImage": old.clone(),
                          "ApproximateCreationDateTime": 1_795_000_000.0}});
        assert_eq!(record_changes(&late).unwrap()[0].head.updated_at, Some(1_795_000_000_000));
        let prompt = json!({"eventName": "MODIFY", "dynamodb": {"NewImage": new.clone(), "OldImage": old.clone(),
                            "ApproximateCreationDateTime": 0.5}});
        assert_eq!(record_changes(&prompt).unwrap()[0].head.updated_at, Some(1_000), "ms precision kept");
        let bare = json!({"eventName": "MODIFY", "dynamodb": {"NewImage": new}});
        assert!(record_changes(&bare).unwrap_err().contains("NEW_AND_OLD_IMAGES"));
        let removed = json!({"eventName": "REMOVE",
                             "dynamodb": {"OldImage": old, "ApproximateCreationDateTime": 1_795_000_000.0}});
        let erased = record_changes(&removed).unwrap();
        assert_eq!((erased[0].kind, erased[0].head.erased_at), (EventType::CallErased, Some(1_795_000_000_000)));
        assert!(record_changes(&json!({"dynamodb": {}})).is_err());
    }

    #[test]
    fn a_stream_image_is_read_as_a_head() {
        let image = json!({
            "pk": {"S": "CALL#7#call#1"}, "sk": {"S": "HEAD"}, "id": {"N": "5"}, "revision": {"N": "2"},
            "agent_id": {"S": "ag_1"}, "start_ms": {"N": "100"}, "end_ms": {"N": "900"}, "duration_ms": {"N": "800"},
            "call_status": {"S": "ended"}, "updated_at": {"N": "1000"}, "body": {"B": "AAAA"}
        });
        let head = Head::from_image(&image).expect("a head");
        assert_eq!((head.workspace_id, head.call_id.as_str(), head.id, head.revision), (7, "call#1", Some(5), 2));
        assert_eq!((head.start_ms, head.end_ms, head.duration_ms), (Some(100), Some(900), Some(800)));
        assert_eq!(head.call_status.as_deref(), Some("ended"));
        let tombstone = json!({"pk": {"S": "CALL#7#c"}, "sk": {"S": "HEAD"}, "erased_at": {"N": "5"}});
        assert_eq!(Head::from_image(&tombstone).map(|h| (h.id, h.erased_at)), Some((None, Some(5))));
        for other in [
            json!({"pk": {"S": "CALL#7#c"}, "sk": {"S": "REV#0000000001"}}),
            json!({"pk": {"S": "RAWLATE#7"}, "sk": {"S": "HEAD"}}),
            json!({"sk": {"S": "HEAD"}}),
            json!(3),
        ] {
            assert_eq!(Head::from_image(&other), None, "{other}");
        }
    }
}
