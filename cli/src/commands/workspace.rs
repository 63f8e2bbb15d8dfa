//! `callctl workspace`: creating and showing workspaces.

use anyhow::{anyhow, bail};
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
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let workspace = match self {
            Command::Create { name } => {
                let name = name.trim();
                if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
                    bail!("the workspace name must be 1 to {MAX_NAME_CHARS} characters");
                }
                backend.directory().create_workspace(name).await?
            }
            Command::Get { id } => require(backend, id).await?,
            Command::Limit { id, per_second, .. } => backend.directory().set_rate_limit(id, per_second).await?,
        };
        let limit = match workspace.rate_limit {
            Some(l) => format!("{l} requests per second"),
            None => format!("default ({} requests per second)", backend.config.rate_limit),
        };
        out.show(&json!(workspace), || {
            fields(&[("workspace", workspace.id.to_string()), ("name", workspace.name.clone()), ("rate limit", limit)])
        })?;
        Ok(())
    }
}

/// The workspace `id`, or the error an operator should see when it does not exist (a
/// listing of a workspace that does not exist would otherwise look merely empty).
pub async fn require(backend: &Backend, id: u64) -> anyhow::Result<Workspace> {
    backend.directory().workspace(id).await?.ok_or_else(|| anyhow!("no such workspace {id}"))
}
