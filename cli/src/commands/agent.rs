//! `callctl agent`: creating, listing and finding the agents of a workspace.

use anyhow::{anyhow, bail};
use call_ingest_store::directory::Agent;
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use super::workspace;
use crate::output::{fields, or_dash, table, Output};

/// Longest agent id accepted: operation A names agents by `agentId`, at most 200
/// characters, so a longer id could never receive a call.
const MAX_AGENT_ID_CHARS: usize = 200;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates an agent in a workspace.
    Create {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
        /// The workspace's own identifier of the agent (Create Call's
        /// agent_remote_identifier).
        #[arg(long)]
        remote_id: String,
        /// A name for people.
        #[arg(long)]
        name: Option<String>,
        /// The service's agent id (Send Call Data's agentId); generated unless given, which
        /// is for fixtures.
        #[arg(long)]
        agent_id: Option<String>,
    },
    /// Lists the agents of a workspace.
    List {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
    },
    /// Shows the agent with this remote id (exits 1 if there is none).
    Get {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
        #[arg(long)]
        remote_id: String,
    },
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Create { workspace, remote_id, name, agent_id } => {
                if let Some(id) = &agent_id {
                    if id.trim().is_empty() || id.chars().count() > MAX_AGENT_ID_CHARS {
                        bail!("the agent id must be 1 to {MAX_AGENT_ID_CHARS} characters");
                    }
                }
                let agent = backend
                    .directory()
                    .create_agent(workspace, &remote_id, name.as_deref(), agent_id.as_deref())
                    .await?;
                show(out, &agent)
            }
            Command::List { workspace } => {
                workspace::require(backend, workspace).await?;
                let agents = backend.directory().list_agents(workspace).await?;
                let value = json!({"workspace_id": workspace, "agents": agents});
                out.show(&value, || {
                    if agents.is_empty() {
                        return format!("workspace {workspace} has no agents\n");
                    }
                    let rows: Vec<Vec<String>> = agents
                        .iter()
                        .map(|a| vec![a.id.clone(), a.remote_id.clone(), or_dash(a.name.as_deref())])
                        .collect();
                    table(&["AGENT ID", "REMOTE ID", "NAME"], &rows)
                })?;
                Ok(())
            }
            Command::Get { workspace, remote_id } => {
                let agent = backend
                    .directory()
                    .agent_by_remote(workspace, &remote_id)
                    .await?
                    .ok_or_else(|| anyhow!("no such agent: remote id {remote_id:?} in workspace {workspace}"))?;
                show(out, &agent)
            }
        }
    }
}

fn show(out: &Output, agent: &Agent) -> anyhow::Result<()> {
    out.show(&json!(agent), || {
        fields(&[
            ("agent id", agent.id.clone()),
            ("workspace", agent.workspace_id.to_string()),
            ("remote id", agent.remote_id.clone()),
            ("name", or_dash(agent.name.as_deref())),
        ])
    })?;
    Ok(())
}
