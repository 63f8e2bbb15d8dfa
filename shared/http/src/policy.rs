//! The data policy a call is stored under: its workspace's, tightened by the request's
//! `X-Data-Policy` header (never loosened), applied to the document before anything of it
//! is written (`privacy::apply`).

use std::time::Duration;

use lambda_http::Request;

use crate::problems::storage_problem;
use crate::Backend;
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_core::call::CallDocument;
use call_ingest_core::privacy::{self, Kind, Policy, Storage};
use call_ingest_store::calls::StoreError;
use call_ingest_store::directory::Lookup;

/// The header a request tightens its call's policy with.
pub(crate) const HEADER: &str = "x-data-policy";

/// How long KMS gets to open a workspace's identity key (then cached for minutes).
const OPEN_WITHIN: Duration = Duration::from_secs(2);

/// The storage the request asks for (`X-Data-Policy`): none, or one of `everything`,
/// `redacted`, `metadata_only` (422 for anything else).
/// Sent more than once, the strictest counts.
pub(crate) fn asked(request: &Request) -> Result<Storage, Problem> {
    let mut asked = Storage::Everything;
    for value in request.headers().get_all(HEADER) {
        let storage = value.to_str().ok().and_then(Storage::parse).ok_or_else(|| {
            Problem::invalid(vec![Violation::new(
                "/headers/x-data-policy",
                Code::OneOf,
                "must be one of everything, redacted, metadata_only",
            )])
        })?;
        asked = asked.max(storage);
    }
    Ok(asked)
}

/// A policy ready to apply: with the workspace's identity key when it changes calls.
pub(crate) struct Protection {
    pub policy: Policy,
    key: Option<Vec<u8>>,
}

impl Protection {
    /// The policy of `workspace_id` tightened to `asked`, and its key opened: 503 when
    /// either cannot be had now (a call is never stored under a policy guessed).
    pub(crate) async fn read(
        backend: &Backend,
        lookup: &Lookup,
        workspace_id: u64,
        asked: Storage,
        within: (Duration, Duration),
    ) -> Result<Protection, Problem> {
        let unreadable = |e| storage_problem(e, "the workspace's data policy could not be read");
        let found = backend.directory().policy_for(lookup, workspace_id, within).await.map_err(unreadable)?;
        let policy = found.policy.tightened(asked);
        if policy.storage == Storage::Everything {
            return Ok(Protection { policy, key: None });
        }
        let key = match (backend.sealer(), found.sealed_key.is_some()) {
            (Some(sealer), true) => {
                let open = backend.directory().identity_key(sealer, workspace_id, &found);
                let opened = tokio::time::timeout(OPEN_WITHIN, open).await.unwrap_or_else(|_| {
                    Err(StoreError::Unavailable("KMS did not open the identity key in time".into()))
                });
                Some(opened.map_err(unreadable)?)
            }
            // The workspace's own policy changes calls: its key is needed (never a weaker
            // identity because KMS is not configured here).
            _ if found.policy.storage != Storage::Everything => {
                return Err(unreadable(StoreError::Internal(format!(
                    "workspace {workspace_id}'s identity key cannot be opened here (no KMS client or no sealed key)"
                ))))
            }
            // Tightened by a request in a workspace that never set a policy (so has no key):
            // the identity is the digest of the document as stored, which tells nothing
            // the document does not, and a replay still matches it.
            _ => None,
        };
        Ok(Protection { policy, key })
    }

    /// Applies the policy to `doc` (of `agent_id`, in `workspace_id`): under `redacted` with
    /// a model whose kinds the policy keeps, what the model finds in the turns (within
    /// `pii_model::WITHIN`) is replaced with the rules'.
    pub(crate) async fn apply(&self, backend: &Backend, doc: &mut CallDocument, workspace_id: u64, agent_id: &str) {
        if let Some(key) = &self.key {
            privacy::identify(doc, &self.policy, key, agent_id);
        }
        let kinds = self.policy.pii_entities;
        let model = match (self.policy.storage, self.policy.pii_model) {
            (Storage::Redacted, Some(model)) if Kind::MODEL.iter().any(|k| kinds.contains(*k)) => {
                Some(crate::pii_model::find(backend, workspace_id, doc, model.language, kinds).await)
            }
            _ => None,
        };
        privacy::restrict_with(doc, self.policy.storage, kinds, model.as_ref());
    }
}
