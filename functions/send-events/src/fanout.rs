//! The stream's side: a batch of the Calls table's stream records (Lambda's DynamoDB event:
//! `Records[].eventName`, `.dynamodb.NewImage`, `.OldImage`, `.SequenceNumber`), each made
//! into its events and one queue message per endpoint whose types include each (a disabled
//! one's is kept as not sent).

use std::collections::HashMap;

use call_ingest_core::events::change::{record_changes, Change};
use call_ingest_core::events::delivery::Delivery;
use call_ingest_core::events::{payload, EventType};
use call_ingest_http::Backend;
use serde_json::Value;

use crate::Settings;

/// Whether `event` is a batch of a DynamoDB stream's records.
pub fn is_stream(event: &Value) -> bool {
    let first = event.get("Records").and_then(|r| r.get(0));
    first.and_then(|r| r.get("eventSource")).and_then(Value::as_str) == Some("aws:dynamodb")
}

/// Queues the events of every record of `event`, in order; answers Lambda's partial batch
/// response naming the first record that failed (the stream retries it and those after).
pub async fn batch(backend: &Backend, sqs: &aws_sdk_sqs::Client, settings: &Settings, event: &Value) -> Value {
    let records = event.get("Records").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut endpoints = HashMap::new();
    for record in records {
        let sequence = record.pointer("/dynamodb/SequenceNumber").and_then(Value::as_str).unwrap_or_default();
        let changes = match record_changes(record) {
            Ok(changes) => changes,
            Err(why) => {
                // Not a call's head as we write it: the template's stream and filter make
                // none such. Nothing to send; said loudly.
                tracing::error!(sequence, why, "stream record not read");
                continue;
            }
        };
        for change in &changes {
            if let Err(e) = queue(backend, sqs, settings, change, &mut endpoints).await {
                tracing::warn!(sequence, error = %e, "events not queued; the stream hands the record back");
                return call_ingest_http::sqs::batch_item_failures([sequence]);
            }
        }
    }
    call_ingest_http::sqs::batch_item_failures([])
}

/// How far the clocks that date a change and an endpoint's making may be apart (and a
/// stream record's time, to the second, rounded down).
const CLOCKS_MS: u64 = 1_000;

/// Queues `change`'s event for each endpoint of its workspace that takes it (`endpoints`:
/// those read so far in this batch, by workspace).
async fn queue(
    backend: &Backend,
    sqs: &aws_sdk_sqs::Client,
    settings: &Settings,
    change: &Change,
    endpoints: &mut HashMap<u64, Vec<call_ingest_store::directory::endpoints::Endpoint>>,
) -> Result<(), String> {
    let directory = backend.directory();
    let workspace_id = change.head.workspace_id;
    let listed = match endpoints.entry(workspace_id) {
        std::collections::hash_map::Entry::Occupied(listed) => listed.into_mut(),
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(directory.list_endpoints(workspace_id).await.map_err(|e| e.to_string())?)
        }
    };
    // Disabled ones too: send-events keeps their events as not sent, for `recover`. Not one
    // made after the change (a record read late, or again from the stream's start when the
    // mapping is made anew), give or take a second of the clocks and of the record's time.
    let at = change.at_ms();
    let takers: Vec<&str> = listed
        .iter()
        .filter(|e| e.wants(change.kind) && (at == 0 || at + CLOCKS_MS >= e.created_at))
        .map(|e| e.id.as_str())
        .collect();
    if takers.is_empty() {
        return Ok(());
    }
    let remote = match change.kind {
        EventType::CallErased => None,
        _ => {
            let agent = call_ingest_store::directory::AgentRef::Id(&change.head.agent_id);
            directory.agent(agent, workspace_id).await.map_err(|e| e.to_string())?.map(|a| a.remote_id)
        }
    };
    let body = payload::body(change, remote.as_deref(), &settings.base_url);
    let bodies: Vec<String> =
        takers.iter().map(|endpoint| Delivery::new(change, endpoint, body.clone()).to_json()).collect();
    call_ingest_http::sqs::send_all(sqs, &settings.queue_url, &bodies).await?;
    tracing::info!(
        workspace_id,
        kind = change.kind.as_str(),
        id = change.head.id,
        endpoints = takers.len(),
        "event queued"
    );
    Ok(())
}
