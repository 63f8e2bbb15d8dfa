//! API keys and session tokens: how they look, how a request carries them, and the pure
//! decisions (401 / 403 / 404) over what the directory holds for them.

use sha2::{Digest, Sha256};

use super::item_keys::{field_s, field_u64};
use super::scopes::{Scope, Scopes};
use crate::calls::item::Item;
use call_ingest_core::call::hex;

/// Prefix of API keys: lets secret scanners recognise a leaked one.
pub const API_KEY_PREFIX: &str = "cik_";
/// Prefix of session tokens.
pub const SESSION_PREFIX: &str = "cis_";
/// Random bytes in a secret: 192 bits, 160 of them never shown after creation.
const SECRET_BYTES: usize = 24;
/// Length of the public id: the prefix and the first 8 hex digits of the secret.
pub const PUBLIC_ID_LEN: usize = 12;

/// The kinds of credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ApiKey,
    Session,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ApiKey => "api_key",
            Kind::Session => "session",
        }
    }
    fn prefix(self) -> &'static str {
        match self {
            Kind::ApiKey => API_KEY_PREFIX,
            Kind::Session => SESSION_PREFIX,
        }
    }
}

/// A freshly made secret: shown once, stored only as its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub token: String,
    pub public_id: String,
    pub digest: String,
}

impl Secret {
    /// A new random secret of `kind`.
    pub fn generate(kind: Kind) -> Result<Secret, getrandom::Error> {
        let mut bytes = [0u8; SECRET_BYTES];
        getrandom::getrandom(&mut bytes)?;
        Ok(Secret::from_token(format!("{}{}", kind.prefix(), hex(&bytes))))
    }

    /// A secret with a given token (fixtures and the events' example key).
    pub fn from_token(token: String) -> Secret {
        let public_id = public_id(&token);
        Secret { digest: digest(&token), public_id, token }
    }
}

/// SHA-256 of a token, hex: the only form in which a secret is stored.
pub fn digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// The part of a token that may be shown and used to name it (`cik_1a2b3c4d`).
pub fn public_id(token: &str) -> String {
    token.chars().take(PUBLIC_ID_LEN).collect()
}

/// Why a request is not allowed, in the contract's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// 401: no credential, a malformed one, or one we do not accept here.
    #[error("missing, malformed, unknown, revoked or expired credential")]
    Unauthorized,
    /// 403: a valid credential, but not for this workspace.
    #[error("the credential is not valid for this workspace")]
    Forbidden,
    /// 404: the agent does not exist in the credential's workspace.
    #[error("no such agent in this workspace")]
    AgentNotFound,
    /// 403: a valid credential without the scope the endpoint needs.
    #[error("the API key lacks the `{0}` scope")]
    MissingScope(Scope),
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// An API key of one workspace.
    ApiKey { workspace_id: u64, public_id: String, scopes: Scopes },
    /// A user's session, valid for the workspaces the user is a member of.
    Session { user: String, workspaces: Vec<u64>, public_id: String },
}

impl Principal {
    /// The workspace a call is stored in: the one asked for, if the principal may use it;
    /// an API key's own when none is asked for (operation A).
    pub fn workspace(&self, asked: Option<u64>) -> Result<u64, Denied> {
        match (self, asked) {
            (Principal::ApiKey { workspace_id, .. }, None) => Ok(*workspace_id),
            (Principal::ApiKey { workspace_id, .. }, Some(w)) if *workspace_id == w => Ok(w),
            (Principal::Session { workspaces, .. }, Some(w)) if workspaces.contains(&w) => Ok(w),
            _ => Err(Denied::Forbidden),
        }
    }

    /// What the principal may do: an API key what it was given, a session everything.
    pub fn scopes(&self) -> Scopes {
        match self {
            Principal::ApiKey { scopes, .. } => *scopes,
            Principal::Session { .. } => Scopes::ALL,
        }
    }

    /// 403 naming `scope` unless the principal has it.
    pub fn require(&self, scope: Scope) -> Result<(), Denied> {
        match self.scopes().allows(scope) {
            true => Ok(()),
            false => Err(Denied::MissingScope(scope)),
        }
    }
}

/// Whether an endpoint takes session tokens (operation A does not: its contract knows
/// API keys only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    Accepted,
    Refused,
}

/// Decides who the credential item (as looked up by digest) belongs to, at `now_s`.
pub fn authenticate(credential: Option<&Item>, sessions: Sessions, now_s: u64) -> Result<Principal, Denied> {
    let item = credential.ok_or(Denied::Unauthorized)?;
    if item.contains_key("revoked_at") {
        return Err(Denied::Unauthorized);
    }
    let public_id = field_s(item, "public_id").unwrap_or_default().to_owned();
    match field_s(item, "kind") {
        Some("api_key") => {
            let workspace_id = field_u64(item, "workspace_id").ok_or(Denied::Unauthorized)?;
            Ok(Principal::ApiKey { workspace_id, public_id, scopes: Scopes::of_item(item) })
        }
        Some("session") if sessions == Sessions::Accepted => {
            let expires = field_u64(item, "expires_at").ok_or(Denied::Unauthorized)?;
            if expires <= now_s {
                return Err(Denied::Unauthorized);
            }
            let workspaces = item
                .get("workspaces")
                .and_then(|v| v.as_ns().ok())
                .map(|ns| ns.iter().filter_map(|n| n.parse().ok()).collect())
                .unwrap_or_default();
            Ok(Principal::Session { user: field_s(item, "user").unwrap_or_default().to_owned(), workspaces, public_id })
        }
        _ => Err(Denied::Unauthorized),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_random_and_recognisable() {
        let a = Secret::generate(Kind::ApiKey).unwrap();
        let b = Secret::generate(Kind::ApiKey).unwrap();
        assert_ne!(a.token, b.token);
        assert!(a.token.starts_with("cik_") && a.token.len() == 4 + 48);
        assert_eq!(a.public_id.len(), PUBLIC_ID_LEN);
        assert_eq!(a.digest, digest(&a.token));
        assert!(!a.digest.contains(&a.token[4..]));
    }
}
