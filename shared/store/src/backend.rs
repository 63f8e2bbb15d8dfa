//! What a function instance (or `callctl`) holds across requests: configuration, the two
//! tables and the frames' bucket.

use std::sync::OnceLock;
use std::time::Duration;

use crate::calls::{Frames, Store};
use crate::config::{Config, ConfigError, EnvClient};
use crate::directory::sealing::Sealer;
use crate::directory::Directory;

/// Built once per instance, in `main`, and passed to every request.
pub struct Backend {
    pub config: Config,
    /// How long a send waits for DynamoDB on this instance.
    pub patience: crate::patience::Patience,
    tables: OnceLock<Tables>,
    client: Source,
    /// The KMS client that opens webhook secrets, when given one (else, with settings from
    /// the environment, it is built on first use: most requests never open a secret).
    kms: Option<aws_sdk_kms::Client>,
    /// The SQS client, when given one (callctl's); else built from the environment.
    sqs: Option<aws_sdk_sqs::Client>,
    sealer: OnceLock<Option<Sealer>>,
    /// The workspaces' model of personal data (Comprehend), built on first use: most
    /// workspaces have none.
    comprehend: OnceLock<Option<aws_sdk_comprehend::Client>>,
}

struct Tables {
    store: Store,
    directory: Directory,
}

/// Where the DynamoDB and S3 clients come from.
enum Source {
    Ready(aws_sdk_dynamodb::Client, aws_sdk_s3::Client),
    /// Settings read from the environment at start-up; the client (and its TLS trust
    /// store, a few milliseconds of certificate parsing) is built on first use.
    Env(EnvClient),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").field("config", &self.config).finish_non_exhaustive()
    }
}

/// Calls past retention erased at once, and found per listing read.
pub const RETENTION_PARALLEL: usize = 4;
const RETENTION_BATCH: usize = 100;
/// How long an erase started before the sweep's deadline may run past it.
const ERASE_OVERRUN: Duration = Duration::from_secs(5);

/// What a retention sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RetentionSweep {
    /// Workspaces with a retention.
    pub workspaces: usize,
    /// Calls erased.
    pub erased: usize,
    /// Erases that failed (tried again by the next run).
    pub failed: usize,
    /// Heads and revisions whose raw body was removed (`raw_retention_days`).
    pub raw_removed: usize,
    /// The deadline came first: the next run goes on.
    pub unfinished: bool,
}

impl Backend {
    /// An instance over existing DynamoDB and S3 clients.
    pub fn new(config: Config, client: aws_sdk_dynamodb::Client, s3: aws_sdk_s3::Client) -> Self {
        let client = Source::Ready(client, s3);
        Backend {
            config,
            tables: OnceLock::new(),
            client,
            patience: Default::default(),
            kms: None,
            sqs: None,
            comprehend: OnceLock::new(),
            sealer: OnceLock::new(),
        }
    }

    /// This instance, sealing webhook secrets with `kms` (the key of `HOOK_KEY_ID`).
    pub fn with_kms(mut self, kms: aws_sdk_kms::Client) -> Self {
        self.kms = Some(kms);
        self
    }

    /// This instance, queueing with `sqs`.
    pub fn with_sqs(mut self, sqs: aws_sdk_sqs::Client) -> Self {
        self.sqs = Some(sqs);
        self
    }

    /// An instance over `config`, with the client's settings read from the environment. The
    /// DynamoDB client is built on first use (or by [`Backend::warm_up`]).
    pub fn from_env(config: Config) -> Result<Backend, ConfigError> {
        let client = Source::Env(EnvClient::from_env()?);
        Ok(Backend {
            config,
            tables: OnceLock::new(),
            client,
            patience: Default::default(),
            kms: None,
            sqs: None,
            comprehend: OnceLock::new(),
            sealer: OnceLock::new(),
        })
    }

    fn tables(&self) -> &Tables {
        self.tables.get_or_init(|| {
            let (client, s3) = match &self.client {
                Source::Ready(client, s3) => (client.clone(), s3.clone()),
                Source::Env(env) => (env.client(), env.s3_client()),
            };
            let frames = Frames::new(s3, self.config.frames_bucket.clone());
            Tables {
                store: Store::new(client.clone(), frames, self.config.calls_table.clone(), self.config.id_block_size)
                    .with_day(self.config.retention_day.clone()),
                directory: Directory::new(client, self.config.directory_table.clone(), self.config.cache_ttl),
            }
        })
    }

    /// An SQS client with the instance's settings from the environment; `None` for an
    /// instance over given clients (tests), which is never fed by a queue.
    pub fn sqs_client(&self) -> Option<aws_sdk_sqs::Client> {
        if let Some(sqs) = &self.sqs {
            return Some(sqs.clone());
        }
        match &self.client {
            Source::Env(env) => Some(env.sqs_client()),
            Source::Ready(..) => None,
        }
    }

    /// The Calls table.
    pub fn store(&self) -> &Store {
        &self.tables().store
    }

    /// The Directory table.
    pub fn directory(&self) -> &Directory {
        &self.tables().directory
    }

    /// The Comprehend client, from the environment's settings (`None` for an instance over
    /// clients given to it: the tests').
    pub fn comprehend(&self) -> Option<&aws_sdk_comprehend::Client> {
        self.comprehend
            .get_or_init(|| match &self.client {
                Source::Env(env) => Some(env.comprehend_client()),
                Source::Ready(..) => None,
            })
            .as_ref()
    }

    /// What seals and opens webhook secrets; `None` without a KMS client.
    pub fn sealer(&self) -> Option<&Sealer> {
        self.sealer
            .get_or_init(|| {
                let kms = match (&self.kms, &self.client) {
                    (Some(kms), _) => Some(kms.clone()),
                    (None, Source::Env(env)) => Some(env.kms_client()),
                    (None, Source::Ready(..)) => None,
                };
                kms.map(|kms| Sealer::new(kms, self.config.hook_key_id.clone()))
            })
            .as_ref()
    }

    /// Commits the pending submissions received before `before_ms` (the committer's sweep),
    /// the paced ones at the rate of their workspace's send budget.
    pub async fn sweep_pending(
        &self,
        before_ms: u64,
        deadline: std::time::Instant,
    ) -> Result<crate::calls::pending::Sweep, crate::calls::StoreError> {
        let lookup = crate::directory::Lookup::default();
        let budget = self.send_budget(&lookup);
        self.store().sweep_pending(before_ms, deadline, &budget).await
    }

    /// Erases the calls past their workspace's retention (`calls::retention`), each through
    /// the erase path, [`RETENTION_PARALLEL`] at a time, starting none after `deadline`.
    /// `now_ms` is the time to count from (tests move it ahead); a day is 86,400,000 ms but
    /// where the local stack shortens it (`config::RetentionDay`).
    pub async fn sweep_retention(
        &self,
        now_ms: u64,
        deadline: std::time::Instant,
    ) -> Result<RetentionSweep, crate::calls::StoreError> {
        let mut sweep = RetentionSweep::default();
        let mut workspaces = self.directory().retention_policies().await?;
        // Each run starts at a workspace drawn at random, so one with a long history to
        // erase does not hold the others off run after run. (By the minute, every run of a
        // 15-minute schedule started at the same one of 3, 5 or 15 workspaces: a reviewer's
        // find.)
        if !workspaces.is_empty() {
            use std::hash::BuildHasher;
            let drawn = std::collections::hash_map::RandomState::new().hash_one(now_ms);
            let start = (drawn % workspaces.len() as u64) as usize;
            workspaces.rotate_left(start);
        }
        for (workspace_id, policy) in workspaces {
            sweep.workspaces += 1;
            if let Some(days) = policy.retention_days {
                if !self.erase_expired(workspace_id, days, now_ms, deadline, &mut sweep).await? {
                    return Ok(sweep);
                }
            }
            // Raw bodies after the calls: a call past both is erased, not rewritten first.
            if let Some(days) = policy.raw_retention_days {
                match self.sweep_raw(workspace_id, days, now_ms, deadline).await {
                    Ok(raw) => {
                        sweep.raw_removed += raw.rewritten;
                        sweep.failed += raw.failed;
                        if raw.unfinished && raw.failed == 0 {
                            sweep.unfinished = true;
                            return Ok(sweep);
                        }
                    }
                    // This workspace's raw bodies wait for the next run; the others go on.
                    Err(e) => {
                        tracing::warn!(workspace_id, error = %e, "raw bodies past retention not removed yet");
                        sweep.failed += 1;
                    }
                }
            }
        }
        Ok(sweep)
    }

    /// Erases `workspace_id`'s calls created more than `days` ago; answers false when the
    /// deadline came first.
    async fn erase_expired(
        &self,
        workspace_id: u64,
        days: u32,
        now_ms: u64,
        deadline: std::time::Instant,
        sweep: &mut RetentionSweep,
    ) -> Result<bool, crate::calls::StoreError> {
        use futures_util::StreamExt;
        let cutoff = now_ms.saturating_sub(u64::from(days) * self.config.retention_day.ms(workspace_id));
        loop {
            if std::time::Instant::now() >= deadline {
                sweep.unfinished = true;
                return Ok(false);
            }
            let expired = self.store().expired(workspace_id, cutoff, RETENTION_BATCH).await?;
            if expired.is_empty() {
                break;
            }
            let erases = futures_util::stream::iter(expired.iter())
                .map(|c| async move {
                    // Cut at the run's end (before the call is buried: its clean-up is
                    // finished): an erase cut short is finished by the next.
                    let by = tokio::time::Instant::from_std(deadline) + ERASE_OVERRUN;
                    self.store().erase_everything_until(workspace_id, &c.call_id, c.id, Some(by)).await
                })
                .buffer_unordered(RETENTION_PARALLEL)
                .collect::<Vec<_>>()
                .await;
            let failed = erases.iter().filter(|e| e.is_err()).count();
            sweep.erased += erases.len() - failed;
            sweep.failed += failed;
            if failed > 0 {
                // Left for the next run (an erase cut short is finished by the next one).
                tracing::warn!(workspace_id, failed, "calls past retention not erased yet");
                break;
            }
        }
        Ok(true)
    }

    /// Moves the held reports whose agent now exists to `pending/` (`calls::held`): the hook
    /// read afresh (a default given a moment ago counts), then the agent the report named,
    /// else the hook's default. A hook revoked since still has its reports committed: each
    /// was signed when it came.
    pub async fn release_held(
        &self,
        deadline: std::time::Instant,
    ) -> Result<crate::calls::held::Release, crate::calls::StoreError> {
        let directory = self.directory();
        self.store()
            .release_held(deadline, |held| async move {
                let hook = directory.hook(&held.hook_id).await?;
                let Some(hook) = hook.filter(|h| h.workspace_id == held.workspace_id) else { return Ok(None) };
                let agent = directory.report_agent(&hook, held.named.as_deref(), Duration::from_secs(5)).await?;
                Ok(agent.map(|a| a.id))
            })
            .await
    }

    /// Commits the pending submission at `key` that S3 announced through the queue (and
    /// the older ones of its call), unless it is paced and its workspace is over its send
    /// budget.
    pub async fn commit_notified(
        &self,
        key: &str,
        deadline: std::time::Instant,
    ) -> Result<crate::calls::pending::Notified, crate::calls::StoreError> {
        let lookup = crate::directory::Lookup::default();
        let budget = self.send_budget(&lookup);
        self.store().commit_notified(key, deadline, &budget).await
    }

    /// Whether a workspace may commit a call now: one send of its budget, taken only if the
    /// budget has room (a refused commit counts nothing).
    fn send_budget<'a>(
        &'a self,
        lookup: &'a crate::directory::Lookup,
    ) -> impl Fn(u64) -> futures_util::future::BoxFuture<'a, Result<bool, crate::calls::StoreError>> + Sync + 'a {
        move |workspace_id: u64| -> futures_util::future::BoxFuture<'a, Result<bool, crate::calls::StoreError>> {
            let default = self.config.rate_limit;
            Box::pin(async move { self.directory().take_send(lookup, workspace_id, default).await })
        }
    }

    /// Opens the DynamoDB connection (DNS, TLS) so the first request does not pay for it.
    /// Bounded and never fatal.
    pub async fn warm_up(&self) {
        let read = self.directory().lookup("warm-up", None);
        match tokio::time::timeout(Duration::from_secs(2), read).await {
            Ok(Ok(_)) => tracing::debug!("warm-up done"),
            Ok(Err(e)) => tracing::warn!(error = %e, "warm-up failed"),
            Err(_) => tracing::warn!("warm-up timed out"),
        }
    }
}
