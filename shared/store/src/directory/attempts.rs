//! Deliveries of events to an endpoint (issue 33): each attempt kept for 30 days, so that
//! `callctl endpoint attempts` shows what the receiver answered, and `replay` and
//! `recover` can send a message again (each attempt keeps the message it sent). An
//! endpoint's failing streak is kept on the endpoint itself: `failing_since` is set by the
//! first failure after a success and removed by the next success.
//!
//! Items: `EPA#<endpoint>` / `<at ms, 13 digits>#<message id>#<attempt>`, and a retry's
//! claim, `EPA#<endpoint>` / `Q#<message id>#<run>#<attempt>` (after every attempt's key: never
//! listed as one).

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use serde::Serialize;

use super::item_keys::*;
use super::Directory;
use crate::calls::item::{n, s, Item};
use crate::calls::query::{query, SortKeys};
use crate::calls::{tables, StoreError};
use call_ingest_core::events::delivery::Delivery;

/// How long an attempt is kept.
pub const KEPT_FOR_SECONDS: u64 = 30 * 86_400;

pub fn attempts_pk(endpoint_id: &str) -> String {
    format!("EPA#{endpoint_id}")
}

/// One attempt, as `callctl endpoint attempts` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// Epoch ms.
    pub at: u64,
    pub message_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// 1 for the first.
    pub attempt: u32,
    /// The receiver's status; `None` when none came.
    pub status: Option<u16>,
    pub millis: u64,
    /// The answer's first bytes (4 KB at most), as text.
    pub answer: String,
    pub error: Option<String>,
    /// The message sent.
    #[serde(skip)]
    pub delivery: Option<Delivery>,
}

impl Attempt {
    fn from_item(item: &Item) -> Option<Attempt> {
        Some(Attempt {
            at: field_u64(item, "at")?,
            message_id: field_s(item, "message_id")?.to_owned(),
            kind: field_s(item, "type").unwrap_or_default().to_owned(),
            attempt: u32::try_from(field_u64(item, "attempt")?).ok()?,
            status: field_u64(item, "status").and_then(|s| u16::try_from(s).ok()),
            millis: field_u64(item, "millis").unwrap_or_default(),
            answer: field_s(item, "answer").unwrap_or_default().to_owned(),
            error: field_s(item, "error").map(str::to_owned),
            delivery: field_s(item, "delivery").and_then(Delivery::from_json),
        })
    }

    /// Whether the receiver took it (a 2xx).
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

impl Directory {
    /// Claims attempt `number` (2 or more) of message `message_id` to endpoint
    /// `endpoint_id`, in the schedule's run `run` (`Delivery::run`), for the queue's copy `copy` (its SQS message id): `true` when it is this
    /// copy's to make (the first claim, or this copy's own again: a receipt after a failure
    /// of ours), `false` when another copy holds it. A failed attempt's next copy may be
    /// queued twice (SQS delivers a message twice now and then; an invocation that timed out
    /// after queueing it comes back and queues it again): the claim keeps two chains of
    /// retries from both running to the end.
    pub async fn claim_attempt(
        &self,
        endpoint_id: &str,
        message_id: &str,
        run: u64,
        number: u32,
        copy: &str,
    ) -> Result<bool, StoreError> {
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(attempts_pk(endpoint_id)))
            .item("sk", s(format!("Q#{message_id}#{run}#{number}")))
            .item("copy", s(copy))
            .item(tables::TTL_ATTRIBUTE, n(crate::calls::now_ms() / 1000 + KEPT_FOR_SECONDS))
            .condition_expression("attribute_not_exists(pk) OR #copy = :copy")
            .expression_attribute_names("#copy", "copy")
            .expression_attribute_values(":copy", s(copy))
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }

    /// Keeps `attempt` (of `delivery`).
    pub async fn record_attempt(&self, delivery: &Delivery, attempt: &Attempt) -> Result<(), StoreError> {
        let sk = format!("{:013}#{}#{}", attempt.at, attempt.message_id, attempt.attempt);
        let mut item = Item::from([
            ("pk".into(), s(attempts_pk(&delivery.endpoint_id))),
            ("sk".into(), s(sk)),
            ("at".into(), n(attempt.at)),
            ("message_id".into(), s(attempt.message_id.clone())),
            ("type".into(), s(delivery.kind.as_str())),
            ("attempt".into(), n(u64::from(attempt.attempt))),
            ("millis".into(), n(attempt.millis)),
            ("answer".into(), s(attempt.answer.clone())),
            ("delivery".into(), s(delivery.to_json())),
            (tables::TTL_ATTRIBUTE.into(), n(attempt.at / 1000 + KEPT_FOR_SECONDS)),
        ]);
        if let Some(status) = attempt.status {
            item.insert("status".into(), n(u64::from(status)));
        }
        if let Some(error) = &attempt.error {
            item.insert("error".into(), s(error.clone()));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(())
    }

    /// Endpoint `endpoint_id`'s attempts since `since_ms`, oldest first.
    pub async fn attempts(&self, endpoint_id: &str, since_ms: u64) -> Result<Vec<Attempt>, StoreError> {
        let range = SortKeys::Between(format!("{since_ms:013}"), "9".repeat(14));
        let items = query(&self.client, &self.table, &attempts_pk(endpoint_id), &range, false, None).await?;
        Ok(items.iter().filter_map(Attempt::from_item).collect())
    }

    /// Notes that a delivery to endpoint `id` failed at `now`: answers since when every
    /// delivery to it has failed (`now` when this is the first failure since a success), or
    /// `None` when the endpoint is gone.
    pub async fn endpoint_failed(&self, id: &str, now: u64) -> Result<Option<u64>, StoreError> {
        let found = self.note_health(id, "SET failing_since = if_not_exists(failing_since, :now)", Some(now)).await?;
        // The whole item (UPDATED_NEW may leave out an attribute the update left as it was).
        Ok(found.map(|item| match item.get("failing_since") {
            Some(AttributeValue::N(t)) => t.parse().unwrap_or(now),
            _ => now,
        }))
    }

    /// Notes that a delivery to endpoint `id` succeeded: its failing streak is over.
    pub async fn endpoint_recovered(&self, id: &str) -> Result<(), StoreError> {
        self.note_health(id, "REMOVE failing_since", None).await.map(|_| ())
    }

    /// Endpoint `id` updated by `expression` (`:now` bound to `now`), as it is after; `None`
    /// when there is no such endpoint.
    async fn note_health(&self, id: &str, expression: &str, now: Option<u64>) -> Result<Option<Item>, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(super::endpoints::endpoint_pk(id)))
            .key("sk", s(super::endpoints::ENDPOINT_SK))
            .update_expression(expression)
            .condition_expression("attribute_exists(pk)")
            .set_expression_attribute_values(now.map(|t| std::collections::HashMap::from([(":now".to_owned(), n(t))])))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(None),
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }
}
