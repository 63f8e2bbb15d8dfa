//! `callctl webhook`: the hooks providers post their end-of-call webhooks to
//! (`POST /v1/webhooks/{provider}/{hook_id}`): create, list, revoke, rotate.
//!
//! A hook's signing secret is sealed with KMS before it is stored and never printed again,
//! except a Vapi secret, which we generate and print once. Retell's API key and ElevenLabs'
//! secret are read from a file or standard input (`--signing-key-file FILE|-`), never from
//! the command line, where `ps` and shell history would keep them.

use std::path::PathBuf;

use anyhow::{anyhow, bail};
use call_ingest_core::providers::Provider;
use call_ingest_store::calls::random_hex;
use call_ingest_store::directory::hooks::Hook;
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use super::key::read_token;
use crate::output::{fields, or_dash, table, Output};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates a hook and prints the URL to paste into the provider's dashboard.
    Create {
        /// The workspace its calls are stored in.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
        /// vapi, retell or elevenlabs.
        #[arg(long, value_parser = provider)]
        provider: Provider,
        /// The remote id of the agent a call goes to when the payload's agent id (Vapi's
        /// assistant, Retell's or ElevenLabs' agent) is none of the workspace's agents.
        #[arg(long)]
        agent: Option<String>,
        /// Retell's API key (the one Retell marks for webhooks) or ElevenLabs' webhook
        /// secret, from this file or `-` for standard input. Not for Vapi: we make its secret.
        #[arg(long)]
        signing_key_file: Option<PathBuf>,
        /// The API's base URL, to print the hook's URL (else CALL_INGEST_API_URL).
        #[arg(long, env = "CALL_INGEST_API_URL")]
        api_url: Option<String>,
    },
    /// Lists a workspace's hooks (never their secrets).
    List {
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
    },
    /// Revokes a hook: from now on its requests get 401.
    Revoke {
        #[arg(long)]
        hook: String,
    },
    /// Gives a hook a new secret; the old one is accepted for 24 hours more.
    Rotate {
        #[arg(long)]
        hook: String,
        /// The new Retell API key or ElevenLabs secret (file, or `-`). Vapi: generated.
        #[arg(long)]
        signing_key_file: Option<PathBuf>,
    },
}

fn provider(name: &str) -> Result<Provider, String> {
    Provider::parse(name).ok_or_else(|| format!("{name:?} is not vapi, retell or elevenlabs"))
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let sealer = backend.sealer().ok_or_else(|| anyhow!("no KMS client"))?;
        match self {
            Command::Create { workspace, provider, agent, signing_key_file, api_url } => {
                let (secret, generated) = secret_for(provider, signing_key_file)?;
                let hook = backend
                    .directory()
                    .create_hook(sealer, workspace, provider, agent.as_deref(), secret.as_bytes())
                    .await?;
                let base = api_url.as_deref().unwrap_or("<API URL>").trim_end_matches('/');
                let url = format!("{base}/v1/webhooks/{}/{}", provider.as_str(), hook.id);
                let value = json!({
                    "hook": hook,
                    "url": url,
                    "secret": generated.then_some(&secret),
                    "configure": configure(provider, &url, generated.then_some(secret.as_str())),
                });
                out.show(&value, || {
                    let mut text = fields(&[
                        ("hook", hook.id.clone()),
                        ("workspace", workspace.to_string()),
                        ("provider", provider.as_str().to_owned()),
                        ("url", url.clone()),
                    ]);
                    if generated {
                        text.push_str(&format!("secret (shown once): {secret}\n"));
                    }
                    text.push_str(&format!("\n{}\n", configure(provider, &url, generated.then_some(secret.as_str()))));
                    text
                })?;
                Ok(())
            }
            Command::List { workspace } => {
                let hooks = backend.directory().list_hooks(workspace).await?;
                let value = json!({"workspace_id": workspace, "hooks": hooks});
                out.show(&value, || {
                    if hooks.is_empty() {
                        return format!("workspace {workspace} has no hooks\n");
                    }
                    let rows: Vec<Vec<String>> = hooks
                        .iter()
                        .map(|h| {
                            vec![
                                h.id.clone(),
                                h.provider.as_str().to_owned(),
                                or_dash(h.default_agent_id.as_deref()),
                                if h.revoked_at.is_some() { "revoked".into() } else { "active".into() },
                            ]
                        })
                        .collect();
                    table(&["HOOK", "PROVIDER", "DEFAULT AGENT", "STATE"], &rows)
                })?;
                Ok(())
            }
            Command::Revoke { hook } => {
                let hook = backend.directory().revoke_hook(checked(&hook)?).await?;
                out.show(&json!(hook), || format!("hook {} revoked\n", hook.id))?;
                Ok(())
            }
            Command::Rotate { hook, signing_key_file } => {
                let id = checked(&hook)?;
                let provider =
                    backend.directory().hook(id).await?.ok_or_else(|| anyhow!("no webhook hook {id:?}"))?.provider;
                let (secret, generated) = secret_for(provider, signing_key_file)?;
                let hook = backend.directory().rotate_hook(sealer, id, secret.as_bytes()).await?;
                let value = json!({"hook": hook, "secret": generated.then_some(&secret)});
                out.show(&value, || {
                    let mut text = format!("hook {} rotated; the previous secret is accepted for 24 hours\n", hook.id);
                    if generated {
                        text.push_str(&format!("new secret (shown once): {secret}\n"));
                    }
                    text
                })?;
                Ok(())
            }
        }
    }
}

fn checked(id: &str) -> anyhow::Result<&str> {
    match Hook::well_formed(id) {
        true => Ok(id),
        false => bail!("{id:?} is not a hook id (hk_ and 24 hex digits)"),
    }
}

/// The hook's secret, and whether we made it (Vapi's, printed once).
fn secret_for(provider: Provider, file: Option<PathBuf>) -> anyhow::Result<(String, bool)> {
    match (provider, file) {
        (Provider::Vapi, None) => Ok((random_hex(32)?, true)),
        (Provider::Vapi, Some(_)) => bail!("Vapi's secret is ours to make: leave out --signing-key-file"),
        (_, None) => bail!(
            "{} signs with a key of its own: give it with --signing-key-file FILE (or - for standard input)",
            provider.as_str()
        ),
        (_, Some(path)) => {
            let key = read_token(&path)?;
            if key.is_empty() {
                bail!("the signing key file is empty");
            }
            Ok((key, false))
        }
    }
}

/// What to set in the provider's dashboard.
fn configure(provider: Provider, url: &str, secret: Option<&str>) -> String {
    let secret = secret.unwrap_or("<the secret above>");
    match provider {
        Provider::Vapi => format!(
            "Vapi: Assistant (or Squad, or Org) → Server URL: {url}\n  Server Messages: end-of-call-report\n  \
             Credential: either the header X-Vapi-Secret = {secret}\n  or an HMAC credential: algorithm sha256, \
             signature encoding hex, signature header x-signature, timestamp header x-timestamp, payload format \
             {{timestamp}}.{{body}}, secret {secret}"
        ),
        Provider::Retell => format!(
            "Retell: Agent → Webhook URL: {url}\n  (Retell signs with the API key given: use the key Retell marks for webhooks)"
        ),
        Provider::ElevenLabs => format!(
            "ElevenLabs: Agents Platform → Settings → Post-call webhook: {url}\n  Events: transcription (audio is \
             not stored)\n  Authentication: HMAC, with the secret given"
        ),
    }
}
