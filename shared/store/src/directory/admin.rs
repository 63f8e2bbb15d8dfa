//! Setting the directory up: workspaces, agents, API keys and sessions (what `callctl` and
//! the tests use; the functions only read).

use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, ReturnValue, TransactWriteItem, Update};
use call_ingest_core::privacy::{Policy, Storage};
use serde::Serialize;

use super::credentials::{Kind, Secret};
use super::item_keys::*;
use super::limits::MAX_LIMIT;
use super::policies::{
    IDENTITY_CONTEXT, IDENTITY_KEY, PII_ENTITIES, PII_MODEL, RAW_RETENTION_DAYS, REGISTERED, REGISTRY_PK, REGISTRY_SK,
    RETENTION_DAYS, STORAGE,
};
use super::scopes::Scopes;
use super::sealing::Sealer;
use super::{now_s, Agent, Directory};
use crate::calls::item::{n, s, Item};
use crate::calls::{random_hex, StoreError};

/// Why an administrative change was refused.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("workspace {0} does not exist")]
    NoWorkspace(u64),
    #[error("workspace {workspace_id} already has an agent with remote id {remote_id:?}")]
    RemoteIdTaken { workspace_id: u64, remote_id: String },
    #[error("no API key or session with id {0:?}")]
    NoCredential(String),
    #[error("no webhook hook with id {0:?}")]
    NoHook(String),
    #[error("the public id {0:?} is taken by another credential")]
    PublicIdTaken(String),
    #[error("{0}")]
    Invalid(String),
    /// A limit refused the change (a workspace's endpoints).
    #[error("{0}")]
    Limit(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    pub id: u64,
    pub name: String,
    /// Requests per second across both endpoints; `None`: the functions' default
    /// (`RATE_LIMIT_PER_SECOND`).
    pub rate_limit: Option<u32>,
    /// Its data policy (`callctl workspace policy`).
    pub policy: call_ingest_core::privacy::Policy,
}

/// A credential as created: the only time its token is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issued {
    pub token: String,
    pub public_id: String,
    /// Epoch seconds, for sessions.
    pub expires_at: Option<u64>,
}

/// An API key as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    pub public_id: String,
    pub name: String,
    /// What the key may do.
    #[serde(serialize_with = "scope_names")]
    pub scopes: Scopes,
    pub created_at: u64,
    pub revoked_at: Option<u64>,
}

impl Directory {
    /// Creates a workspace with the next free id.
    pub async fn create_workspace(&self, name: &str) -> Result<Workspace, AdminError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s("COUNTER"))
            .key("sk", s("WORKSPACE"))
            .update_expression("ADD next_id :one")
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        let id = out
            .attributes()
            .and_then(|a| field_u64(a, "next_id"))
            .ok_or_else(|| StoreError::Internal("workspace counter answered no value".into()))?;
        let item = Item::from([
            ("pk".into(), s(workspace_pk(id))),
            ("sk".into(), s(WORKSPACE_SK)),
            ("name".into(), s(name)),
            ("created_at".into(), n(now_s())),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(Workspace { id, name: name.to_owned(), rate_limit: None, policy: Default::default() })
    }

    /// The workspace `id`, if it exists.
    pub async fn workspace(&self, id: u64) -> Result<Option<Workspace>, AdminError> {
        let Some(item) = self.get(workspace_pk(id), WORKSPACE_SK).await? else { return Ok(None) };
        Ok(Some(Workspace {
            id,
            name: field_s(&item, "name").unwrap_or_default().to_owned(),
            rate_limit: field_u64(&item, "rate_limit").and_then(|l| u32::try_from(l).ok()),
            policy: super::policies::policy_of(&item).map_err(AdminError::Invalid)?,
        }))
    }

    /// Sets the workspace's limit of requests per second (1 to [`MAX_LIMIT`]), or with
    /// `None` gives it the functions' default again. Instances see the change within
    /// their cache's lifetime (at most 60 s).
    pub async fn set_rate_limit(&self, id: u64, limit: Option<u32>) -> Result<Workspace, AdminError> {
        if limit.is_some_and(|l| !(1..=MAX_LIMIT).contains(&l)) {
            return Err(AdminError::Invalid(format!("the limit must be 1 to {MAX_LIMIT} requests per second")));
        }
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(workspace_pk(id)))
            .key("sk", s(WORKSPACE_SK))
            .condition_expression("attribute_exists(pk)");
        let update = match limit {
            Some(l) => update.update_expression("SET rate_limit = :l").expression_attribute_values(":l", n(l)),
            None => update.update_expression("REMOVE rate_limit"),
        };
        match update.send().await {
            Ok(_) => {}
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                return Err(AdminError::NoWorkspace(id))
            }
            Err(e) => return Err(StoreError::from_sdk(e).into()),
        }
        self.workspace(id).await?.ok_or(AdminError::NoWorkspace(id))
    }

    /// Creates an agent in a workspace; `agent_id` is generated unless given (fixtures).
    pub async fn create_agent(
        &self,
        workspace_id: u64,
        remote_id: &str,
        name: Option<&str>,
        agent_id: Option<&str>,
    ) -> Result<Agent, AdminError> {
        if remote_id.is_empty() || remote_id.chars().count() > 200 {
            return Err(AdminError::Invalid("the remote id must be 1 to 200 characters".into()));
        }
        let agent = Agent {
            id: match agent_id {
                Some(id) => id.to_owned(),
                None => format!("agt_{}", random_hex(8)?),
            },
            workspace_id,
            remote_id: remote_id.to_owned(),
            name: name.map(str::to_owned),
        };
        let item = |pk: String, sk: &str| {
            let mut item = Item::from([
                ("pk".into(), s(pk)),
                ("sk".into(), s(sk)),
                ("agent_id".into(), s(agent.id.clone())),
                ("workspace_id".into(), n(workspace_id)),
                ("remote_id".into(), s(remote_id)),
            ]);
            if let Some(name) = name {
                item.insert("name".into(), s(name));
            }
            item
        };
        let items = vec![
            TransactWriteItem::builder()
                .condition_check(
                    ConditionCheck::builder()
                        .table_name(&self.table)
                        .key("pk", s(workspace_pk(workspace_id)))
                        .key("sk", s(WORKSPACE_SK))
                        .condition_expression("attribute_exists(pk)")
                        .build()
                        .map_err(StoreError::from)?,
                )
                .build(),
            self.put_new(item(agent_pk(&agent.id), AGENT_SK))?,
            self.put_new(item(remote_pk(workspace_id, remote_id), AGENT_SK))?,
            self.put_new(item(workspace_pk(workspace_id), &agent_listing_sk(&agent.id)))?,
        ];
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(agent),
            Err(e) => {
                let reasons = crate::calls::cancellation_codes(&e);
                let failed = |i: usize| reasons.get(i).and_then(|r| r.as_deref()) == Some("ConditionalCheckFailed");
                if failed(0) {
                    Err(AdminError::NoWorkspace(workspace_id))
                } else if failed(2) {
                    Err(AdminError::RemoteIdTaken { workspace_id, remote_id: remote_id.to_owned() })
                } else if failed(1) {
                    Err(AdminError::Invalid(format!("agent id {} exists already", agent.id)))
                } else {
                    Err(StoreError::from_sdk(e).into())
                }
            }
        }
    }

    /// The agent with remote id `remote_id` in `workspace_id`.
    pub async fn agent_by_remote(&self, workspace_id: u64, remote_id: &str) -> Result<Option<Agent>, AdminError> {
        Ok(self.get(remote_pk(workspace_id, remote_id), AGENT_SK).await?.as_ref().and_then(Agent::from_item))
    }

    /// The agents of a workspace.
    pub async fn list_agents(&self, workspace_id: u64) -> Result<Vec<Agent>, AdminError> {
        Ok(self.query(workspace_pk(workspace_id), "AGENT#").await?.iter().filter_map(Agent::from_item).collect())
    }

    /// Creates an API key for a workspace, with `scopes` (at least one). The token in the
    /// answer is never shown again.
    pub async fn create_api_key(&self, workspace_id: u64, name: &str, scopes: Scopes) -> Result<Issued, AdminError> {
        with_fresh_secret(Kind::ApiKey, async |secret| self.register_api_key(workspace_id, name, scopes, secret).await)
            .await
    }

    /// Stores an API key whose token is given (fixtures such as the events' example key).
    pub async fn register_api_key(
        &self,
        workspace_id: u64,
        name: &str,
        scopes: Scopes,
        secret: Secret,
    ) -> Result<Issued, AdminError> {
        if scopes.is_empty() {
            return Err(AdminError::Invalid("an API key needs at least one scope".into()));
        }
        if self.workspace(workspace_id).await?.is_none() {
            return Err(AdminError::NoWorkspace(workspace_id));
        }
        let now = now_s();
        let credential = Item::from([
            ("pk".into(), s(credential_pk(&secret.digest))),
            ("sk".into(), s(CREDENTIAL_SK)),
            ("kind".into(), s(Kind::ApiKey.as_str())),
            ("workspace_id".into(), n(workspace_id)),
            ("public_id".into(), s(secret.public_id.clone())),
            ("name".into(), s(name)),
            ("scopes".into(), scopes.to_attribute()),
            ("created_at".into(), n(now)),
        ]);
        let listing = Item::from([
            ("pk".into(), s(workspace_pk(workspace_id))),
            ("sk".into(), s(key_listing_sk(&secret.public_id))),
            ("digest".into(), s(secret.digest.clone())),
            ("name".into(), s(name)),
            ("scopes".into(), scopes.to_attribute()),
            ("created_at".into(), n(now)),
        ]);
        self.put_credential(&secret, Kind::ApiKey, credential, Some(listing)).await?;
        Ok(Issued { token: secret.token, public_id: secret.public_id, expires_at: None })
    }

    /// Creates a session for `user`, valid for `workspaces` until `ttl` from now.
    pub async fn create_session(&self, user: &str, workspaces: &[u64], ttl: Duration) -> Result<Issued, AdminError> {
        if user.is_empty() || workspaces.is_empty() {
            return Err(AdminError::Invalid("a session needs a user and at least one workspace".into()));
        }
        for w in workspaces {
            if self.workspace(*w).await?.is_none() {
                return Err(AdminError::NoWorkspace(*w));
            }
        }
        let expires_at = now_s()
            .checked_add(ttl.as_secs())
            .ok_or_else(|| AdminError::Invalid("the session lifetime is too long".into()))?;
        let mut workspaces = workspaces.to_vec();
        // DynamoDB refuses a number set with repeats.
        workspaces.sort_unstable();
        workspaces.dedup();
        with_fresh_secret(Kind::Session, async |secret| self.store_session(user, &workspaces, expires_at, secret).await)
            .await
    }

    async fn store_session(
        &self,
        user: &str,
        workspaces: &[u64],
        expires_at: u64,
        secret: Secret,
    ) -> Result<Issued, AdminError> {
        let credential = Item::from([
            ("pk".into(), s(credential_pk(&secret.digest))),
            ("sk".into(), s(CREDENTIAL_SK)),
            ("kind".into(), s(Kind::Session.as_str())),
            ("user".into(), s(user)),
            (
                "workspaces".into(),
                aws_sdk_dynamodb::types::AttributeValue::Ns(workspaces.iter().map(u64::to_string).collect()),
            ),
            ("public_id".into(), s(secret.public_id.clone())),
            ("created_at".into(), n(now_s())),
            // Also the table's TTL attribute: expired sessions disappear by themselves.
            ("expires_at".into(), n(expires_at)),
        ]);
        self.put_credential(&secret, Kind::Session, credential, None).await?;
        Ok(Issued { token: secret.token, public_id: secret.public_id, expires_at: Some(expires_at) })
    }

    async fn put_credential(
        &self,
        secret: &Secret,
        kind: Kind,
        credential: Item,
        listing: Option<Item>,
    ) -> Result<(), AdminError> {
        let mut pointer = Item::from([
            ("pk".into(), s(credential_id_pk(&secret.public_id))),
            ("sk".into(), s(CREDENTIAL_SK)),
            ("digest".into(), s(secret.digest.clone())),
            ("kind".into(), s(kind.as_str())),
        ]);
        if let Some(w) = credential.get("workspace_id") {
            pointer.insert("workspace_id".into(), w.clone());
        }
        let mut items = vec![self.put_new(credential)?, self.put_new(pointer)?];
        if let Some(listing) = listing {
            items.push(self.put_new(listing)?);
        }
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(()),
            Err(e) => {
                // Items 1 and 2 are keyed by the public id (32 random bits): taken.
                let codes = crate::calls::cancellation_codes(&e);
                if codes.iter().skip(1).any(|c| c.as_deref() == Some("ConditionalCheckFailed")) {
                    return Err(AdminError::PublicIdTaken(secret.public_id.clone()));
                }
                Err(StoreError::from_sdk(e).into())
            }
        }
    }

    /// Revokes the API key or session with this public id (or its full token). It stops
    /// working once cached copies expire (at most the cache lifetime).
    pub async fn revoke(&self, id_or_token: &str) -> Result<String, AdminError> {
        let public_id = super::credentials::public_id(id_or_token.trim());
        let pointer = self
            .get(credential_id_pk(&public_id), CREDENTIAL_SK)
            .await?
            .ok_or_else(|| AdminError::NoCredential(public_id.clone()))?;
        let digest = field_s(&pointer, "digest").unwrap_or_default();
        let now = n(now_s());
        let update = |pk: String, sk: String| -> Result<TransactWriteItem, StoreError> {
            Ok(TransactWriteItem::builder()
                .update(
                    Update::builder()
                        .table_name(&self.table)
                        .key("pk", s(pk))
                        .key("sk", s(sk))
                        .update_expression("SET revoked_at = if_not_exists(revoked_at, :now)")
                        .condition_expression("attribute_exists(pk)")
                        .expression_attribute_values(":now", now.clone())
                        .build()?,
                )
                .build())
        };
        let mut items = vec![update(credential_pk(digest), CREDENTIAL_SK.into())?];
        if let Some(w) = field_u64(&pointer, "workspace_id") {
            items.push(update(workspace_pk(w), key_listing_sk(&public_id))?);
        }
        self.transact(items).await?;
        Ok(public_id)
    }

    /// The API keys of a workspace, without their secrets.
    pub async fn list_keys(&self, workspace_id: u64) -> Result<Vec<KeyInfo>, AdminError> {
        Ok(self
            .query(workspace_pk(workspace_id), "KEY#")
            .await?
            .iter()
            .map(|i| KeyInfo {
                public_id: field_s(i, "sk").unwrap_or_default().trim_start_matches("KEY#").to_owned(),
                name: field_s(i, "name").unwrap_or_default().to_owned(),
                scopes: Scopes::of_item(i),
                created_at: field_u64(i, "created_at").unwrap_or_default(),
                revoked_at: field_u64(i, "revoked_at"),
            })
            .collect())
    }

    pub(super) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<(), StoreError> {
        self.client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(())
    }

    /// A transaction item that puts `item` unless its key exists already.
    fn put_new(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        crate::calls::item::put_new(&self.table, item)
    }

    pub(super) async fn query_prefix(&self, pk: String, prefix: &str) -> Result<Vec<Item>, StoreError> {
        self.query(pk, prefix).await
    }

    async fn query(&self, pk: String, prefix: &str) -> Result<Vec<Item>, StoreError> {
        let range = crate::calls::query::SortKeys::Prefix(prefix.to_owned());
        crate::calls::query::query(&self.client, &self.table, &pk, &range, false, None).await
    }
}

fn scope_names<S: serde::Serializer>(scopes: &Scopes, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(scopes.iter().map(|s| s.as_str()))
}

/// How many fresh secrets to try when public ids collide (32 bits: about 1 % of
/// creations collide at ~9,000 credentials; ten in a row, never in practice).
const PUBLIC_ID_ATTEMPTS: usize = 10;

/// Runs `store` with fresh secrets of `kind` until one's public id is free: creating a
/// credential never fails on a collision.
async fn with_fresh_secret(
    kind: Kind,
    store: impl AsyncFn(Secret) -> Result<Issued, AdminError>,
) -> Result<Issued, AdminError> {
    for _ in 0..PUBLIC_ID_ATTEMPTS {
        let secret = Secret::generate(kind).map_err(|e| StoreError::Internal(e.to_string()))?;
        match store(secret).await {
            Err(AdminError::PublicIdTaken(_)) => continue,
            other => return other,
        }
    }
    Err(StoreError::Unavailable("no free public id; try again".into()).into())
}

impl Directory {
    /// Sets the data policy of workspace `id` (checked first). A policy other than
    /// `everything` gives the workspace its identity key, once. Instances see the change
    /// within their cache's lifetime (60 s): it applies to calls received after that.
    pub async fn set_policy(&self, id: u64, policy: Policy, sealer: Option<&Sealer>) -> Result<Workspace, AdminError> {
        policy.check().map_err(AdminError::Invalid)?;
        // Every attribute by a name placeholder: `storage` is one of DynamoDB's reserved words.
        let mut sets = vec!["#storage = :storage".to_owned(), "#pii = :pii".to_owned()];
        let mut removes = Vec::new();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(workspace_pk(id)))
            .key("sk", s(WORKSPACE_SK))
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#storage", STORAGE)
            .expression_attribute_names("#pii", PII_ENTITIES)
            .expression_attribute_values(":storage", s(policy.storage.as_str()))
            .expression_attribute_values(":pii", s(policy.pii_entities.names().join(",")));
        update = update.expression_attribute_names("#model", PII_MODEL);
        match policy.pii_model {
            Some(model) => {
                sets.push("#model = :model".to_owned());
                update = update.expression_attribute_values(":model", s(super::policies::model_text(model)));
            }
            None => removes.push("#model".to_owned()),
        }
        for (name, days, placeholder) in
            [(RETENTION_DAYS, policy.retention_days, "days"), (RAW_RETENTION_DAYS, policy.raw_retention_days, "raw")]
        {
            update = update.expression_attribute_names(format!("#{placeholder}"), name);
            match days {
                Some(d) => {
                    sets.push(format!("#{placeholder} = :{placeholder}"));
                    update = update.expression_attribute_values(format!(":{placeholder}"), n(d));
                }
                None => removes.push(format!("#{placeholder}")),
            }
        }
        if policy.storage != Storage::Everything {
            let sealer = sealer.ok_or_else(|| AdminError::Invalid("sealing the identity key needs KMS".into()))?;
            let mut key = [0u8; 32];
            getrandom::getrandom(&mut key).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
            let sealed = sealer.seal(&key, IDENTITY_CONTEXT, id).await?;
            sets.push("#key = if_not_exists(#key, :key)".to_owned());
            update = update
                .expression_attribute_names("#key", IDENTITY_KEY)
                .expression_attribute_values(":key", AttributeValue::B(sealed.into()));
        }
        let mut expression = format!("SET {}", sets.join(", "));
        if !removes.is_empty() {
            expression.push_str(&format!(" REMOVE {}", removes.join(", ")));
        }
        match update.update_expression(expression).send().await {
            Ok(_) => {}
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                return Err(AdminError::NoWorkspace(id))
            }
            Err(e) => return Err(StoreError::from_sdk(e).into()),
        }
        // Listed for the retention sweep while it has a retention (after the policy: a sweep
        // reading the list finds the policy that put it there).
        let change = if policy.retention_days.or(policy.raw_retention_days).is_some() { "ADD" } else { "DELETE" };
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(REGISTRY_PK))
            .key("sk", s(REGISTRY_SK))
            .update_expression(format!("{change} {REGISTERED} :id"))
            .expression_attribute_values(":id", AttributeValue::Ns(vec![id.to_string()]))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        self.workspace(id).await?.ok_or(AdminError::NoWorkspace(id))
    }
}
