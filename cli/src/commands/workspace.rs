//! `callctl workspace`: creating and showing workspaces.

use anyhow::{anyhow, bail};
use call_ingest_core::privacy::{Kind, Kinds, Language, PiiModel, Storage};
use call_ingest_store::directory::admin::Workspace;
use call_ingest_store::directory::limits::MAX_LIMIT;
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use crate::output::{fields, Output};

/// Longest workspace name accepted: a label for people, not a document.
const MAX_NAME_CHARS: usize = 200;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates a workspace; ids are handed out in order, from 1.
    Create {
        /// A name for people (1 to 200 characters).
        #[arg(long)]
        name: String,
    },
    /// Shows a workspace (exits 1 if there is none with this id).
    Get {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        id: u64,
    },
    /// Sets how many requests per second the workspace may make (both endpoints together);
    /// more are answered 429. Instances see the change within a minute.
    Limit {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        id: u64,
        /// Requests per second, 1 to 1000.
        #[arg(long, conflicts_with = "default", required_unless_present = "default",
              value_parser = clap::value_parser!(u32).range(1..=MAX_LIMIT as i64))]
        per_second: Option<u32>,
        /// Back to the functions' default (RATE_LIMIT_PER_SECOND, 20 unless set).
        #[arg(long)]
        default: bool,
    },
    /// Sets the workspace's data policy: what of its calls is stored, and for how long.
    /// It applies to calls received a minute after the change (instances cache it); calls
    /// stored before keep the policy they were stored under. Options left out keep their
    /// current value.
    Policy {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        id: u64,
        /// everything (the request body byte for byte), redacted (personal data replaced
        /// before anything is stored), or metadata_only (times, status, cost, counts).
        #[arg(long)]
        storage: Option<String>,
        /// Erase calls this many days after they were created (1 to 3650); `none` keeps them.
        #[arg(long)]
        retention_days: Option<String>,
        /// Remove raw bodies this many days after (at most retention-days); `none` keeps them.
        #[arg(long)]
        raw_retention_days: Option<String>,
        /// Kinds redacted under `redacted`, comma-separated, or `all` (every kind the rules
        /// find): phone_number, email, credit_card, ssn, iban, date_of_birth, and with a
        /// model person_name, address.
        #[arg(long)]
        pii_entities: Option<String>,
        /// A model besides the rules, for names and street addresses: aws_comprehend (AWS
        /// Comprehend's DetectPiiEntities, billed per call: see the README), or none (the
        /// default). Setting it adds person_name and address to the kinds unless
        /// --pii-entities names them.
        #[arg(long)]
        pii_model: Option<String>,
        /// The language the model reads the turns in: en (the default) or es.
        #[arg(long)]
        pii_language: Option<String>,
    },
    /// Applies the workspace's policy (as it is now) to the calls it stored before: calls
    /// past retention-days are erased, the others redacted or reduced to their metadata,
    /// and raw bodies past raw-retention-days removed. Resumable: it keeps where it stands
    /// after every page of calls, and a run stopped (or cut by --max-calls) goes on from
    /// there when started again. Progress goes to stderr.
    ApplyPolicy {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        id: u64,
        /// Start again from the newest call, not from where the last run stopped.
        #[arg(long)]
        restart: bool,
        /// Stop after this many calls (the next run goes on).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        max_calls: Option<u64>,
    },
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let workspace = match self {
            Command::ApplyPolicy { id, restart, max_calls } => {
                require(backend, id).await?;
                return apply_policy(backend, out, id, restart, max_calls).await;
            }
            Command::Create { name } => {
                let name = name.trim();
                if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
                    bail!("the workspace name must be 1 to {MAX_NAME_CHARS} characters");
                }
                backend.directory().create_workspace(name).await?
            }
            Command::Get { id } => require(backend, id).await?,
            Command::Limit { id, per_second, .. } => backend.directory().set_rate_limit(id, per_second).await?,
            Command::Policy {
                id,
                storage,
                retention_days,
                raw_retention_days,
                pii_entities,
                pii_model,
                pii_language,
            } => {
                let mut policy = require(backend, id).await?.policy;
                if let Some(name) = storage {
                    policy.storage = Storage::parse(&name)
                        .ok_or_else(|| anyhow!("--storage must be everything, redacted or metadata_only"))?;
                }
                if let Some(days) = retention_days {
                    policy.retention_days = days_or_none(&days, "--retention-days")?;
                }
                if let Some(days) = raw_retention_days {
                    policy.raw_retention_days = days_or_none(&days, "--raw-retention-days")?;
                }
                let language = match pii_language.as_deref() {
                    None => policy.pii_model.map_or(Language::En, |m| m.language),
                    Some(name) => Language::parse(name).ok_or_else(|| anyhow!("--pii-language must be en or es"))?,
                };
                match pii_model.as_deref().map(str::trim) {
                    None => policy.pii_model = policy.pii_model.map(|_| PiiModel { language }),
                    Some("none") => policy.pii_model = None,
                    Some(PiiModel::NAME) => {
                        if policy.pii_model.is_none() && pii_entities.is_none() {
                            policy.pii_entities = policy.pii_entities.union(Kinds::of(Kind::MODEL));
                        }
                        policy.pii_model = Some(PiiModel { language });
                    }
                    Some(other) => bail!("--pii-model must be {} or none, not {other:?}", PiiModel::NAME),
                }
                if pii_language.is_some() && policy.pii_model.is_none() {
                    bail!("--pii-language needs a model (--pii-model {})", PiiModel::NAME);
                }
                if let Some(list) = pii_entities {
                    policy.pii_entities = Kinds::parse(&list).map_err(|e| anyhow!("--pii-entities: {e}"))?;
                }
                backend.directory().set_policy(id, policy, backend.sealer()).await?
            }
        };
        let limit = match workspace.rate_limit {
            Some(l) => format!("{l} requests per second"),
            None => format!("default ({} requests per second)", backend.config.rate_limit),
        };
        let p = &workspace.policy;
        let days = |d: Option<u32>| d.map_or_else(|| "kept".to_owned(), |d| format!("{d} days"));
        out.show(&json!(workspace), || {
            fields(&[
                ("workspace", workspace.id.to_string()),
                ("name", workspace.name.clone()),
                ("rate limit", limit),
                ("storage", p.storage.as_str().to_owned()),
                ("retention", days(p.retention_days)),
                ("raw retention", days(p.raw_retention_days)),
                ("pii entities", p.pii_entities.names().join(", ")),
                (
                    "pii model",
                    p.pii_model.map_or_else(
                        || "none (rules only)".to_owned(),
                        |m| format!("{} ({})", PiiModel::NAME, m.language.as_str()),
                    ),
                ),
            ])
        })?;
        Ok(())
    }
}

/// `callctl workspace apply-policy`: runs of 20 s, each followed by a progress line, until
/// the walk is finished or `max_calls` are gone through.
async fn apply_policy(
    backend: &Backend,
    out: &Output,
    id: u64,
    mut restart: bool,
    max_calls: Option<u64>,
) -> anyhow::Result<()> {
    let mut left = max_calls;
    let mut done = call_ingest_store::rewrites::Progress::default();
    loop {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let run = backend.apply_policy(id, restart, deadline, left).await?;
        restart = false;
        done.calls += run.calls;
        done.rewritten += run.rewritten;
        done.erased += run.erased;
        done.total = run.total;
        done.unfinished = run.unfinished;
        done.at_ms = run.at_ms;
        left = left.map(|l| l.saturating_sub(run.calls));
        let reached = run.at_ms.map_or_else(String::new, |ms| format!(", reached calls started at {ms} (epoch ms)"));
        eprintln!(
            "apply-policy: {} calls gone through ({} over every run), {} revisions rewritten, {} calls erased{reached}",
            done.calls, done.total, done.rewritten, done.erased
        );
        done.failed += run.failed;
        if run.failed > 0 {
            eprintln!("apply-policy: {} calls could not be done now (see the log); run it again to go on", run.failed);
            break;
        }
        if !run.unfinished || left == Some(0) {
            break;
        }
    }
    out.show(&json!(done), || {
        let state = match done.unfinished {
            true => "stopped: run it again to go on",
            false => "finished",
        };
        fields(&[
            ("calls", done.calls.to_string()),
            ("revisions rewritten", done.rewritten.to_string()),
            ("calls erased", done.erased.to_string()),
            ("apply-policy", state.to_owned()),
        ])
    })?;
    Ok(())
}

/// A number of days, or `none`.
fn days_or_none(text: &str, option: &str) -> anyhow::Result<Option<u32>> {
    match text.trim() {
        "none" => Ok(None),
        days => days.parse().map(Some).map_err(|_| anyhow!("{option} must be a number of days or none")),
    }
}

/// The workspace `id`, or the error an operator should see when it does not exist (a
/// listing of a workspace that does not exist would otherwise look merely empty).
pub async fn require(backend: &Backend, id: u64) -> anyhow::Result<Workspace> {
    backend.directory().workspace(id).await?.ok_or_else(|| anyhow!("no such workspace {id}"))
}
