//! `callctl key`: a workspace's API keys. The token is printed once, at creation; the
//! directory keeps only its digest, and listings show the public id alone.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use call_ingest_store::directory::credentials::{Secret, API_KEY_PREFIX, PUBLIC_ID_LEN};
use call_ingest_store::directory::scopes::{Scope, Scopes};
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use crate::output::{fields, or_dash, table, time_s, Output};

/// Random characters a registered fixture token must carry after its prefix: 32 hex
/// digits, the contract's 128 bits.
const MIN_FIXTURE_SECRET_CHARS: usize = 32;

/// Told whenever a credential is revoked: the functions cache credentials for up to
/// `DIRECTORY_CACHE_TTL_SECS`, at most 60 s.
pub const REVOCATION_DELAY: &str = "it stops working within 60 s, once cached copies expire";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates an API key; its token is printed now and never again.
    Create {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
        /// A name for people, to tell keys apart in listings.
        #[arg(long)]
        name: Option<String>,
        /// What the key may do: send (store calls), read (read them back), erase (erase
        /// them). Repeat for several; without it the key may send only.
        #[arg(long = "scope", value_name = "SCOPE", value_parser = clap::value_parser!(ScopeArg))]
        scopes: Vec<ScopeArg>,
        /// Registers the exact token read from this file (`-`: standard input) instead of
        /// generating one. For fixtures only (the events' example key): a real key must be
        /// random. Never on the command line, where it would land in shell history and `ps`.
        #[arg(long, value_name = "FILE", hide_short_help = true)]
        token_file: Option<PathBuf>,
    },
    /// Revokes an API key, named by its public id (cik_xxxxxxxx, as `key list` shows it).
    Revoke {
        #[arg(value_name = "PUBLIC_ID")]
        id: String,
    },
    /// Lists a workspace's API keys (public id, name, created, revoked; never a secret).
    List {
        /// The workspace's id.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        workspace: u64,
    },
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Create { workspace, name, scopes, token_file } => {
                let name = name.unwrap_or_default();
                let scopes = match scopes.is_empty() {
                    true => Scopes::DEFAULT,
                    false => Scopes::of(scopes.into_iter().map(|s| s.0)),
                };
                let issued = match token_file {
                    None => backend.directory().create_api_key(workspace, &name, scopes).await?,
                    Some(path) => {
                        // The endpoint the SDK uses: none configured counts when it is told to
                        // ignore configured endpoints (it then reaches AWS).
                        let ignored = std::env::var("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
                            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
                        let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").ok().filter(|_| !ignored);
                        check_fixture_scopes(scopes, endpoint.as_deref())?;
                        let token = read_token(&path)?;
                        check_fixture_token(&token)?;
                        backend
                            .directory()
                            .register_api_key(workspace, &name, scopes, Secret::from_token(token))
                            .await?
                    }
                };
                let scope_names: Vec<&str> = scopes.iter().map(Scope::as_str).collect();
                let value = json!({
                    "token": issued.token,
                    "public_id": issued.public_id,
                    "workspace_id": workspace,
                    "scopes": scope_names,
                });
                out.show(&value, || {
                    let mut text = fields(&[
                        ("token", issued.token.clone()),
                        ("public id", issued.public_id.clone()),
                        ("workspace", workspace.to_string()),
                        ("scopes", scopes.to_string()),
                    ]);
                    text.push_str("This token will not be shown again: only its digest is stored.\n");
                    text
                })?;
            }
            Command::Revoke { id } => {
                let id = public_id_only(&id)?;
                // A session's id would be revoked just the same; refuse so that a mix-up
                // between the two commands cannot cut off the wrong credential.
                if !id.starts_with(API_KEY_PREFIX) {
                    bail!("{id:?} is not an API key: API keys start with {API_KEY_PREFIX}");
                }
                let public_id = backend.directory().revoke(id).await?;
                let value = json!({"public_id": public_id, "revoked": true});
                out.show(&value, || format!("revoked API key {public_id}; {REVOCATION_DELAY}\n"))?;
            }
            Command::List { workspace } => {
                super::workspace::require(backend, workspace).await?;
                let keys = backend.directory().list_keys(workspace).await?;
                let value = json!({"workspace_id": workspace, "keys": keys});
                out.show(&value, || {
                    if keys.is_empty() {
                        return format!("workspace {workspace} has no API keys\n");
                    }
                    let rows: Vec<Vec<String>> = keys
                        .iter()
                        .map(|k| {
                            vec![
                                k.public_id.clone(),
                                or_dash(Some(&k.name)),
                                k.scopes.to_string(),
                                time_s(k.created_at),
                                k.revoked_at.map_or_else(|| "-".to_owned(), time_s),
                            ]
                        })
                        .collect();
                    table(&["PUBLIC ID", "NAME", "SCOPES", "CREATED", "REVOKED"], &rows)
                })?;
            }
        }
        Ok(())
    }
}

/// A `--scope` argument.
#[derive(Debug, Clone, Copy)]
pub struct ScopeArg(Scope);

impl std::str::FromStr for ScopeArg {
    type Err = String;

    fn from_str(s: &str) -> Result<ScopeArg, String> {
        s.trim().to_ascii_lowercase().parse().map(ScopeArg)
    }
}

/// What of a credential argument may appear in a message: its public part, so that a
/// token pasted into the wrong command is not echoed whole.
pub fn shown(id_or_token: &str) -> String {
    id_or_token.chars().take(PUBLIC_ID_LEN).collect()
}

/// The public id a revoke names. A whole token is refused (not echoed): on a command line
/// it lands in shell history and `ps`.
pub fn public_id_only(id: &str) -> anyhow::Result<&str> {
    let id = id.trim();
    if id.chars().count() > PUBLIC_ID_LEN {
        bail!(
            "name the credential by its public id ({:?}, the first {PUBLIC_ID_LEN} characters, as listed), \
             never by its whole token",
            shown(id)
        );
    }
    Ok(id)
}

/// Reads a token from `path` (`-`: standard input), surrounding white space removed.
pub(crate) fn read_token(path: &Path) -> anyhow::Result<String> {
    let text = if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("cannot read the token from standard input")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read the token from {}", path.display()))?
    };
    Ok(text.trim().to_owned())
}

/// A fixture token is known to whoever read the repository: against AWS it may only send,
/// never read or erase a workspace's calls.
fn check_fixture_scopes(scopes: Scopes, endpoint: Option<&str>) -> anyhow::Result<()> {
    let local = endpoint.is_some_and(is_loopback);
    if !local && (scopes.contains(Scope::Read) || scopes.contains(Scope::Erase)) {
        bail!("a --token-file key may read or erase only in a local DynamoDB (AWS_ENDPOINT_URL_DYNAMODB on 127.0.0.1)");
    }
    Ok(())
}

/// Whether `endpoint` is a URL whose host is this machine: `localhost`, or a loopback
/// address (127.0.0.0/8, ::1). The host is parsed, not searched for: `127.0.0.1.evil.example`
/// is another machine, and so is a URL that names a user before its host.
fn is_loopback(endpoint: &str) -> bool {
    let Ok(uri) = endpoint.parse::<http::Uri>() else { return false };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else { return false };
    if !matches!(scheme, "http" | "https") || authority.as_str().contains('@') {
        return false;
    }
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A fixture token must look like a real key: the prefix (so scanners find it), then
/// enough letters and digits, and nothing a header could not carry.
fn check_fixture_token(token: &str) -> anyhow::Result<()> {
    let secret = token.strip_prefix(API_KEY_PREFIX).unwrap_or_default();
    if !token.starts_with(API_KEY_PREFIX)
        || secret.chars().count() < MIN_FIXTURE_SECRET_CHARS
        || !secret.chars().all(|c| c.is_ascii_alphanumeric())
    {
        bail!("the token must be {API_KEY_PREFIX} followed by at least {MIN_FIXTURE_SECRET_CHARS} letters and digits");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_tokens_must_look_like_keys() {
        assert!(check_fixture_token("cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6").is_ok());
        assert!(check_fixture_token("cis_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6").is_err());
        assert!(check_fixture_token("cik_short").is_err());
        assert!(check_fixture_token("cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c 6d7e8f90").is_err());
    }

    #[test]
    fn fixture_keys_read_only_locally() {
        let read = Scopes::of([Scope::Send, Scope::Read]);
        assert!(check_fixture_scopes(Scopes::DEFAULT, None).is_ok());
        assert!(check_fixture_scopes(read, None).is_err());
        assert!(check_fixture_scopes(read, Some("https://dynamodb.us-east-1.amazonaws.com")).is_err());
        assert!(check_fixture_scopes(read, Some("http://127.0.0.1:8000")).is_ok());
    }

    #[test]
    fn only_a_loopback_host_is_local() {
        for local in ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000", "https://127.9.0.1"] {
            assert!(is_loopback(local), "{local}");
        }
        for remote in [
            "http://127.0.0.1.evil.example:8000",
            "http://localhost.evil.example",
            "http://evil.example/127.0.0.1",
            "http://127.0.0.1@evil.example",
            "http://evil.example?h=://127.0.0.1",
            "ftp://127.0.0.1",
            "127.0.0.1:8000",
            "http://10.0.0.1:8000",
            "",
        ] {
            assert!(!is_loopback(remote), "{remote}");
        }
    }

    #[test]
    fn revokes_take_public_ids_never_tokens() {
        assert_eq!(public_id_only(" cik_1a2b3c4d ").unwrap(), "cik_1a2b3c4d");
        let err = public_id_only("cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6").unwrap_err().to_string();
        assert!(err.contains("public id") && !err.contains("a1b2c3d4e5f6"), "{err}");
    }

    #[test]
    fn messages_show_only_the_public_part() {
        assert_eq!(shown("cis_0123456789abcdef"), "cis_01234567");
    }
}
