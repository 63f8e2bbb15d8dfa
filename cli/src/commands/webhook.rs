//! `callctl webhook`: the hooks providers post their end-of-call webhooks to
//! (`POST /v1/webhooks/{provider}/{hook_id}`): create, list, revoke, rotate, give a default
//! agent, and list the reports held for want of an agent.
//!
//! A hook's signing secret is sealed with KMS before it is stored and never printed again,
//! except a Vapi secret, which we generate and print once. Retell's API key and ElevenLabs'
//! secret are read from a file only its owner can read, or standard input (`--signing-key-file
//! FILE|-`; typed at a terminal, not echoed), never from the command line, where `ps` and
//! shell history would keep them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail};
use call_ingest_core::providers::Provider;
use call_ingest_store::calls::random_hex;
use call_ingest_store::directory::hooks::Hook;
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use call_ingest_store::directory::hooks::{CredentialHeader, ROTATION_OVERLAP_MS};

use crate::output::{fields, or_dash, table, time_ms, Output, Refusal};

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
        /// Vapi: the header its credential sends the secret in (the credential's "Header
        /// Name"; X-Vapi-Secret for the legacy inline secret).
        #[arg(long, default_value = "Authorization")]
        header: String,
        /// Vapi: what precedes the secret in that header: Bearer (the credential's "Bearer
        /// prefix" on), or none.
        #[arg(long, default_value = "Bearer", value_parser = ["Bearer", "none"])]
        prefix: String,
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
    /// Gives a hook a new secret; the old one is accepted for 24 hours more, or --overlap,
    /// or not at all with --now (refused on every instance within 60 s; within 15 minutes
    /// while the directory is down).
    Rotate {
        #[arg(long)]
        hook: String,
        /// The new Retell API key or ElevenLabs secret (file, or `-`). Vapi: generated.
        #[arg(long)]
        signing_key_file: Option<PathBuf>,
        /// Cut the old secret off now (a leaked one).
        #[arg(long, conflicts_with = "overlap")]
        now: bool,
        /// How long the old secret is still accepted: 90s, 30m, 12h or 7d.
        #[arg(long, value_parser = overlap)]
        overlap: Option<Duration>,
    },
    /// Gives a hook a default agent: its calls whose payload names none of the workspace's
    /// agents go to it, and the reports held so far are committed within a minute.
    Default {
        #[arg(long)]
        hook: String,
        /// The agent's remote id.
        #[arg(long)]
        agent: String,
    },
    /// Lists the reports a hook holds for want of an agent (a signed report whose agent the
    /// workspace does not have, to a hook with no default agent).
    Held {
        #[arg(long)]
        hook: String,
    },
}

/// `90s`, `30m`, `12h`, `7d`: a rotation's overlap.
pub(crate) fn overlap(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration such as 90s, 30m, 12h or 7d");
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    number.checked_mul(secs).filter(|s| *s <= 30 * 86_400).map(Duration::from_secs).ok_or_else(bad)
}

fn provider(name: &str) -> Result<Provider, String> {
    Provider::parse(name).ok_or_else(|| format!("{name:?} is not vapi, retell or elevenlabs"))
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let sealer = backend.sealer().ok_or_else(|| anyhow!("no KMS client"))?;
        match self {
            Command::Create { workspace, provider, agent, signing_key_file, api_url, header, prefix } => {
                let credential = match provider {
                    Provider::Vapi => {
                        Some(CredentialHeader::new(&header, Some(prefix.as_str()).filter(|p| *p != "none"))?)
                    }
                    _ => None,
                };
                let (secret, generated) = secret_for(provider, signing_key_file)?;
                let hook = backend
                    .directory()
                    .create_hook(sealer, workspace, provider, agent.as_deref(), secret.as_bytes(), credential)
                    .await?;
                let base = api_url.as_deref().unwrap_or("<API URL>").trim_end_matches('/');
                let url = format!("{base}/v1/webhooks/{}/{}", provider.as_str(), hook.id);
                let value = json!({
                    "hook": hook,
                    "url": url,
                    "secret": generated.then_some(&secret),
                    "configure": configure(&hook, &url, generated.then_some(secret.as_str())),
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
                    text.push_str(&format!("\n{}\n", configure(&hook, &url, generated.then_some(secret.as_str()))));
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
            Command::Default { hook, agent } => Command::run_default(&hook, &agent, backend, out).await,
            Command::Held { hook } => Command::run_held(&hook, backend, out).await,
            Command::Revoke { hook } => {
                let hook = backend.directory().revoke_hook(checked(&hook)?).await?;
                out.show(&json!(hook), || format!("hook {} revoked\n", hook.id))?;
                Ok(())
            }
            Command::Rotate { hook, signing_key_file, now, overlap } => {
                let id = checked(&hook)?;
                let provider =
                    backend.directory().hook(id).await?.ok_or_else(|| anyhow!("no webhook hook {id:?}"))?.provider;
                let (secret, generated) = secret_for(provider, signing_key_file)?;
                let overlap_ms = match (now, overlap) {
                    (true, _) => 0,
                    (false, Some(d)) => d.as_millis() as u64,
                    (false, None) => ROTATION_OVERLAP_MS,
                };
                let hook = backend.directory().rotate_hook(sealer, id, secret.as_bytes(), overlap_ms).await?;
                let value = json!({"hook": hook, "secret": generated.then_some(&secret)});
                out.show(&value, || {
                    let until = match hook.previous_until {
                        Some(until) => format!("is accepted until {}", time_ms(until)),
                        None => "is refused on every instance within a minute (15 minutes while the directory is \
                                 down)"
                            .to_owned(),
                    };
                    let mut text = format!("hook {} rotated; the previous secret {until}\n", hook.id);
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

impl Command {
    async fn run_default(hook: &str, agent: &str, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let hook = backend.directory().set_default_agent(checked(hook)?, agent).await?;
        out.show(&json!(hook), || {
            format!("hook {} takes calls for no known agent as {agent}; reports held so far are committed within a minute\n", hook.id)
        })?;
        Ok(())
    }

    async fn run_held(hook: &str, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        let id = checked(hook)?;
        let hook = backend.directory().hook(id).await?.ok_or_else(|| anyhow!("no webhook hook {id:?}"))?;
        let held: Vec<_> =
            backend.store().held(hook.workspace_id).await?.into_iter().filter(|h| h.hook_id == id).collect();
        let value = json!({"hook": id, "held": held});
        out.show(&value, || {
            if held.is_empty() {
                return format!("hook {id} holds no reports\n");
            }
            let rows: Vec<Vec<String>> = held
                .iter()
                .map(|h| vec![h.call_id.clone(), time_ms(h.received_ms), or_dash(h.named.as_deref())])
                .collect();
            let mut text = table(&["CALL", "RECEIVED", "AGENT NAMED"], &rows);
            text.push_str(
                "\nEach is committed within a minute of its agent being created (callctl agent create \
                 --remote-id ...) or the hook given one (callctl webhook default).\n",
            );
            text
        })?;
        Ok(())
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
            let key = read_signing_key(&path)?;
            if key.is_empty() {
                bail!("the signing key file is empty");
            }
            Ok((key, false))
        }
    }
}

/// Reads a signing key from `path`, a file only its owner may read (else refused, exit 2),
/// or `-`: standard input, not echoed when it is a terminal.
fn read_signing_key(path: &Path) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if path == Path::new("-") {
        let text = match std::io::stdin().is_terminal() {
            true => rpassword::prompt_password("signing key (not shown): ")?,
            false => std::io::read_to_string(std::io::stdin())?,
        };
        return Ok(text.trim().to_owned());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            std::fs::metadata(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(Refusal(format!(
                "{} may be read by others (mode {:o}): chmod 600 it, or give the key on standard input (-)",
                path.display(),
                mode & 0o777
            ))
            .into());
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    Ok(text.trim().to_owned())
}

/// What to set in the provider's dashboard.
fn configure(hook: &Hook, url: &str, secret: Option<&str>) -> String {
    let secret = secret.unwrap_or("<the secret above>");
    match hook.provider {
        Provider::Vapi => {
            let header = hook.secret_header();
            let credential = match (header.name, header.prefix) {
                ("x-vapi-secret", None) => format!("the legacy inline secret: header X-Vapi-Secret = {secret}"),
                (name, Some(prefix)) => format!(
                    "Credentials → Bearer Token: token {secret}, header name {name}, {prefix} prefix on (it sends \
                     \"{name}: {prefix} <token>\")"
                ),
                (name, None) => {
                    format!("Credentials → Bearer Token: token {secret}, header name {name}, Bearer prefix off")
                }
            };
            format!(
                "Vapi: Assistant (or Squad, or Org) → Server URL: {url}\n  Server Messages: end-of-call-report\n  \
                 Credential: {credential}\n  (or an HMAC credential: algorithm sha256, signature encoding hex, \
                 signature header x-signature, timestamp header x-timestamp, payload format {{timestamp}}.{{body}}, \
                 secret {secret})"
            )
        }
        Provider::Retell => format!(
            "Retell: Agent → Webhook URL: {url}\n  (Retell signs with the API key given: use the key Retell marks for \
             webhooks, and delete the file you gave it from: it holds your whole account's power)"
        ),
        Provider::ElevenLabs => format!(
            "ElevenLabs: Agents Platform → Settings → Post-call webhook: {url}\n  Events: transcription only; leave \
             audio delivery (post_call_audio) off: its audio runs past the 6 MB a request may carry and would count \
             as failures toward ElevenLabs disabling the webhook\n  Authentication: HMAC, with the secret given"
        ),
    }
}
