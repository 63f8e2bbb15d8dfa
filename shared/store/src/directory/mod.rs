//! Who may send calls, and for which agent: credentials (API keys, session tokens),
//! workspaces and agents, in the Directory table.
//!
//! A request costs at most one round trip here: [`Directory::lookup`] reads the credential
//! and the agent together (one BatchGetItem), or nothing when both are cached. The
//! decisions over what it found ([`Lookup::authenticate`], [`Lookup::authorize`]) are
//! plain functions.

pub mod admin;
pub mod attempts;
mod cache;
pub mod credentials;
pub mod endpoints;
pub mod hooks;
pub mod item_keys;
pub mod limits;
pub mod policies;
pub mod scopes;
pub mod sealing;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;

use crate::calls::item::{s, Item};
use crate::calls::StoreError;
use cache::Cache;
pub use credentials::{Denied, Principal, Sessions};
use item_keys::*;
use limits::{Admission, Budget, Limiter};

/// An agent calls are stored for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Agent {
    /// The service's id (`agentId` of operation A).
    pub id: String,
    pub workspace_id: u64,
    /// The per-workspace id (`agent_remote_identifier` of operation B).
    pub remote_id: String,
    pub name: Option<String>,
}

impl Agent {
    fn from_item(item: &Item) -> Option<Agent> {
        Some(Agent {
            id: field_s(item, "agent_id")?.to_owned(),
            workspace_id: field_u64(item, "workspace_id")?,
            remote_id: field_s(item, "remote_id")?.to_owned(),
            name: field_s(item, "name").map(str::to_owned),
        })
    }
}

/// How a request names its agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentRef<'a> {
    /// Operation A's `agentId`.
    Id(&'a str),
    /// Operation B's `agent_remote_identifier` in `workspace_id`.
    Remote { workspace_id: u64, remote_id: &'a str },
}

impl AgentRef<'_> {
    fn pk(&self) -> String {
        match *self {
            AgentRef::Id(id) => agent_pk(id),
            AgentRef::Remote { workspace_id, remote_id } => remote_pk(workspace_id, remote_id),
        }
    }

    /// The workspace the reference names, if it names one.
    fn workspace_id(&self) -> Option<u64> {
        match *self {
            AgentRef::Id(_) => None,
            AgentRef::Remote { workspace_id, .. } => Some(workspace_id),
        }
    }
}

/// What the directory holds for one request's credential and agent.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    pub credential: Option<Item>,
    pub agent: Option<Item>,
    /// The workspace the agent reference names (operation B), read with them.
    pub workspace: Option<Item>,
}

impl Lookup {
    /// 401 unless the credential is known, live, and of a kind the endpoint accepts.
    pub fn authenticate(&self, sessions: Sessions) -> Result<Principal, Denied> {
        credentials::authenticate(self.credential.as_ref(), sessions, now_s())
    }

    /// The agent, if it belongs to `workspace_id`; 404 alike whether it is missing or in
    /// another workspace.
    pub fn authorize(&self, workspace_id: u64) -> Result<Agent, Denied> {
        self.agent
            .as_ref()
            .and_then(Agent::from_item)
            .filter(|a| a.workspace_id == workspace_id)
            .ok_or(Denied::AgentNotFound)
    }
}

/// How old a directory item may be when DynamoDB cannot be read and a call is being sent
/// (never for anything else).
pub const OUTAGE_GRACE: Duration = Duration::from_secs(15 * 60);

/// Whether items past the cache's lifetime may stand in for an unreadable directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recent {
    Refused,
    Taken,
}

/// The Directory table, with a short-lived cache.
#[derive(Debug)]
pub struct Directory {
    client: Client,
    table: String,
    cache: Cache,
    limiter: Limiter,
}

impl Directory {
    /// `cache_ttl` bounds how long a revoked key keeps working (at most 60 s).
    pub fn new(client: Client, table: impl Into<String>, cache_ttl: Duration) -> Self {
        let table = table.into();
        let limiter = Limiter::new(client.clone(), table.clone());
        Directory { client, table, cache: Cache::new(cache_ttl), limiter }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads the credential `token` and the agent `agent` in one round trip (none when
    /// both are cached), consistently, so a read right after a revocation never brings
    /// the old item back into the cache. Missing items are not cached, so a new key or
    /// agent works at once.
    pub async fn lookup(&self, token: &str, agent: Option<AgentRef<'_>>) -> Result<Lookup, StoreError> {
        self.lookup_with(token, agent, Recent::Refused).await
    }

    /// [`Directory::lookup`] for a request that sends a call: when DynamoDB cannot answer,
    /// items this instance read in the last [`OUTAGE_GRACE`] are used, so a call sent with
    /// a credential that was valid minutes ago is not lost to a directory outage. Only
    /// sends; a credential never read here still reads nothing. A key revoked in the last
    /// [`OUTAGE_GRACE`] that this instance read before can still send meanwhile.
    pub async fn lookup_sender(&self, token: &str, agent: Option<AgentRef<'_>>) -> Result<Lookup, StoreError> {
        self.lookup_with(token, agent, Recent::Taken).await
    }

    async fn lookup_with(
        &self,
        token: &str,
        agent: Option<AgentRef<'_>>,
        recent: Recent,
    ) -> Result<Lookup, StoreError> {
        let credential = credential_pk(&credentials::digest(token));
        let agent_key = agent.map(|a| a.pk());
        let workspace = agent.and_then(|a| a.workspace_id()).map(workspace_pk);
        let keys = [
            Some((credential.as_str(), CREDENTIAL_SK)),
            agent_key.as_deref().map(|k| (k, AGENT_SK)),
            workspace.as_deref().map(|k| (k, WORKSPACE_SK)),
        ];
        let mut found = self.read(keys.into_iter().flatten(), recent).await?;
        let mut take = |key: Option<String>| key.and_then(|k| found.remove(&k));
        Ok(Lookup { credential: take(Some(credential)), agent: take(agent_key), workspace: take(workspace) })
    }

    /// `lookup` with its agent replaced by `agent` (from the cache, else one read): for a
    /// request that sends a call whose agent was not known when its credential was read
    /// (recent items taken during an outage, as [`Directory::lookup_sender`]).
    pub async fn with_agent(&self, lookup: Lookup, agent: AgentRef<'_>) -> Result<Lookup, StoreError> {
        let key = agent.pk();
        let mut found = self.read(std::iter::once((key.as_str(), AGENT_SK)), Recent::Taken).await?;
        Ok(Lookup { agent: found.remove(&key), ..lookup })
    }

    /// The items under `pks`, by pk: cached ones from the cache, the others in one
    /// BatchGetItem. Missing items are not cached, so a new key or agent works at once.
    async fn read<'k>(
        &self,
        keys: impl Iterator<Item = (&'k str, &'static str)>,
        recent: Recent,
    ) -> Result<HashMap<String, Item>, StoreError> {
        let mut wanted = Vec::with_capacity(3);
        let mut found: HashMap<String, Item> = HashMap::new();
        for (pk, sk) in keys {
            match self.cache.get(pk) {
                Some(item) => {
                    found.insert(pk.to_owned(), item);
                }
                None => wanted.push((pk, sk)),
            }
        }
        if !wanted.is_empty() {
            let items = match self.batch_get(&wanted).await {
                Ok(items) => items,
                Err(e @ StoreError::Unavailable(_)) if recent == Recent::Taken => {
                    // The credential and agent as read in the last minutes; never the workspace
                    // (its policy and limit are read on their own, and an item kept from before
                    // handed on as read now would be cached anew: `Directory::policy_for`).
                    let kept: Option<Vec<(String, Item)>> = wanted
                        .iter()
                        .filter(|(pk, sk)| !(pk.starts_with("WS#") && *sk == WORKSPACE_SK))
                        .map(|(pk, _)| self.cache.get_recent(pk, OUTAGE_GRACE).map(|item| ((*pk).to_owned(), item)))
                        .collect();
                    let Some(kept) = kept else { return Err(e) };
                    tracing::warn!(error = %e, "directory unreadable; items read in the last minutes used");
                    found.extend(kept);
                    return Ok(found);
                }
                Err(e) => return Err(e),
            };
            for item in items {
                if let Some(pk) = field_s(&item, "pk") {
                    // A credential is cached at once; an agent only once it was
                    // authorised for the caller (`authorize`), so that how fast an answer
                    // comes tells nobody about another workspace's agents.
                    if pk.starts_with("CRED#") {
                        self.cache.put(pk.to_owned(), item.clone());
                    }
                    found.insert(pk.to_owned(), item);
                }
            }
        }
        Ok(found)
    }

    /// The item `pk`/`sk` for a provider's webhook: from the cache while fresh, else read
    /// within `within` (cached when `cache` says so); when DynamoDB cannot answer in that
    /// time, as this instance read it in the last [`OUTAGE_GRACE`]. A provider does not
    /// retry, so a report is kept on an item minutes old rather than lost; a bounded wait
    /// keeps its answer inside the provider's patience whatever DynamoDB does. With no such
    /// item to fall back on, the read waits up to `alone` instead (an answer later is
    /// better than a 503 the provider never retries).
    async fn read_within(
        &self,
        pk: &str,
        sk: &'static str,
        (within, alone): (Duration, Duration),
        cache: bool,
    ) -> Result<Option<Item>, StoreError> {
        if let Some(item) = self.cache.get(pk) {
            return Ok(Some(item));
        }
        let bound = match self.cache.get_recent(pk, OUTAGE_GRACE) {
            Some(_) => within,
            None => alone,
        };
        let failed = match tokio::time::timeout(bound, self.batch_get(&[(pk, sk)])).await {
            Ok(Ok(items)) => {
                let item = items.into_iter().next();
                if let (Some(item), true) = (&item, cache) {
                    self.cache.put(pk.to_owned(), item.clone());
                }
                return Ok(item);
            }
            Ok(Err(e @ StoreError::Internal(_))) => return Err(e),
            Ok(Err(e)) => e,
            Err(_) => StoreError::Unavailable(format!("the directory did not answer within {bound:?}")),
        };
        match self.cache.get_recent(pk, OUTAGE_GRACE) {
            Some(item) => {
                tracing::warn!(error = %failed, "directory unreadable; an item read in the last minutes used");
                Ok(Some(item))
            }
            None => Err(failed),
        }
    }

    /// [`Directory::agent`] for a provider's webhook: read as [`Directory::read_within`].
    pub async fn agent_within(
        &self,
        agent: AgentRef<'_>,
        workspace_id: u64,
        within: Duration,
    ) -> Result<Option<Agent>, StoreError> {
        // An agent unreadable now holds its report (`calls::held`): no longer wait.
        let item = self.read_within(&agent.pk(), AGENT_SK, (within, within), false).await?;
        let lookup = Lookup { agent: item, ..Lookup::default() };
        Ok(self.authorize(&lookup, workspace_id).ok())
    }

    /// The looked-up agent, if it belongs to `workspace_id` (see [`Lookup::authorize`]);
    /// only then is it cached.
    pub fn authorize(&self, lookup: &Lookup, workspace_id: u64) -> Result<Agent, Denied> {
        let agent = lookup.authorize(workspace_id)?;
        if let Some(item) = &lookup.agent {
            if let Some(pk) = field_s(item, "pk") {
                self.cache.put(pk.to_owned(), item.clone());
            }
        }
        Ok(agent)
    }

    /// The agent `agent` of `workspace_id` (from the cache, else one read): to name a
    /// call's agent in an answer, or find the one a listing asks for.
    pub async fn agent(&self, agent: AgentRef<'_>, workspace_id: u64) -> Result<Option<Agent>, StoreError> {
        let key = agent.pk();
        let lookup = Lookup {
            agent: self.read(std::iter::once((key.as_str(), AGENT_SK)), Recent::Refused).await?.remove(&key),
            ..Lookup::default()
        };
        Ok(self.authorize(&lookup, workspace_id).ok())
    }

    /// Counts one request of `workspace_id` against its `budget` (sends, or reads), each the
    /// workspace's own limit (`callctl workspace limit`), else `default_limit`. The workspace item comes from
    /// `lookup` (operation B reads it with the credential), the cache, or one read made
    /// alongside the count's write; it is cached only here, once the caller was
    /// authorised for the workspace. A limit that cannot be read is the default.
    pub async fn count_request(
        &self,
        lookup: &Lookup,
        workspace_id: u64,
        budget: Budget,
        default_limit: u32,
    ) -> Admission {
        let known = self.known_workspace(lookup, workspace_id);
        let limit = self.limit_of(known, workspace_id, default_limit);
        self.limiter.count(workspace_id, budget, limit).await
    }

    /// Counts one trace export of `workspace_id` against its budget of `limit` a second
    /// (traces have their own, apart from sends and reads; a workspace's own limit is its
    /// sends'). Over it: refused (`Limited`); a counter that cannot be written admits it.
    pub async fn count_traces(&self, workspace_id: u64, limit: u32) -> Admission {
        self.limiter.count(workspace_id, Budget::Traces, std::future::ready(limit)).await
    }

    /// Takes one send of `workspace_id`'s budget if it has room this second, counting
    /// nothing when it has none ([`Limiter::take`]): the committers of paced calls. An error
    /// when the counter cannot be written.
    pub async fn take_send(&self, lookup: &Lookup, workspace_id: u64, default_limit: u32) -> Result<bool, StoreError> {
        let known = self.known_workspace(lookup, workspace_id);
        let limit = self.limit_of(known, workspace_id, default_limit).await;
        self.limiter.take(workspace_id, Budget::Sends, 1, limit).await
    }

    /// Takes `requests` to the policy's model of personal data from `workspace_id`'s budget
    /// of `limit` a second, if it has room for them all ([`Limiter::take`]).
    pub async fn take_model(&self, workspace_id: u64, requests: u32, limit: u32) -> Result<bool, StoreError> {
        self.limiter.take(workspace_id, Budget::Model, requests, limit).await
    }

    /// The workspace's item from `lookup`, else from the cache.
    fn known_workspace(&self, lookup: &Lookup, workspace_id: u64) -> Option<Item> {
        let pk = workspace_pk(workspace_id);
        // Cached now, even when the count needs no limit (a workspace's first request of a
        // second): during a directory outage a recent item stands in for a sender.
        // (Only an item read now is cached: one put back from the cache would never expire
        // on a busy instance, and a changed limit would never be seen.)
        let read = lookup.workspace.as_ref().filter(|w| field_s(w, "pk") == Some(pk.as_str())).cloned();
        if let Some(item) = &read {
            self.cache.put(pk.clone(), item.clone());
        }
        read.or_else(|| self.cache.get(&pk))
    }

    /// The workspace's limit: its own, else `default_limit`; from `known`, else one read
    /// (cached). A limit that cannot be read is the default.
    async fn limit_of(&self, known: Option<Item>, workspace_id: u64, default_limit: u32) -> u32 {
        let pk = workspace_pk(workspace_id);
        let item = match known {
            Some(item) => Some(item),
            None => match self.read(std::iter::once((pk.as_str(), WORKSPACE_SK)), Recent::Refused).await {
                Ok(mut found) => {
                    let item = found.remove(&pk);
                    if let Some(item) = &item {
                        self.cache.put(pk.clone(), item.clone());
                    }
                    item
                }
                Err(e) => {
                    tracing::warn!(error = %e, workspace_id, "workspace limit unreadable; default used");
                    None
                }
            },
        };
        let limit = item.as_ref().and_then(|i| field_u64(i, "rate_limit"));
        limit.map_or(default_limit, |l| l.clamp(1, u64::from(limits::MAX_LIMIT)) as u32)
    }

    /// Charges a read of `workspace_id` that answered `bytes` its units beyond the one
    /// counted when it came in ([`limits::READ_UNIT_BYTES`] each): reported with the
    /// workspace's next read on this instance, so no write of its own.
    pub fn charge_read(&self, workspace_id: u64, bytes: usize) {
        let units = bytes.div_ceil(limits::READ_UNIT_BYTES).saturating_sub(1);
        if units > 0 {
            self.limiter.charge(workspace_id, Budget::Reads, u32::try_from(units).unwrap_or(u32::MAX));
        }
    }

    async fn batch_get(&self, wanted: &[(&str, &str)]) -> Result<Vec<Item>, StoreError> {
        let mut keys = KeysAndAttributes::builder();
        for (pk, sk) in wanted {
            keys = keys.keys(HashMap::from([("pk".to_owned(), s(*pk)), ("sk".to_owned(), s(*sk))]));
        }
        let mut request = Some(keys.consistent_read(true).build()?);
        let mut items = Vec::new();
        // Unprocessed keys come back under throttling; read them again a few times.
        for attempt in 0..5u64 {
            let Some(keys) = request.take() else { break };
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
            }
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, keys)
                .send()
                .await
                .map_err(StoreError::from_sdk)?;
            if let Some(mut responses) = out.responses {
                items.extend(responses.remove(&self.table).unwrap_or_default());
            }
            request = out.unprocessed_keys.and_then(|mut u| u.remove(&self.table)).filter(|k| !k.keys().is_empty());
        }
        if request.is_some() {
            return Err(StoreError::Unavailable("directory reads stayed unprocessed".into()));
        }
        Ok(items)
    }

    async fn get(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk))
            .key("sk", s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(out.item)
    }
}

fn now_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}
