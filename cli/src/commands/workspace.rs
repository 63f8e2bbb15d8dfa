//! `callctl workspace`: creating and showing workspaces.

use anyhow::{anyhow, bail};
use call_ingest::directory::admin::Workspace;
use call_ingest::http::App;
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
}

impl Command {
    pub async fn run(self, app: &App, out: &Output) -> anyhow::Result<()> {
        let workspace = match self {
            Command::Create { name } => {
                let name = name.trim();
                if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
                    bail!("the workspace name must be 1 to {MAX_NAME_CHARS} characters");
                }
                app.directory().create_workspace(name).await?
            }
            Command::Get { id } => require(app, id).await?,
        };
        out.show(&json!(workspace), || {
            fields(&[("workspace", workspace.id.to_string()), ("name", workspace.name.clone())])
        })?;
        Ok(())
    }
}

/// The workspace `id`, or the error an operator should see when it does not exist (a
/// listing of a workspace that does not exist would otherwise look merely empty).
pub async fn require(app: &App, id: u64) -> anyhow::Result<Workspace> {
    app.directory().workspace(id).await?.ok_or_else(|| anyhow!("no such workspace {id}"))
}
