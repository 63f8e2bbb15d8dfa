//! Webhook hooks: a provider's end-of-call webhook pointed at one workspace
//! (`POST /v1/webhooks/{provider}/{hook_id}`). A hook has its provider, an optional default
//! agent (for a payload whose agent id names none of the workspace's agents), and its
//! signing secret, sealed ([`super::sealing`]); a Vapi hook also the header its secret is
//! sent in ([`CredentialHeader`]). A rotation keeps the previous secret for an overlap (24
//! hours unless told; none with `--now`); a revoked hook takes nothing.
//!
//! The webhook reads a hook through the directory's cache ([`Directory::hook_for_webhook`]):
//! a change (rotation, revocation, a default agent) reaches every instance within the
//! cache's lifetime (at most 60 s), or [`super::OUTAGE_GRACE`] while DynamoDB is down.
//!
//! Items: `HOOK#<id>` / `HOOK` (the hook), and `WS#<workspace>` / `HOOK#<id>` (its listing).

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem};
use serde::Serialize;

use super::admin::AdminError;
use super::item_keys::*;
use super::sealing::Sealer;
use super::{Agent, AgentRef, Directory};
use crate::calls::item::{get_b, n, s, Item};
use crate::calls::{now_ms, random_hex, StoreError};
use call_ingest_core::providers::signature::SecretHeader;
use call_ingest_core::providers::Provider;

/// How long the previous secret is still accepted after a rotation, unless told otherwise.
pub const ROTATION_OVERLAP_MS: u64 = 24 * 3600 * 1000;

/// The header a Vapi hook's secret is sent in, and the prefix before it: Vapi's credential
/// settings ("Bearer Token": header name, and whether the `Bearer ` prefix is on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialHeader {
    /// Lower case.
    pub header: String,
    pub prefix: Option<String>,
}

impl CredentialHeader {
    /// Vapi's default: `Authorization: Bearer <secret>`.
    pub fn bearer() -> CredentialHeader {
        CredentialHeader::of(SecretHeader::BEARER)
    }

    fn of(h: SecretHeader<'_>) -> CredentialHeader {
        CredentialHeader { header: h.name.to_owned(), prefix: h.prefix.map(str::to_owned) }
    }

    /// `header` (an HTTP field name) with `prefix` (a word, or none): refused when either
    /// could not be sent as given.
    pub fn new(header: &str, prefix: Option<&str>) -> Result<CredentialHeader, AdminError> {
        let token = |t: &str| {
            !t.is_empty()
                && t.len() <= 64
                && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        };
        if !token(header) {
            return Err(AdminError::Invalid(format!("{header:?} is not an HTTP header name")));
        }
        if prefix.is_some_and(|p| !token(p)) {
            return Err(AdminError::Invalid(format!("{prefix:?} is not a prefix word (Bearer, or none)")));
        }
        Ok(CredentialHeader { header: header.to_ascii_lowercase(), prefix: prefix.map(str::to_owned) })
    }

    pub fn as_secret_header(&self) -> SecretHeader<'_> {
        SecretHeader { name: &self.header, prefix: self.prefix.as_deref() }
    }
}

pub fn hook_pk(id: &str) -> String {
    format!("HOOK#{id}")
}
pub const HOOK_SK: &str = "HOOK";

/// A hook, as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hook {
    pub id: String,
    pub workspace_id: u64,
    pub provider: Provider,
    /// The agent a call goes to when its payload names none of the workspace's agents.
    pub default_agent_id: Option<String>,
    /// Epoch ms.
    pub created_at: u64,
    pub revoked_at: Option<u64>,
    /// Until when (epoch ms) the secret before the last rotation is accepted too.
    pub previous_until: Option<u64>,
    /// Vapi's: where its secret is sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<CredentialHeader>,
    #[serde(skip)]
    sealed: Vec<u8>,
    #[serde(skip)]
    previous: Option<Vec<u8>>,
}

impl Hook {
    fn from_item(item: &Item) -> Option<Hook> {
        Some(Hook {
            id: field_s(item, "hook_id")?.to_owned(),
            workspace_id: field_u64(item, "workspace_id")?,
            provider: Provider::parse(field_s(item, "provider")?)?,
            default_agent_id: field_s(item, "agent_id").map(str::to_owned),
            created_at: field_u64(item, "created_at").unwrap_or_default(),
            revoked_at: field_u64(item, "revoked_at"),
            previous_until: field_u64(item, "previous_until"),
            credential: credential_of(item),
            sealed: get_b(item, "sealed")?.to_vec(),
            previous: get_b(item, "previous").map(<[u8]>::to_vec),
        })
    }

    /// Where a Vapi hook's secret is read from (the legacy `X-Vapi-Secret` for a hook made
    /// before hooks had a credential header).
    pub fn secret_header(&self) -> SecretHeader<'_> {
        self.credential.as_ref().map_or(SecretHeader::LEGACY, CredentialHeader::as_secret_header)
    }

    /// Whether a hook id can be one we made (`hk_` and 24 hex digits): anything else
    /// names no hook and costs no read.
    pub fn well_formed(id: &str) -> bool {
        id.strip_prefix("hk_").is_some_and(|h| h.len() == 24 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

/// A Vapi hook's credential header as stored (`auth_header`, `auth_prefix`); none stored is
/// the legacy header.
fn credential_of(item: &Item) -> Option<CredentialHeader> {
    match field_s(item, "provider") {
        Some("vapi") => Some(match field_s(item, "auth_header") {
            Some(header) => {
                CredentialHeader { header: header.to_owned(), prefix: field_s(item, "auth_prefix").map(str::to_owned) }
            }
            None => CredentialHeader::of(SecretHeader::LEGACY),
        }),
        _ => None,
    }
}

impl Directory {
    /// Creates a hook of `workspace_id` for `provider`, signed with `secret`, with
    /// `default_agent` (a remote id of the workspace's agents) when given; a Vapi hook reads
    /// its secret from `credential` (Vapi's Bearer Token credential when none is given).
    pub async fn create_hook(
        &self,
        sealer: &Sealer,
        workspace_id: u64,
        provider: Provider,
        default_agent: Option<&str>,
        secret: &[u8],
        credential: Option<CredentialHeader>,
    ) -> Result<Hook, AdminError> {
        let credential = match provider {
            Provider::Vapi => Some(credential.unwrap_or_else(CredentialHeader::bearer)),
            _ if credential.is_some() => {
                return Err(AdminError::Invalid(format!(
                    "{} signs its requests: a header is Vapi's only",
                    provider.as_str()
                )))
            }
            _ => None,
        };
        if secret.is_empty() {
            return Err(AdminError::Invalid("a hook's signing secret cannot be empty".into()));
        }
        if self.workspace(workspace_id).await?.is_none() {
            return Err(AdminError::NoWorkspace(workspace_id));
        }
        let agent_id = match default_agent {
            Some(remote) => Some(
                self.agent_by_remote(workspace_id, remote)
                    .await?
                    .ok_or_else(|| AdminError::Invalid(format!("workspace {workspace_id} has no agent {remote:?}")))?
                    .id,
            ),
            None => None,
        };
        let id = format!("hk_{}", random_hex(12)?);
        let sealed = sealer.seal(secret, &id, workspace_id).await?;
        let now = now_ms();
        let mut hook = Item::from([
            ("pk".into(), s(hook_pk(&id))),
            ("sk".into(), s(HOOK_SK)),
            ("hook_id".into(), s(id.clone())),
            ("workspace_id".into(), n(workspace_id)),
            ("provider".into(), s(provider.as_str())),
            ("created_at".into(), n(now)),
            ("sealed".into(), AttributeValue::B(Blob::new(sealed))),
        ]);
        if let Some(agent) = &agent_id {
            hook.insert("agent_id".into(), s(agent.clone()));
        }
        if let Some(c) = &credential {
            hook.insert("auth_header".into(), s(c.header.clone()));
            if let Some(prefix) = &c.prefix {
                hook.insert("auth_prefix".into(), s(prefix.clone()));
            }
        }
        let listing = Item::from([
            ("pk".into(), s(workspace_pk(workspace_id))),
            ("sk".into(), s(hook_pk(&id))),
            ("hook_id".into(), s(id.clone())),
        ]);
        let workspace_exists = ConditionCheck::builder()
            .table_name(&self.table)
            .key("pk", s(workspace_pk(workspace_id)))
            .key("sk", s(WORKSPACE_SK))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(StoreError::from)?;
        let items = vec![
            TransactWriteItem::builder().condition_check(workspace_exists).build(),
            crate::calls::item::put_new(&self.table, hook.clone())?,
            crate::calls::item::put_new(&self.table, listing)?,
        ];
        self.transact(items).await?;
        Hook::from_item(&hook).ok_or_else(|| StoreError::Internal("hook item".into()).into())
    }

    /// The hook `id`, revoked or not; `None` when there is none.
    pub async fn hook(&self, id: &str) -> Result<Option<Hook>, StoreError> {
        Ok(self.get(hook_pk(id), HOOK_SK).await?.as_ref().and_then(Hook::from_item))
    }

    /// The hook `id` for a request to it: from the cache while fresh, else read within
    /// `within`; when DynamoDB cannot answer in that time, as this instance read it in the
    /// last [`super::OUTAGE_GRACE`] (a provider does not retry: its report is kept rather
    /// than lost). An instance that never read it waits up to `alone` for DynamoDB.
    /// `None` when there is none.
    pub async fn hook_for_webhook(
        &self,
        id: &str,
        within: std::time::Duration,
        alone: std::time::Duration,
    ) -> Result<Option<Hook>, StoreError> {
        let item = self.read_within(&hook_pk(id), HOOK_SK, (within, alone), true).await?;
        Ok(item.as_ref().and_then(Hook::from_item))
    }

    /// The agent a report to `hook` goes to: the workspace's agent whose remote id the
    /// payload names (`named`), else the hook's default; `None` when neither is an agent
    /// (the report is held). Each read as [`Directory::agent_within`].
    pub async fn report_agent(
        &self,
        hook: &Hook,
        named: Option<&str>,
        within: std::time::Duration,
    ) -> Result<Option<Agent>, StoreError> {
        let workspace_id = hook.workspace_id;
        if let Some(remote_id) = named {
            let agent = self.agent_within(AgentRef::Remote { workspace_id, remote_id }, workspace_id, within).await?;
            if agent.is_some() {
                return Ok(agent);
            }
        }
        match &hook.default_agent_id {
            Some(id) => self.agent_within(AgentRef::Id(id), workspace_id, within).await,
            None => Ok(None),
        }
    }

    /// Gives hook `id` the default agent `remote` (a remote id of its workspace's agents):
    /// its reports held for want of an agent are committed at the next sweep.
    pub async fn set_default_agent(&self, id: &str, remote: &str) -> Result<Hook, AdminError> {
        let hook = self.hook(id).await?.ok_or_else(|| AdminError::NoHook(id.to_owned()))?;
        let agent = self
            .agent_by_remote(hook.workspace_id, remote)
            .await?
            .ok_or_else(|| AdminError::Invalid(format!("workspace {} has no agent {remote:?}", hook.workspace_id)))?;
        let result = self
            .update_hook(id)
            .update_expression("SET agent_id = :agent")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":agent", s(agent.id))
            .send()
            .await;
        updated(result, id, || AdminError::NoHook(id.to_owned()))
    }

    /// The hooks of a workspace.
    pub async fn list_hooks(&self, workspace_id: u64) -> Result<Vec<Hook>, AdminError> {
        self.each_listed(workspace_id, "HOOK#", "hook_id", |id| async move { self.hook(&id).await }).await
    }

    /// Each item a workspace lists under `prefix` (its id in `id_attr`), read by `read`;
    /// one listed but gone meanwhile is left out.
    pub(super) async fn each_listed<T, F, Fut>(
        &self,
        workspace_id: u64,
        prefix: &str,
        id_attr: &str,
        read: F,
    ) -> Result<Vec<T>, AdminError>
    where
        F: Fn(String) -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, StoreError>>,
    {
        let mut found = Vec::new();
        for listing in self.query_prefix(workspace_pk(workspace_id), prefix).await? {
            if let Some(id) = field_s(&listing, id_attr) {
                found.extend(read(id.to_owned()).await?);
            }
        }
        Ok(found)
    }

    /// Revokes hook `id`: from now on it takes nothing (401).
    pub async fn revoke_hook(&self, id: &str) -> Result<Hook, AdminError> {
        let result = self
            .update_hook(id)
            .update_expression("SET revoked_at = if_not_exists(revoked_at, :now)")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":now", n(now_ms()))
            .send()
            .await;
        updated(result, id, || AdminError::NoHook(id.to_owned()))
    }

    /// Gives hook `id` a new secret; the one it had is accepted for `overlap_ms` more (none:
    /// cut off at once, on every instance within the cache's lifetime).
    pub async fn rotate_hook(
        &self,
        sealer: &Sealer,
        id: &str,
        secret: &[u8],
        overlap_ms: u64,
    ) -> Result<Hook, AdminError> {
        let hook =
            self.hook(id).await?.filter(|h| h.revoked_at.is_none()).ok_or_else(|| AdminError::NoHook(id.to_owned()))?;
        if secret.is_empty() {
            return Err(AdminError::Invalid("a hook's signing secret cannot be empty".into()));
        }
        let sealed = sealer.seal(secret, id, hook.workspace_id).await?;
        let update = self
            .update_hook(id)
            // The secret it had when read: two rotations at once do not both keep it.
            .condition_expression("sealed = :old AND attribute_not_exists(revoked_at)")
            .expression_attribute_values(":new", AttributeValue::B(Blob::new(sealed)))
            .expression_attribute_values(":old", AttributeValue::B(Blob::new(hook.sealed.clone())));
        let result = rotation(update, overlap_ms).send().await;
        updated(result, id, || {
            AdminError::Invalid(format!("hook {id} changed meanwhile (rotated or revoked); try again"))
        })
    }

    /// An UpdateItem of hook `id` that answers the hook as it left it.
    fn update_hook(&self, id: &str) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(hook_pk(id)))
            .key("sk", s(HOOK_SK))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
    }

    /// The secrets hook `hook` accepts at `now` (epoch ms): its own, and during a rotation's
    /// overlap the one before.
    pub async fn hook_secrets(&self, sealer: &Sealer, hook: &Hook, now: u64) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut secrets = vec![sealer.open(&hook.sealed, &hook.id, hook.workspace_id).await?];
        if let (Some(previous), Some(until)) = (&hook.previous, hook.previous_until) {
            if now < until {
                secrets.push(sealer.open(previous, &hook.id, hook.workspace_id).await?);
            }
        }
        Ok(secrets)
    }
}

/// A rotation's update (`:new`, `:old` the sealed secrets): the new secret, and the old one
/// kept beside it until `overlap_ms` from now (none: dropped at once).
pub(super) fn rotation(update: UpdateItemFluentBuilder, overlap_ms: u64) -> UpdateItemFluentBuilder {
    match overlap_ms {
        0 => update.update_expression("SET sealed = :new REMOVE previous, previous_until"),
        _ => update
            .update_expression("SET sealed = :new, previous = :old, previous_until = :until")
            .expression_attribute_values(":until", n(now_ms().saturating_add(overlap_ms))),
    }
}

/// The hook an UpdateItem (`ALL_NEW`) left, or `refused` when its condition failed.
fn updated(result: UpdateResult, id: &str, refused: impl FnOnce() -> AdminError) -> Result<Hook, AdminError> {
    updated_as(result, Hook::from_item, || AdminError::NoHook(id.to_owned()), refused)
}

/// What an UpdateItem answers.
pub(super) type UpdateResult = Result<
    aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
    aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::update_item::UpdateItemError,
        aws_sdk_dynamodb::config::http::HttpResponse,
    >,
>;

/// The item an UpdateItem (`ALL_NEW`) left, as `read` reads it (`missing` when it reads
/// nothing), or `refused` when its condition failed.
pub(super) fn updated_as<T>(
    result: UpdateResult,
    read: fn(&Item) -> Option<T>,
    missing: impl FnOnce() -> AdminError,
    refused: impl FnOnce() -> AdminError,
) -> Result<T, AdminError> {
    match result {
        Ok(out) => out.attributes.as_ref().and_then(read).ok_or_else(missing),
        Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Err(refused()),
        Err(e) => Err(StoreError::from_sdk(e).into()),
    }
}
