//! The queue's side of commit-pending: S3 announces each pending submission it stores
//! (`s3:ObjectCreated:*` under `pending/`) on an SQS queue, and Lambda's event source mapping
//! hands this function a batch of those messages (`call_ingest_http::sqs`). Only the fields
//! used are read: in each body, S3's event notification (`Records[].eventName`,
//! `.s3.bucket.name`, `.s3.object.key`), documented at
//! <https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html>.

use call_ingest_http::sqs::Again;
use serde::Deserialize;
use serde_json::Value;

/// S3's notification; its test message (`"Event": "s3:TestEvent"`) has no `Records`.
#[derive(Deserialize)]
struct S3Notification {
    #[serde(rename = "Records", default)]
    records: Vec<S3Record>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct S3Record {
    #[serde(default)]
    event_name: String,
    s3: S3Entity,
}

#[derive(Deserialize)]
struct S3Entity {
    bucket: Named,
    object: Keyed,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Keyed {
    key: String,
}

/// One message of a batch: its id (what a partial batch failure names) and the pending
/// keys of `bucket` it announces (none for S3's test message or another bucket's object);
/// how to make it come back sooner ([`Again`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    pub id: String,
    pub keys: Vec<String>,
    pub again: Again,
}

/// The longest a failed message waits before it comes back: a minute (the sweep's period).
pub const MAX_RETRY_SECS: u32 = 60;

/// How long a message whose commit failed for the `received`-th time stays hidden: `base`
/// seconds, doubled at each receipt, at most [`MAX_RETRY_SECS`]. With base 5 and the
/// queue's 5 receipts, a message is tried at about 0, 5, 15, 35 and 75 s: a backlog left
/// by an outage is committed by the queue within seconds of storage's return, not at the
/// queue's visibility timeout (6 minutes) or the sweep's next run.
pub fn retry_after(received: u32, base: u32) -> u32 {
    let doublings = received.saturating_sub(1).min(16);
    base.max(1).saturating_mul(1 << doublings).min(MAX_RETRY_SECS)
}

/// The messages of an SQS event, or None when `event` is not one (the scheduled sweep).
pub fn messages(event: &Value, bucket: &str) -> Option<Vec<Message>> {
    let batch = call_ingest_http::sqs::received(event)?;
    Some(batch.into_iter().map(|m| Message { keys: keys(&m.body, bucket), id: m.id, again: m.again }).collect())
}

/// The pending keys of `bucket` whose creation `body` announces. A body that is not S3's
/// notification announces none (it is dropped: nothing to commit, and the sweep would find
/// any pending object it might have named).
fn keys(body: &str, bucket: &str) -> Vec<String> {
    let Ok(notification) = serde_json::from_str::<S3Notification>(body) else {
        tracing::warn!("queue message is not an S3 notification; dropped");
        return Vec::new();
    };
    notification
        .records
        .into_iter()
        .filter(|r| r.event_name.starts_with("ObjectCreated:") && r.s3.bucket.name == bucket)
        .map(|r| url_decoded(&r.s3.object.key))
        .filter(|k| {
            k.starts_with(call_ingest_http::PENDING_PREFIX) || k.starts_with(call_ingest_http::TRACE_BATCH_PREFIX)
        })
        .collect()
}

/// An object key as S3 notifications carry it: URL-encoded, spaces as `+`.
fn url_decoded(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn notification(bucket: &str, key: &str, event: &str) -> String {
        json!({"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "eventName": event,
            "s3": {"s3SchemaVersion": "1.0", "bucket": {"name": bucket, "arn": format!("arn:aws:s3:::{bucket}")},
                   "object": {"key": key, "size": 10, "eTag": "x", "sequencer": "0A"}}}]})
        .to_string()
    }

    fn sqs(bodies: &[&str]) -> Value {
        let records: Vec<Value> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                json!({"messageId": format!("m{i}"), "receiptHandle": "r", "body": b,
                "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {}, "md5OfBody": "x",
                "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:q", "awsRegion": "us-east-1"})
            })
            .collect();
        json!({ "Records": records })
    }

    #[test]
    fn a_batch_names_the_pending_keys_of_our_bucket() {
        let ours = notification("frames", "pending/7/ab%2Bc/0001763700000123-ff", "ObjectCreated:Put");
        let other_bucket = notification("else", "pending/7/x/1-ff", "ObjectCreated:Put");
        let frame = notification("frames", "frames/7/x/y", "ObjectCreated:Put");
        let batch = notification("frames", "traces/in/7/0001763700000123-ff", "ObjectCreated:Put");
        let removed = notification("frames", "pending/7/x/1-ff", "ObjectRemoved:Delete");
        let test_event = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"frames"}"#;
        let got = messages(&sqs(&[&ours, &other_bucket, &frame, &removed, test_event, "not json", &batch]), "frames")
            .unwrap();
        let again = Again {
            queue_url: Some("https://sqs.us-east-1.amazonaws.com/1/q".into()),
            receipt: "r".into(),
            received: 1,
        };
        assert_eq!(got[0], Message { id: "m0".into(), keys: vec!["pending/7/ab+c/0001763700000123-ff".into()], again });
        assert!(got[1..6].iter().all(|m| m.keys.is_empty()));
        assert_eq!(got[6].keys, ["traces/in/7/0001763700000123-ff"], "a trace batch is indexed by the same consumer");
        assert_eq!(got.len(), 7);
    }

    #[test]
    fn a_scheduled_event_is_not_a_batch() {
        let scheduled = json!({"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}});
        assert_eq!(messages(&scheduled, "frames"), None);
        assert_eq!(messages(&json!({"Records": []}), "frames"), None);
    }

    #[test]
    fn a_failed_message_comes_back_sooner_each_time_within_a_minute() {
        let waits: Vec<u32> = (1..=6).map(|n| retry_after(n, 5)).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60]);
        assert_eq!((retry_after(0, 5), retry_after(u32::MAX, 5), retry_after(3, 0)), (5, 60, 4));
    }

    #[test]
    fn keys_are_url_decoded() {
        assert_eq!(url_decoded("a+b%2Fc%zz%4"), "a b/c%zz%4");
        assert_eq!(url_decoded("%C3%A9"), "é");
    }
}
