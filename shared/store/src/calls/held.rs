//! Held reports: a provider's report whose signature checked out but whose agent is not
//! known yet (the payload names no agent of the workspace and the hook has no default, or
//! the directory could not be read in time). A provider does not retry a 4xx or, for Vapi
//! and ElevenLabs, anything at all, so the report is kept, answered 200, and committed once
//! its agent exists.
//!
//! Key: `held/<workspace>/<sha256 of the provider call id, 32 hex>/<received ms>-<token>`, the
//! layout of pending submissions ([`super::pending`]), so an erase finds a call's held
//! reports as it finds its pending ones. The object is the body as received (decompressed);
//! its metadata: workspace, operation, provider call id (hex), the hook, and the remote
//! agent id the payload named (hex), if any.
//!
//! The committer's sweep ([`Store::release_held`]) looks for each held report's agent: the
//! workspace's agent with the named remote id, else the hook's default agent. Found, the
//! report is moved to `pending/` under the same name (its submission's identity and
//! received time unchanged), where the queue and the same sweep commit it. A report held
//! [`HELD_FOR`] is moved to `failed/` with an error an alarm watches.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::pending::{copy_key, FAILED_PREFIX, PACED, PREFIX};
use super::{now_ms, Receipt, Store, StoreError};
use call_ingest_core::call::{hex, Operation};

/// Where held reports live in the frames' bucket.
pub const HELD_PREFIX: &str = "held/";

/// How long a report is held before it is set aside under `failed/`.
pub const HELD_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

/// A report to hold: whose it is, and what named its agent.
#[derive(Debug, Clone, Copy)]
pub struct Hold<'a> {
    pub workspace_id: u64,
    pub hook_id: &'a str,
    /// The remote agent id the payload named.
    pub named: Option<&'a str>,
    pub operation: Operation,
    pub call_id: &'a str,
}

/// A held report, as listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Held {
    pub key: String,
    pub workspace_id: u64,
    pub hook_id: String,
    pub named: Option<String>,
    pub call_id: String,
    /// The operation's key (`Operation::key`).
    pub operation: String,
    /// When its request arrived (epoch ms).
    pub received_ms: u64,
    /// What it holds: the body, or its policy's document (`pending::Form`).
    pub form: super::pending::Form,
}

/// What a release of the held reports did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Release {
    /// Moved to `pending/`: their agent was found.
    pub released: usize,
    /// Still without an agent.
    pub held: usize,
    /// Held past [`HELD_FOR`]: set aside under `failed/`.
    pub expired: usize,
    /// Moved to `pending/` while their call was being erased: deleted, as the erase
    /// would have (it may have listed `pending/` before they were there).
    pub erased: usize,
    /// Not looked at: storage failed, or the release ran out of time.
    pub left: usize,
}

impl std::ops::AddAssign for Release {
    fn add_assign(&mut self, other: Release) {
        self.released += other.released;
        self.held += other.held;
        self.expired += other.expired;
        self.erased += other.erased;
        self.left += other.left;
    }
}

/// Held reports' metadata, read once per instance (an object's metadata never changes), so
/// a release each minute costs a listing, not a request per report.
#[derive(Debug, Default)]
pub(super) struct HeldIndex(Mutex<HashMap<String, Held>>);

/// The index holds at most this many reports' metadata.
const MAX_INDEXED: usize = 100_000;

impl Store {
    /// Keeps a report received at `receipt` whose agent is not known; answers its key.
    pub async fn put_held(&self, hold: Hold<'_>, raw: &[u8], receipt: &Receipt) -> Result<String, StoreError> {
        self.put_held_as(hold, raw, receipt, super::pending::Form::Body).await
    }

    /// [`Store::put_held`] of a copy in `form` (`pending::Form`).
    pub async fn put_held_as(
        &self,
        hold: Hold<'_>,
        raw: &[u8],
        receipt: &Receipt,
        form: super::pending::Form,
    ) -> Result<String, StoreError> {
        let mut metadata = HashMap::from([
            ("workspace".to_owned(), hold.workspace_id.to_string()),
            ("operation".to_owned(), hold.operation.key()),
            ("call-id".to_owned(), hex(hold.call_id.as_bytes())),
            ("hook".to_owned(), hold.hook_id.to_owned()),
        ]);
        if let Some(named) = hold.named {
            metadata.insert("named".to_owned(), hex(named.as_bytes()));
        }
        form.mark(&mut metadata);
        self.put_copy(copy_key(HELD_PREFIX, hold.workspace_id, hold.call_id, receipt), raw, metadata).await
    }

    /// The reports held for `workspace_id`, oldest first per call.
    pub async fn held(&self, workspace_id: u64) -> Result<Vec<Held>, StoreError> {
        let keys = self.keys_under(&format!("{HELD_PREFIX}{workspace_id}/")).await?;
        let found = super::bounded(keys.iter().map(|key| self.held_at(key))).await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// The held report at `key` (its metadata from the index, else a HEAD); `None` when it
    /// is gone or its metadata is not ours.
    async fn held_at(&self, key: &str) -> Result<Option<Held>, StoreError> {
        if let Some(held) = self.held_index.0.lock().unwrap_or_else(|p| p.into_inner()).get(key) {
            return Ok(Some(held.clone()));
        }
        let head = match self.frames.client().head_object().bucket(self.frames.bucket()).key(key).send().await {
            Ok(head) => head,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => return Ok(None),
            Err(e) => return Err(StoreError::from_sdk(e)),
        };
        let metadata = head.metadata.unwrap_or_default();
        let text = |name: &str| super::pending::unhex(metadata.get(name)?);
        let held = (|| {
            Some(Held {
                key: key.to_owned(),
                workspace_id: metadata.get("workspace")?.parse().ok()?,
                hook_id: metadata.get("hook")?.clone(),
                named: text("named"),
                call_id: text("call-id")?,
                operation: metadata.get("operation")?.clone(),
                received_ms: super::pending::receipt_of(key)?.received_ms,
                form: super::pending::Form::of(&metadata),
            })
        })();
        if let Some(held) = &held {
            // Full, the index keeps what it has (a release then pays a HEAD for the others).
            let mut index = self.held_index.0.lock().unwrap_or_else(|p| p.into_inner());
            if index.len() < MAX_INDEXED {
                index.insert(key.to_owned(), held.clone());
            }
        }
        Ok(held)
    }

    fn forget_held(&self, key: &str) {
        self.held_index.0.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Moves each held report whose agent `agent_of` now finds to `pending/` (same name,
    /// the agent in its metadata), and sets aside under `failed/` those held past
    /// [`HELD_FOR`]. `agent_of(held)` answers the agent's id, `None` while there is none.
    /// Stops starting work at `deadline`.
    ///
    /// A call's reports are taken in the order they were received (one still without an
    /// agent does not hold up the next), [`RELEASE_PARALLEL`] calls at once: an outage of the directory holds every report it meets, and one at a time
    /// (three S3 requests each) a release of 500 took 80 s, past the minute in which a
    /// report kept during an outage must be committed once it ends.
    pub async fn release_held<F, Fut>(&self, deadline: std::time::Instant, agent_of: F) -> Result<Release, StoreError>
    where
        F: Fn(Held) -> Fut,
        Fut: std::future::Future<Output = Result<Option<String>, StoreError>>,
    {
        use futures_util::stream::{self, StreamExt};
        // One lookup per hook and named agent; reports that need one at once wait for it.
        let agents = Agents::default();
        let keys = self.keys_under(HELD_PREFIX).await?;
        let calls = super::pending::by_call(keys.iter().map(String::as_str));
        let released: Vec<Release> = stream::iter(calls)
            .map(|keys| self.release_call(keys, deadline, &agents, &agent_of))
            .buffer_unordered(RELEASE_PARALLEL)
            .collect()
            .await;
        let mut release = Release::default();
        for r in released {
            release += r;
        }
        Ok(release)
    }

    /// Releases one call's held reports, oldest first; the first that fails leaves the
    /// rest for the next release (so that they stay in order).
    async fn release_call<F, Fut>(
        &self,
        keys: Vec<&str>,
        deadline: std::time::Instant,
        agents: &Agents,
        agent_of: &F,
    ) -> Release
    where
        F: Fn(Held) -> Fut,
        Fut: std::future::Future<Output = Result<Option<String>, StoreError>>,
    {
        let mut release = Release::default();
        for (i, key) in keys.iter().enumerate() {
            match self.release_one(key, deadline, agents, agent_of).await {
                Ok(Some(Fate::Pending)) => release.released += 1,
                Ok(Some(Fate::Held)) => release.held += 1,
                Ok(Some(Fate::Expired)) => release.expired += 1,
                Ok(Some(Fate::Erased)) => release.erased += 1,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(key, error = %e, "held report not released; next sweep");
                    release.left += keys.len() - i;
                    break;
                }
            }
        }
        release
    }

    /// Releases the held report at `key`, each metadata read (a HEAD when not indexed yet)
    /// and lookup within `deadline`: a release never holds up the sweep after it, and the
    /// index it builds makes the next one cheaper. `None`: it is gone.
    async fn release_one<F, Fut>(
        &self,
        key: &str,
        deadline: std::time::Instant,
        agents: &Agents,
        agent_of: &F,
    ) -> Result<Option<Fate>, StoreError>
    where
        F: Fn(Held) -> Fut,
        Fut: std::future::Future<Output = Result<Option<String>, StoreError>>,
    {
        let late = || StoreError::Unavailable("the release ran out of time".into());
        let by = tokio::time::Instant::from_std(deadline);
        if by <= tokio::time::Instant::now() {
            return Err(late());
        }
        let Some(held) = tokio::time::timeout_at(by, self.held_at(key)).await.map_err(|_| late())?? else {
            return Ok(None);
        };
        if held.received_ms + HELD_FOR.as_millis() as u64 <= now_ms() {
            tracing::error!(event = "held_expired", key = held.key, "held report found no agent within 30 days");
            self.frames.move_object(&held.key, &format!("{FAILED_PREFIX}{}", strip(&held.key)), None).await?;
            self.forget_held(&held.key);
            return Ok(Some(Fate::Expired));
        }
        let cell = {
            let mut agents = agents.0.lock().unwrap_or_else(|p| p.into_inner());
            agents.entry((held.hook_id.clone(), held.named.clone())).or_default().clone()
        };
        // A failed lookup is kept too: the reports waiting on it are left for the next
        // release at once, not each looked up again in turn (an outage would hold them up
        // one lookup after another, past the deadline).
        let lookup =
            || async { tokio::time::timeout_at(by, agent_of(held.clone())).await.unwrap_or_else(|_| Err(late())) };
        let found = tokio::time::timeout_at(by, cell.get_or_init(lookup)).await.map_err(|_| late())?;
        let Some(agent) = found.clone()? else {
            return Ok(Some(Fate::Held));
        };
        let mut metadata = HashMap::from([
            ("workspace".to_owned(), held.workspace_id.to_string()),
            ("agent".to_owned(), hex(agent.as_bytes())),
            ("call-id".to_owned(), hex(held.call_id.as_bytes())),
            ("operation".to_owned(), held.operation.clone()),
            (super::pending::SINCE.to_owned(), now_ms().to_string()),
        ]);
        held.form.mark(&mut metadata);
        // Paced: a release of many reports is committed at the workspace's rate.
        let pending = format!("{PREFIX}{}{PACED}", strip(&held.key));
        // Looked at even when the move failed part-way (copied, not deleted from held/).
        let moved = self.frames.move_object(&held.key, &pending, Some(metadata)).await;
        // An erase of its call marks the head, then lists `pending/` and `held/`: it may have
        // listed `pending/` before the copy was there, and `held/` after the report left.
        // The head read after the copy was written shows that erase's mark (or its
        // tombstone), so the copy goes as the erase would have taken it; a mark written
        // after this read comes before the erase's listing, which then finds the copy.
        // Read again while the deadline allows: a failed read would leave the copy to its
        // commit, erased content outliving the erase's answer until then.
        let mut pause = Duration::from_millis(100);
        let erased = loop {
            match self.erased_after(held.workspace_id, &held.call_id, held.received_ms).await {
                Err(StoreError::Unavailable(_)) if tokio::time::Instant::now() + pause < by => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                read => break read,
            }
        };
        if *erased.as_ref().unwrap_or(&false) {
            self.frames.delete(&pending).await?;
        }
        moved?;
        self.forget_held(&held.key);
        Ok(Some(if erased? { Fate::Erased } else { Fate::Pending }))
    }

    /// Whether call `call_id` of `workspace_id` is being erased, or was, by an erase that
    /// takes a copy received at `received_ms` (its boundary is at or after it).
    async fn erased_after(&self, workspace_id: u64, call_id: &str, received_ms: u64) -> Result<bool, StoreError> {
        let head = self.item(&super::item::call_pk(workspace_id, call_id), super::item::HEAD).await?;
        Ok(head.is_some_and(|h| {
            let marked = super::item::get_u64(&h, super::item::ERASING).is_some_and(|mark| mark >= received_ms);
            marked || super::item::erased_at(&h) >= received_ms
        }))
    }
}

/// Calls whose held reports one release works on at once.
const RELEASE_PARALLEL: usize = 16;

/// What became of one held report.
enum Fate {
    /// Moved to `pending/`.
    Pending,
    Held,
    Expired,
    /// Moved, then deleted: its call is being erased.
    Erased,
}

/// A release's lookups: the agent of each hook and named remote id, looked up once.
#[derive(Default)]
struct Agents(Mutex<HashMap<(String, Option<String>), AgentCell>>);

/// One lookup's answer, once made: the agent's id, `None` while there is none; or why it
/// could not be read.
type AgentCell = std::sync::Arc<tokio::sync::OnceCell<Result<Option<String>, StoreError>>>;

/// A key's name below its prefix (`<workspace>/<call>/<received>-<token>`).
fn strip(key: &str) -> &str {
    key.split_once('/').map_or(key, |(_, rest)| rest)
}
