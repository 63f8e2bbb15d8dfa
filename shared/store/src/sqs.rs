//! What the functions fed by a queue share: the SQS event Lambda's event source mapping
//! hands them (`Records[].messageId`, `.receiptHandle`, `.body`,
//! `.attributes.ApproximateReceiveCount`, `.eventSourceARN`; documented at
//! <https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html>), and telling SQS when a
//! message named in `batchItemFailures` is to come back (`ChangeMessageVisibility`).
//! (aws_lambda_events has these types, behind features that bring chrono and serde_with for
//! fields never read here.)

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct SqsEvent {
    #[serde(rename = "Records")]
    records: Vec<SqsMessage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SqsMessage {
    message_id: String,
    #[serde(default)]
    receipt_handle: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    attributes: Attributes,
    #[serde(rename = "eventSourceARN", default)]
    event_source_arn: String,
}

#[derive(Deserialize, Default)]
struct Attributes {
    #[serde(rename = "ApproximateReceiveCount", default)]
    receive_count: String,
}

/// One message of a batch: its id (what a partial batch failure names), its body, and how
/// to make it come back at a time of our choosing ([`Again`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Received {
    pub id: String,
    pub body: String,
    pub again: Again,
}

/// What ChangeMessageVisibility needs of a message: its queue's URL, its receipt handle,
/// and how many times it was received (this time included).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Again {
    pub queue_url: Option<String>,
    pub receipt: String,
    pub received: u32,
}

/// The messages of an SQS event, or `None` when `event` is not one (a schedule's, a
/// stream's).
pub fn received(event: &Value) -> Option<Vec<Received>> {
    let is_sqs = event.get("Records")?.get(0)?.get("eventSource")?.as_str() == Some("aws:sqs");
    if !is_sqs {
        return None;
    }
    let batch: SqsEvent = serde_json::from_value(event.clone()).ok()?;
    Some(
        batch
            .records
            .into_iter()
            .map(|m| Received {
                id: m.message_id,
                body: m.body,
                again: Again {
                    queue_url: queue_url(&m.event_source_arn),
                    receipt: m.receipt_handle,
                    received: m.attributes.receive_count.parse().unwrap_or(1),
                },
            })
            .collect(),
    )
}

/// Lambda's partial batch answer naming `failed` (message ids).
pub fn batch_item_failures<'a>(failed: impl IntoIterator<Item = &'a str>) -> Value {
    let failed: Vec<Value> = failed.into_iter().map(|id| serde_json::json!({ "itemIdentifier": id })).collect();
    serde_json::json!({ "batchItemFailures": failed })
}

/// The URL of the queue `arn` names (`arn:aws:sqs:{region}:{account}:{name}`), as
/// GetQueueUrl answers it in AWS; the local SQS finds the queue by the path's last segment.
pub fn queue_url(arn: &str) -> Option<String> {
    match arn.split(':').collect::<Vec<_>>()[..] {
        ["arn", partition, "sqs", region, account, name] if !name.is_empty() && !account.is_empty() => {
            let domain = if partition == "aws-cn" { "amazonaws.com.cn" } else { "amazonaws.com" };
            Some(format!("https://sqs.{region}.{domain}/{account}/{name}"))
        }
        _ => None,
    }
}

/// The longest a message is kept out of sight: SQS refuses a visibility that ends more than
/// 12 hours after the message was received, so a margin is kept for the time since (the
/// batch's work, the function's timeout at most).
pub const MAX_HIDDEN_SECONDS: u64 = 12 * 3600 - 300;

/// Keeps each message out of sight for its seconds (at most [`MAX_HIDDEN_SECONDS`]), so that
/// one named in `batchItemFailures` comes back then rather than at the queue's visibility
/// timeout. A message whose visibility cannot be changed keeps the queue's (logged).
pub async fn come_back_in(sqs: &aws_sdk_sqs::Client, messages: &[(&Again, u64)]) {
    use aws_sdk_sqs::types::ChangeMessageVisibilityBatchRequestEntry as Entry;
    const MAX_SECONDS: u64 = MAX_HIDDEN_SECONDS;
    let mut by_queue: std::collections::BTreeMap<&str, Vec<Entry>> = Default::default();
    for (i, (again, seconds)) in messages.iter().enumerate() {
        let Some(url) = again.queue_url.as_deref().filter(|_| !again.receipt.is_empty()) else { continue };
        let entry = Entry::builder()
            .id(i.to_string())
            .receipt_handle(&again.receipt)
            .visibility_timeout((*seconds).min(MAX_SECONDS) as i32)
            .build();
        if let Ok(entry) = entry {
            by_queue.entry(url).or_default().push(entry);
        }
    }
    for (url, entries) in by_queue {
        for chunk in entries.chunks(10) {
            let sent =
                sqs.change_message_visibility_batch().queue_url(url).set_entries(Some(chunk.to_vec())).send().await;
            match sent {
                Ok(out) if !out.failed.is_empty() => {
                    tracing::warn!(failed = out.failed.len(), "some messages keep the queue's visibility timeout")
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&e), "visibility not changed")
                }
            }
        }
    }
}

/// Sends each of `bodies` to the queue at `queue_url`, ten a request; `Err` when any was
/// refused (some may have been sent: a retry sends those again).
pub async fn send_all(sqs: &aws_sdk_sqs::Client, queue_url: &str, bodies: &[String]) -> Result<(), String> {
    use aws_sdk_sqs::types::SendMessageBatchRequestEntry as Entry;
    for chunk in bodies.chunks(10) {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, body)| Entry::builder().id(i.to_string()).message_body(body).build().map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let sent = sqs
            .send_message_batch()
            .queue_url(queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())?;
        if !sent.failed.is_empty() {
            return Err(format!("{} of {} messages refused", sent.failed.len(), chunk.len()));
        }
    }
    Ok(())
}

/// The longest an SQS message can be delayed when it is sent.
pub const MAX_DELAY_SECONDS: u64 = 15 * 60;

/// Sends `body` to `queue_url`, to be received in `delay_secs` (at most
/// [`MAX_DELAY_SECONDS`]).
pub async fn send_later(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    body: String,
    delay_secs: u64,
) -> Result<(), String> {
    sqs.send_message()
        .queue_url(queue_url)
        .message_body(body)
        .delay_seconds(delay_secs.min(MAX_DELAY_SECONDS) as i32)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_batch_is_read_with_what_bringing_a_message_back_needs() {
        let event = json!({"Records": [{"messageId": "m0", "receiptHandle": "r", "body": "b",
            "attributes": {"ApproximateReceiveCount": "3"}, "messageAttributes": {}, "md5OfBody": "x",
            "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:q", "awsRegion": "us-east-1"}]});
        let got = received(&event).unwrap();
        let again = Again {
            queue_url: Some("https://sqs.us-east-1.amazonaws.com/1/q".into()),
            receipt: "r".into(),
            received: 3,
        };
        assert_eq!(got, [Received { id: "m0".into(), body: "b".into(), again }]);
        let scheduled = json!({"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}});
        assert_eq!(received(&scheduled), None);
        assert_eq!(received(&json!({"Records": []})), None);
        assert_eq!(received(&json!({"Records": [{"eventSource": "aws:dynamodb"}]})), None);
        assert_eq!(batch_item_failures(["a"]), json!({"batchItemFailures": [{"itemIdentifier": "a"}]}));
    }

    #[test]
    fn a_queue_url_is_made_from_its_arn() {
        assert_eq!(
            queue_url("arn:aws:sqs:eu-west-1:123456789012:q-1").as_deref(),
            Some("https://sqs.eu-west-1.amazonaws.com/123456789012/q-1")
        );
        assert_eq!(queue_url("arn:aws:sqs:eu-west-1::q"), None);
        assert_eq!(queue_url("not an arn"), None);
    }
}
