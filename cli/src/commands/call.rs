//! `callctl call`: reading stored calls back, one in full or a workspace's latest.

use anyhow::{anyhow, bail, Context};
use call_ingest_store::calls::list::MAX_PAGE;
use call_ingest_store::calls::{CallSummary, Listing, StoredCall, StoredRevision};
use call_ingest_store::directory::Agent;
use call_ingest_store::Backend;
use clap::{ArgGroup, Subcommand};
use serde_json::{json, Value};

use super::workspace;
use crate::output::{fields, or_dash, table, time_ms, Output};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Shows a call: by workspace and provider call id, or by internal id.
    #[command(group(ArgGroup::new("which").required(true).args(["workspace", "id"])))]
    Get {
        /// The workspace's id.
        #[arg(long, requires = "call_id", value_parser = clap::value_parser!(u64).range(1..))]
        workspace: Option<u64>,
        /// The provider's call id (callId / call_id), with --workspace.
        #[arg(long, requires = "workspace")]
        call_id: Option<String>,
        /// The internal id (Create Call's id, Send Call Data's serviceCallId).
        #[arg(long, conflicts_with_all = ["workspace", "call_id"],
              value_parser = clap::value_parser!(u64).range(1..))]
        id: Option<u64>,
        /// Also the earlier revisions (oldest first).
        #[arg(long)]
        revisions: bool,
        /// The request body exactly as received: alone on stdout, byte for byte; with
        /// --json, a string field "raw".
        #[arg(long)]
        raw: bool,
    },
    /// Lists a workspace's latest calls, newest first. Only calls with a start time are
    /// listed.
    List {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
        /// Only this agent's calls: its agent id or its remote id.
        #[arg(long)]
        agent: Option<String>,
        /// How many calls at most.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: u16,
    },
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Get { workspace, call_id, id, revisions, raw } => {
                // Several bodies cannot be told apart once written back to back.
                if raw && revisions && !out.is_json() {
                    bail!("--raw with --revisions needs --json");
                }
                let call = match (id, workspace, call_id) {
                    (Some(id), _, _) => backend
                        .store()
                        .get_call_by_id(id, revisions)
                        .await?
                        .ok_or_else(|| anyhow!("no such call: id {id}"))?,
                    (None, Some(workspace), Some(call_id)) => backend
                        .store()
                        .get_call(workspace, &call_id, revisions)
                        .await?
                        .ok_or_else(|| anyhow!("no such call: call id {call_id:?} in workspace {workspace}"))?,
                    // clap requires --id, or --workspace with --call-id.
                    _ => bail!("name the call with --id, or with --workspace and --call-id"),
                };
                show_call(out, &call, revisions, raw)
            }
            Command::List { workspace, agent, limit } => {
                list(backend, out, workspace, agent.as_deref(), usize::from(limit)).await
            }
        }
    }
}

fn show_call(out: &Output, call: &StoredCall, revisions: bool, raw: bool) -> anyhow::Result<()> {
    if raw && !out.is_json() {
        out.bytes(&call.current.raw)?;
        return Ok(());
    }
    // Through bytes and `Free`, not `to_value`: that reads the stored document as a `Value`,
    // which parses again a string a client sent under serde_json's private key.
    let call_ingest_core::api::free::Free(mut value) = serde_json::from_slice(&serde_json::to_vec(call)?)?;
    if let Some(object) = value.as_object_mut() {
        // Left in, an empty list would read as "this call has no earlier revisions".
        if !revisions {
            object.remove("revisions");
        }
        if raw {
            object.insert("raw".into(), raw_text(&call.current)?);
            if let Some(Value::Array(list)) = object.get_mut("revisions") {
                for (entry, revision) in list.iter_mut().zip(&call.revisions) {
                    if let Some(entry) = entry.as_object_mut() {
                        entry.insert("raw".into(), raw_text(revision)?);
                    }
                }
            }
        }
    }
    out.show(&value, || {
        let mut text = fields(&[
            ("call id", call.call_id.clone()),
            ("id", call.id.to_string()),
            ("workspace", call.workspace_id.to_string()),
            ("agent id", call.agent_id.clone()),
            ("operation", call.operation.clone()),
            ("created", time_ms(call.created_at)),
            ("revision", call.current.revision.to_string()),
            ("updated", time_ms(call.current.updated_at)),
        ]);
        text.push('\n');
        text.push_str(&pretty(&call.current.document_value()));
        for earlier in &call.revisions {
            text.push_str(&format!(
                "\n--- earlier revision {}, received {} ---\n",
                earlier.revision,
                time_ms(earlier.updated_at)
            ));
            text.push_str(&pretty(&earlier.document_value()));
        }
        text
    })?;
    Ok(())
}

/// A revision's raw body as a JSON string. Accepted bodies were parsed as JSON, so they
/// are UTF-8; anything else is said rather than silently altered.
fn raw_text(revision: &StoredRevision) -> anyhow::Result<Value> {
    let text = std::str::from_utf8(&revision.raw).with_context(|| {
        format!("the raw body of revision {} is not UTF-8; use --raw without --json", revision.revision)
    })?;
    Ok(Value::String(text.to_owned()))
}

fn pretty(document: &Value) -> String {
    // A Value always serialises.
    let mut text = serde_json::to_string_pretty(document).unwrap_or_default();
    text.push('\n');
    text
}

async fn list(
    backend: &Backend,
    out: &Output,
    workspace_id: u64,
    agent: Option<&str>,
    limit: usize,
) -> anyhow::Result<()> {
    workspace::require(backend, workspace_id).await?;
    let agents = backend.directory().list_agents(workspace_id).await?;
    let agents: Vec<&Agent> = match agent {
        None => agents.iter().collect(),
        Some(wanted) => {
            // An exact agent id first: remote ids are the workspace's own and could look
            // like anything.
            let found = agents
                .iter()
                .find(|a| a.id == wanted)
                .or_else(|| agents.iter().find(|a| a.remote_id == wanted))
                .ok_or_else(|| anyhow!("no such agent {wanted:?} in workspace {workspace_id}"))?;
            vec![found]
        }
    };
    // The same listing the API answers, page after page until `limit`.
    let agent_id = match agent {
        Some(_) => agents.first().map(|a| a.id.as_str()),
        None => None,
    };
    let mut listing = Listing { workspace_id, agent_id, from_ms: 0, to_ms: u64::MAX, after: None, limit: MAX_PAGE };
    let mut calls: Vec<(Option<&Agent>, CallSummary)> = Vec::new();
    while calls.len() < limit {
        listing.limit = (limit - calls.len()).min(MAX_PAGE);
        let page = backend.store().list_calls(&listing).await?;
        calls.extend(page.calls.into_iter().map(|c| (agents.iter().copied().find(|a| a.id == c.agent_id), c)));
        match page.next {
            Some(next) => listing.after = Some(next),
            None => break,
        }
    }

    let entries: Vec<Value> = calls
        .iter()
        .map(|(a, c)| {
            let mut entry = json!(c);
            if let Some(object) = entry.as_object_mut() {
                object.insert("agent_remote_id".into(), json!(a.map(|a| &a.remote_id)));
            }
            entry
        })
        .collect();
    let value = json!({"workspace_id": workspace_id, "calls": entries});
    out.show(&value, || {
        if calls.is_empty() {
            return format!("no calls in workspace {workspace_id}\n");
        }
        let rows: Vec<Vec<String>> = calls
            .iter()
            .map(|(a, c)| {
                vec![
                    c.id.to_string(),
                    c.call_id.clone(),
                    a.map_or_else(|| "-".to_owned(), |a| a.remote_id.clone()),
                    c.start_ms.map_or_else(|| format!("({} received)", time_ms(c.created_at)), time_ms),
                    c.duration_ms.map_or_else(|| "-".to_owned(), seconds),
                    or_dash(c.call_status.as_deref()),
                    or_dash(c.user_sentiment.as_deref()),
                    c.revision.to_string(),
                ]
            })
            .collect();
        table(&["ID", "CALL ID", "AGENT", "START", "DURATION", "STATUS", "SENTIMENT", "REV"], &rows)
    })?;
    Ok(())
}

/// Milliseconds as seconds with one decimal (`94.5s`).
fn seconds(ms: u64) -> String {
    format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
}
