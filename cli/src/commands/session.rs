//! `callctl session`: session tokens for users (Create Call only). The token is printed
//! once, at creation; the directory keeps only its digest.

use std::time::Duration;

use anyhow::bail;
use call_ingest_store::directory::credentials::SESSION_PREFIX;
use call_ingest_store::Backend;
use clap::Subcommand;
use serde_json::json;

use super::key::REVOCATION_DELAY;
use crate::output::{fields, time_s, Output};

/// The longest session: a session is a short-lived credential, and a bound keeps the
/// expiry far from any overflow.
const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Creates a session for a user in one or more workspaces; its token is printed now
    /// and never again.
    Create {
        /// Who the session belongs to.
        #[arg(long)]
        user: String,
        /// A workspace the user may send calls to; repeat it (or separate ids with commas)
        /// for several.
        #[arg(long = "workspace", required = true, value_delimiter = ',',
              value_parser = clap::value_parser!(u64).range(1..))]
        workspaces: Vec<u64>,
        /// How long the session lasts: a whole number and a unit, s, m, h or d (30m, 12h,
        /// 7d); at most 365d.
        #[arg(long, default_value = "1h", value_parser = parse_ttl)]
        ttl: Duration,
    },
    /// Revokes a session, named by its public id (cis_xxxxxxxx, as printed at creation).
    Revoke {
        #[arg(value_name = "PUBLIC_ID")]
        id: String,
    },
}

impl Command {
    pub async fn run(self, backend: &Backend, out: &Output) -> anyhow::Result<()> {
        match self {
            Command::Create { user, mut workspaces, ttl } => {
                let user = user.trim();
                if user.is_empty() {
                    bail!("--user must not be empty");
                }
                // The workspaces are stored as a DynamoDB number set, which refuses
                // duplicates.
                workspaces.sort_unstable();
                workspaces.dedup();
                let issued = backend.directory().create_session(user, &workspaces, ttl).await?;
                let expires_at = issued.expires_at.unwrap_or_default();
                let value = json!({
                    "token": issued.token,
                    "public_id": issued.public_id,
                    "user": user,
                    "workspaces": workspaces,
                    "expires_at": expires_at,
                });
                out.show(&value, || {
                    let list: Vec<String> = workspaces.iter().map(u64::to_string).collect();
                    let mut text = fields(&[
                        ("token", issued.token.clone()),
                        ("public id", issued.public_id.clone()),
                        ("user", user.to_owned()),
                        ("workspaces", list.join(", ")),
                        ("expires", time_s(expires_at)),
                    ]);
                    text.push_str("This token will not be shown again: only its digest is stored.\n");
                    text
                })?;
            }
            Command::Revoke { id } => {
                let id = super::key::public_id_only(&id)?;
                // An API key's id would be revoked just the same; refuse so that a mix-up
                // between the two commands cannot cut off the wrong credential.
                if !id.starts_with(SESSION_PREFIX) {
                    bail!("{id:?} is not a session: sessions start with {SESSION_PREFIX}");
                }
                let public_id = backend.directory().revoke(id).await?;
                let value = json!({"public_id": public_id, "revoked": true});
                out.show(&value, || format!("revoked session {public_id}; {REVOCATION_DELAY}\n"))?;
            }
        }
        Ok(())
    }
}

/// `30s`, `15m`, `1h`, `7d`: a positive whole number and a unit, at most [`MAX_TTL`].
fn parse_ttl(text: &str) -> Result<Duration, String> {
    let usage = || format!("{text:?} is not a duration such as 30m, 1h or 7d");
    let text = text.trim();
    let split = text.len().saturating_sub(1);
    let (number, unit) = (text.get(..split).unwrap_or_default(), text.get(split..));
    let unit_secs: u64 = match unit {
        Some("s") => 1,
        Some("m") => 60,
        Some("h") => 3600,
        Some("d") => 86_400,
        _ => return Err(usage()),
    };
    // `parse` alone would accept a leading `+`.
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(usage());
    }
    let count: u64 = number.parse().map_err(|_| usage())?;
    if count == 0 {
        return Err("the duration must be longer than 0".to_owned());
    }
    match count.checked_mul(unit_secs).map(Duration::from_secs) {
        Some(ttl) if ttl <= MAX_TTL => Ok(ttl),
        _ => Err(format!("{text:?} is longer than the maximum, 365d")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_number_and_a_unit() {
        assert_eq!(parse_ttl("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_ttl("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_ttl("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_ttl("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_ttl("365d"), Ok(MAX_TTL));
    }

    #[test]
    fn zero_garbage_and_huge_durations_are_refused() {
        for bad in [
            "",
            "0h",
            "0s",
            "h",
            "1",
            "1x",
            "-1h",
            "+1h",
            "1.5h",
            "1 h",
            "1hh",
            "éh",
            "1é",
            "366d",
            "99999999999999999999d",
            "18446744073709551615s",
        ] {
            assert!(parse_ttl(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
