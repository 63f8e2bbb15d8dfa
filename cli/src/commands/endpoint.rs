//! `callctl endpoint`: the URLs a workspace's events (`call.stored`, `call.revised`,
//! `call.erased`) are sent to, signed as Standard Webhooks has it: create (prints the
//! `whsec_…` secret once), list, disable, enable, delete, rotate; and what was sent to one:
//! attempts, replay, recover (`deliveries`).
//!
//! A URL is checked when the endpoint is made: `https`, no credentials in it, and a public
//! host (a private, loopback, link-local or metadata address is refused in every spelling;
//! so are `localhost` and names without a dot). The local stack's `EVENTS_ALLOW_LOOPBACK`
//! also allows `http` to a loopback address, for its receivers.

use std::time::Duration;

use anyhow::anyhow;
use call_ingest_core::events::{target, EventType};
use call_ingest_store::directory::endpoints::{new_secret, Disabled, Endpoint, ROTATION_OVERLAP_MS};
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use crate::commands::deliveries;
use crate::commands::webhook::overlap;
use crate::output::{fields, table, time_ms, Output};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Makes an endpoint and prints its signing secret, once.
    Create {
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
        /// Where the events go: https, a public host.
        #[arg(long)]
        url: String,
        /// An event type it takes (call.stored, call.revised, call.erased); repeat for
        /// more; none: every type.
        #[arg(long = "event", value_parser = event_type)]
        events: Vec<EventType>,
    },
    /// Lists a workspace's endpoints (never their secrets), and which are disabled and why.
    List {
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
    },
    /// Stops sending to an endpoint (what comes meanwhile is kept as not sent: `recover`
    /// sends it once the endpoint is enabled).
    Disable {
        #[arg(long)]
        endpoint: String,
    },
    /// Sends to an endpoint again (one disabled by hand, after a 410, or after failing).
    Enable {
        #[arg(long)]
        endpoint: String,
    },
    /// Deletes an endpoint.
    Delete {
        #[arg(long)]
        endpoint: String,
    },
    /// Gives an endpoint a new secret and prints it once; the old one signs beside it for 24
    /// hours (both signatures in `webhook-signature`), or --overlap, or not at all with --now.
    Rotate {
        #[arg(long)]
        endpoint: String,
        #[arg(long, conflicts_with = "overlap")]
        now: bool,
        /// How long the old secret still signs: 90s, 30m, 12h or 7d.
        #[arg(long, value_parser = overlap)]
        overlap: Option<Duration>,
    },
    /// What was sent to an endpoint: each attempt's time, message, type, number, status,
    /// duration and the answer's first bytes (kept 30 days).
    Attempts {
        #[arg(long)]
        endpoint: String,
        /// Only the attempts of this last while: 90s, 30m, 12h or 7d (default: 30 days).
        #[arg(long, value_parser = overlap)]
        since: Option<Duration>,
    },
    /// Sends a message to an endpoint again (its same webhook-id and body).
    Replay {
        #[arg(long)]
        endpoint: String,
        /// The message's id (webhook-id, msg_…), as `attempts` shows it.
        #[arg(long)]
        message: String,
    },
    /// Sends an endpoint again every message tried this last while that it never took.
    Recover {
        #[arg(long)]
        endpoint: String,
        /// 90s, 30m, 12h or 7d.
        #[arg(long, value_parser = overlap)]
        since: Duration,
    },
}

fn event_type(name: &str) -> Result<EventType, String> {
    EventType::parse(name).ok_or_else(|| format!("{name:?} is not call.stored, call.revised or call.erased"))
}

/// An endpoint's state, a word.
fn state(e: &Endpoint) -> String {
    match (e.disabled, e.failing_since) {
        (Some(Disabled::ByHand), _) => "disabled".into(),
        (Some(Disabled::Gone), _) => "disabled (410 Gone)".into(),
        (Some(Disabled::Failing), _) => "disabled (failing for 5 days)".into(),
        (None, Some(since)) => format!("failing since {}", time_ms(since)),
        (None, None) => "active".into(),
    }
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let directory = backend.directory();
        match self {
            Command::Create { workspace, url, events } => {
                let sealer = backend.sealer().ok_or_else(|| anyhow!("no KMS client"))?;
                let target = target::check(&url, backend.config.events_allow_loopback)?;
                let secret = new_secret()?;
                let endpoint = directory.create_endpoint(sealer, workspace, &target, &events, &secret).await?;
                let shown = secret.reveal();
                out.show(&json!({"endpoint": endpoint, "secret": shown}), || {
                    let mut text = fields(&[
                        ("endpoint", endpoint.id.clone()),
                        ("workspace", workspace.to_string()),
                        ("url", endpoint.url.clone()),
                        ("events", types(&endpoint)),
                    ]);
                    text.push_str(&format!("secret (shown once): {shown}\n"));
                    text
                })?;
            }
            Command::List { workspace } => {
                let endpoints = directory.list_endpoints(workspace).await?;
                let value = json!({"workspace_id": workspace, "endpoints": endpoints});
                out.show(&value, || {
                    if endpoints.is_empty() {
                        return format!("workspace {workspace} has no endpoints\n");
                    }
                    let rows: Vec<Vec<String>> =
                        endpoints.iter().map(|e| vec![e.id.clone(), e.url.clone(), types(e), state(e)]).collect();
                    table(&["ENDPOINT", "URL", "EVENTS", "STATE"], &rows)
                })?;
            }
            Command::Disable { endpoint } => {
                let e = directory.disable_endpoint(&endpoint, Disabled::ByHand).await?;
                out.show(&json!(e), || format!("endpoint {} disabled\n", e.id))?;
            }
            Command::Enable { endpoint } => {
                let e = directory.enable_endpoint(&endpoint).await?;
                out.show(&json!(e), || format!("endpoint {} enabled\n", e.id))?;
            }
            Command::Delete { endpoint } => {
                let e = directory.delete_endpoint(&endpoint).await?;
                out.show(&json!(e), || format!("endpoint {} deleted\n", e.id))?;
            }
            Command::Rotate { endpoint, now, overlap } => {
                let sealer = backend.sealer().ok_or_else(|| anyhow!("no KMS client"))?;
                let overlap_ms = match (now, overlap) {
                    (true, _) => 0,
                    (false, Some(d)) => d.as_millis() as u64,
                    (false, None) => ROTATION_OVERLAP_MS,
                };
                let secret = new_secret()?;
                let e = directory.rotate_endpoint(sealer, &endpoint, &secret, overlap_ms).await?;
                let shown = secret.reveal();
                out.show(&json!({"endpoint": e, "secret": shown}), || {
                    let until = match e.previous_until {
                        Some(until) => format!("signs beside it until {}", time_ms(until)),
                        None => "no longer signs".to_owned(),
                    };
                    format!(
                        "endpoint {} rotated; the previous secret {until}\nnew secret (shown once): {shown}\n",
                        e.id
                    )
                })?;
            }
            Command::Attempts { endpoint, since } => deliveries::attempts(backend, out, &endpoint, since).await?,
            Command::Replay { endpoint, message } => deliveries::replay(backend, out, &endpoint, &message).await?,
            Command::Recover { endpoint, since } => deliveries::recover(backend, out, &endpoint, since).await?,
        }
        Ok(())
    }
}

/// The event types an endpoint takes, for a table.
fn types(e: &Endpoint) -> String {
    match e.events.is_empty() {
        true => "all".into(),
        false => e.events.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", "),
    }
}
