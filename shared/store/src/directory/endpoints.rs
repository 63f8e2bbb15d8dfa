//! A workspace's event endpoints (issue 33): the URLs its events are sent to, signed with
//! each endpoint's secret as Standard Webhooks has it. An endpoint has its URL (checked
//! when it is made: `events::target`), the event types it takes (none named: every type),
//! its secret sealed with KMS as hooks' are ([`super::sealing`], the endpoint's id in the
//! context), and whether it is disabled (by hand, by a 410, or after failing for five days).
//! A rotation keeps the previous secret signing beside the new one for an overlap (24 hours
//! unless told). At most [`MAX_PER_WORKSPACE`] per workspace, counted on the workspace's
//! item in the transaction that makes or deletes one.
//!
//! Items: `EP#<id>` / `EP` (the endpoint), and `WS#<workspace>` / `EP#<id>` (its listing).

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use serde::Serialize;

use super::admin::AdminError;
use super::hooks::{rotation, updated_as, UpdateResult};
use super::item_keys::*;
use super::sealing::Sealer;
use super::Directory;
use crate::calls::error::transaction_outcome;
use crate::calls::item::{get_b, n, s, Item};
use crate::calls::{now_ms, random_bytes, random_hex, StoreError, Transaction};
use call_ingest_core::events::signing::Secret;
use call_ingest_core::events::target::Target;
use call_ingest_core::events::EventType;

/// Endpoints a workspace may have.
pub const MAX_PER_WORKSPACE: u64 = 10;
/// How long the previous secret still signs after a rotation, unless told otherwise.
pub const ROTATION_OVERLAP_MS: u64 = 24 * 3600 * 1000;

/// Random bytes in a new secret (Standard Webhooks: 24 to 64).
const SECRET_BYTES: usize = 32;

/// A new endpoint secret: [`SECRET_BYTES`] random bytes (`whsec_` and their base64 when
/// shown).
pub fn new_secret() -> Result<Secret, StoreError> {
    Secret::from_bytes(random_bytes(SECRET_BYTES)?).map_err(StoreError::Internal)
}

pub fn endpoint_pk(id: &str) -> String {
    format!("EP#{id}")
}
pub const ENDPOINT_SK: &str = "EP";

/// Why an endpoint is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disabled {
    /// `callctl endpoint disable`, or the API.
    ByHand,
    /// It answered 410 Gone.
    Gone,
    /// Every delivery to it failed for five days.
    Failing,
}

impl Disabled {
    fn as_str(self) -> &'static str {
        match self {
            Disabled::ByHand => "by_hand",
            Disabled::Gone => "gone",
            Disabled::Failing => "failing",
        }
    }

    fn parse(text: &str) -> Option<Disabled> {
        [Disabled::ByHand, Disabled::Gone, Disabled::Failing].into_iter().find(|d| d.as_str() == text)
    }
}

/// An endpoint, as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    pub id: String,
    pub workspace_id: u64,
    pub url: String,
    /// The event types it takes; empty: every type.
    pub events: Vec<EventType>,
    /// Epoch ms.
    pub created_at: u64,
    pub disabled_at: Option<u64>,
    pub disabled: Option<Disabled>,
    /// Since when (epoch ms) every delivery to it has failed, if the last one did.
    pub failing_since: Option<u64>,
    /// Until when (epoch ms) the secret before the last rotation signs too.
    pub previous_until: Option<u64>,
    #[serde(skip)]
    sealed: Vec<u8>,
    #[serde(skip)]
    previous: Option<Vec<u8>>,
}

impl Endpoint {
    fn from_item(item: &Item) -> Option<Endpoint> {
        let mut events: Vec<EventType> = match item.get("events") {
            Some(AttributeValue::Ss(types)) => types.iter().filter_map(|t| EventType::parse(t)).collect(),
            _ => Vec::new(),
        };
        events.sort();
        Some(Endpoint {
            id: field_s(item, "endpoint_id")?.to_owned(),
            workspace_id: field_u64(item, "workspace_id")?,
            url: field_s(item, "url")?.to_owned(),
            events,
            created_at: field_u64(item, "created_at").unwrap_or_default(),
            disabled_at: field_u64(item, "disabled_at"),
            disabled: field_s(item, "disabled").and_then(Disabled::parse),
            failing_since: field_u64(item, "failing_since"),
            previous_until: field_u64(item, "previous_until"),
            sealed: get_b(item, "sealed")?.to_vec(),
            previous: get_b(item, "previous").map(<[u8]>::to_vec),
        })
    }

    /// Whether it takes events of `kind` now.
    pub fn takes(&self, kind: EventType) -> bool {
        self.disabled.is_none() && self.wants(kind)
    }

    /// Whether its event types include `kind`, disabled or not: a disabled endpoint's
    /// events are kept as not sent, for `callctl endpoint recover` once it is enabled.
    pub fn wants(&self, kind: EventType) -> bool {
        self.events.is_empty() || self.events.contains(&kind)
    }

    /// Whether an id can be one we made (`ep_` and 24 hex digits).
    pub fn well_formed(id: &str) -> bool {
        id.strip_prefix("ep_").is_some_and(|h| h.len() == 24 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

impl Directory {
    /// Makes an endpoint of `workspace_id` at `target` for `events` (none: every type),
    /// signing with `secret`: refused when the workspace has [`MAX_PER_WORKSPACE`] already.
    pub async fn create_endpoint(
        &self,
        sealer: &Sealer,
        workspace_id: u64,
        target: &Target,
        events: &[EventType],
        secret: &Secret,
    ) -> Result<Endpoint, AdminError> {
        if self.workspace(workspace_id).await?.is_none() {
            return Err(AdminError::NoWorkspace(workspace_id));
        }
        let id = format!("ep_{}", random_hex(12)?);
        let sealed = sealer.seal(secret.bytes(), &id, workspace_id).await?;
        let mut endpoint = Item::from([
            ("pk".into(), s(endpoint_pk(&id))),
            ("sk".into(), s(ENDPOINT_SK)),
            ("endpoint_id".into(), s(id.clone())),
            ("workspace_id".into(), n(workspace_id)),
            ("url".into(), s(target.url.clone())),
            ("created_at".into(), n(now_ms())),
            ("sealed".into(), AttributeValue::B(Blob::new(sealed))),
        ]);
        if !events.is_empty() {
            let mut types: Vec<String> = events.iter().map(|e| e.as_str().to_owned()).collect();
            types.sort();
            types.dedup(); // a string set holds each once
            endpoint.insert("events".into(), AttributeValue::Ss(types));
        }
        let listing = Item::from([
            ("pk".into(), s(workspace_pk(workspace_id))),
            ("sk".into(), s(endpoint_pk(&id))),
            ("endpoint_id".into(), s(id.clone())),
        ]);
        let items = vec![
            self.count_endpoints(workspace_id, 1)?,
            crate::calls::item::put_new(&self.table, endpoint.clone())?,
            crate::calls::item::put_new(&self.table, listing)?,
        ];
        self.endpoint_transaction(items, || {
            AdminError::Limit(format!(
                "workspace {workspace_id} does not exist or has {MAX_PER_WORKSPACE} endpoints already"
            ))
        })
        .await?;
        Endpoint::from_item(&endpoint).ok_or_else(|| StoreError::Internal("endpoint item".into()).into())
    }

    /// Adds `by` to the workspace's count of endpoints, on condition that it exists and,
    /// when adding, that it has fewer than [`MAX_PER_WORKSPACE`].
    fn count_endpoints(&self, workspace_id: u64, by: i64) -> Result<TransactWriteItem, StoreError> {
        let condition = match by > 0 {
            true => "attribute_exists(pk) AND (attribute_not_exists(endpoints) OR endpoints < :max)",
            false => "attribute_exists(pk)",
        };
        let mut update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(workspace_pk(workspace_id)))
            .key("sk", s(WORKSPACE_SK))
            .update_expression("ADD endpoints :by")
            .condition_expression(condition)
            .expression_attribute_values(":by", AttributeValue::N(by.to_string()));
        if by > 0 {
            update = update.expression_attribute_values(":max", n(MAX_PER_WORKSPACE));
        }
        Ok(TransactWriteItem::builder().update(update.build().map_err(StoreError::from)?).build())
    }

    /// Runs a transaction of endpoint items: `refused` when one of its conditions failed.
    async fn endpoint_transaction(
        &self,
        items: Vec<TransactWriteItem>,
        refused: impl FnOnce() -> AdminError,
    ) -> Result<(), AdminError> {
        let sent = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
        match sent.map(|_| Transaction::Committed).or_else(transaction_outcome)? {
            Transaction::Committed => Ok(()),
            Transaction::ConditionFailed => Err(refused()),
            Transaction::Conflict => Err(StoreError::Unavailable("a conflicting change; try again".into()).into()),
        }
    }

    /// The endpoint `id`, disabled or not; `None` when there is none.
    pub async fn endpoint(&self, id: &str) -> Result<Option<Endpoint>, StoreError> {
        if !Endpoint::well_formed(id) {
            return Ok(None);
        }
        Ok(self.get(endpoint_pk(id), ENDPOINT_SK).await?.as_ref().and_then(Endpoint::from_item))
    }

    /// The endpoints of a workspace.
    pub async fn list_endpoints(&self, workspace_id: u64) -> Result<Vec<Endpoint>, AdminError> {
        self.each_listed(workspace_id, "EP#", "endpoint_id", |id| async move { self.endpoint(&id).await }).await
    }

    /// Deletes endpoint `id`: nothing more is sent to it.
    pub async fn delete_endpoint(&self, id: &str) -> Result<Endpoint, AdminError> {
        let endpoint = self.endpoint(id).await?.ok_or_else(|| no_endpoint(id))?;
        let delete = |pk: String, sk: String| -> Result<TransactWriteItem, StoreError> {
            let delete = Delete::builder()
                .table_name(&self.table)
                .key("pk", s(pk))
                .key("sk", s(sk))
                .condition_expression("attribute_exists(pk)")
                .build()
                .map_err(StoreError::from)?;
            Ok(TransactWriteItem::builder().delete(delete).build())
        };
        let items = vec![
            self.count_endpoints(endpoint.workspace_id, -1)?,
            delete(endpoint_pk(id), ENDPOINT_SK.to_owned())?,
            delete(workspace_pk(endpoint.workspace_id), endpoint_pk(id))?,
        ];
        self.endpoint_transaction(items, || no_endpoint(id)).await?;
        Ok(endpoint)
    }

    /// Disables endpoint `id` for `why` (kept: the first reason and time stand).
    pub async fn disable_endpoint(&self, id: &str, why: Disabled) -> Result<Endpoint, AdminError> {
        let update = self
            .update_endpoint(id)?
            .update_expression(
                "SET disabled_at = if_not_exists(disabled_at, :now), disabled = if_not_exists(disabled, :why)",
            )
            .expression_attribute_values(":now", n(now_ms()))
            .expression_attribute_values(":why", s(why.as_str()));
        endpoint_updated(update.send().await, id, || no_endpoint(id))
    }

    /// Enables endpoint `id` again, its failures forgotten.
    pub async fn enable_endpoint(&self, id: &str) -> Result<Endpoint, AdminError> {
        let update = self.update_endpoint(id)?.update_expression("REMOVE disabled_at, disabled, failing_since");
        endpoint_updated(update.send().await, id, || no_endpoint(id))
    }

    /// Gives endpoint `id` a new secret; the one it had signs beside it for `overlap_ms`
    /// more (none: at once only the new one).
    pub async fn rotate_endpoint(
        &self,
        sealer: &Sealer,
        id: &str,
        secret: &Secret,
        overlap_ms: u64,
    ) -> Result<Endpoint, AdminError> {
        let endpoint = self.endpoint(id).await?.ok_or_else(|| no_endpoint(id))?;
        let sealed = sealer.seal(secret.bytes(), id, endpoint.workspace_id).await?;
        let update = self
            .update_endpoint(id)?
            // The secret it had when read: two rotations at once do not both keep it.
            .condition_expression("sealed = :old")
            .expression_attribute_values(":new", AttributeValue::B(Blob::new(sealed)))
            .expression_attribute_values(":old", AttributeValue::B(Blob::new(endpoint.sealed.clone())));
        endpoint_updated(rotation(update, overlap_ms).send().await, id, || {
            AdminError::Invalid(format!("endpoint {id} changed meanwhile (rotated or deleted); try again"))
        })
    }

    /// The secrets endpoint `endpoint` signs with at `now` (epoch ms): its own, and during a
    /// rotation's overlap the one before.
    pub async fn endpoint_secrets(
        &self,
        sealer: &Sealer,
        endpoint: &Endpoint,
        now: u64,
    ) -> Result<Vec<Secret>, StoreError> {
        let mut sealed = vec![&endpoint.sealed];
        if let (Some(previous), Some(until)) = (&endpoint.previous, endpoint.previous_until) {
            if now < until {
                sealed.push(previous);
            }
        }
        let mut secrets = Vec::with_capacity(sealed.len());
        for one in sealed {
            let bytes = sealer.open(one, &endpoint.id, endpoint.workspace_id).await?;
            secrets.push(Secret::from_bytes(bytes).map_err(StoreError::Internal)?);
        }
        Ok(secrets)
    }

    /// An UpdateItem of endpoint `id` (which must exist) that answers it as it left it.
    fn update_endpoint(
        &self,
        id: &str,
    ) -> Result<aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder, AdminError> {
        if !Endpoint::well_formed(id) {
            return Err(no_endpoint(id));
        }
        Ok(self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(endpoint_pk(id)))
            .key("sk", s(ENDPOINT_SK))
            .condition_expression("attribute_exists(pk)")
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew))
    }
}

fn no_endpoint(id: &str) -> AdminError {
    AdminError::Invalid(format!("no endpoint with id {id:?}"))
}

/// The endpoint an UpdateItem (`ALL_NEW`) left, or `refused` when its condition failed.
fn endpoint_updated(
    result: UpdateResult,
    id: &str,
    refused: impl FnOnce() -> AdminError,
) -> Result<Endpoint, AdminError> {
    updated_as(result, Endpoint::from_item, || no_endpoint(id), refused)
}
