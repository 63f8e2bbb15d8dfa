//! A workspace's data policy (`privacy::Policy`), kept on its item in the Directory table,
//! and the workspace's identity key (sealed with KMS, as hooks' secrets are), which keys
//! the identity of calls its policy changes (`privacy::identity`).
//!
//! A sending function reads the policy with the workspace's other settings: from the
//! instance's cache (at most its lifetime old, 60 s), else from the table. When the table
//! cannot be read, the item this instance read in the last [`super::OUTAGE_GRACE`] stands
//! in, as it does for the credential that authorised the call; with none, the answer is an
//! error (503): never a default.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use call_ingest_core::privacy::{Kinds, Language, PiiModel, Policy, Storage};

use super::item_keys::*;
use super::sealing::Sealer;
use super::{Directory, Lookup, Recent};
use crate::calls::item::Item;
use crate::calls::StoreError;

/// Attributes of the workspace item.
pub(super) const STORAGE: &str = "storage";
pub(super) const RETENTION_DAYS: &str = "retention_days";
pub(super) const RAW_RETENTION_DAYS: &str = "raw_retention_days";
pub(super) const PII_ENTITIES: &str = "pii_entities";
/// `aws_comprehend:<language>`, when the workspace has a model besides the rules.
pub(super) const PII_MODEL: &str = "pii_model";
pub(super) const IDENTITY_KEY: &str = "identity_key";
/// The item that lists the workspaces with a retention (`retention_ids`, a number set):
/// what the retention sweep reads first.
pub(super) const REGISTRY_PK: &str = "POLICIES";
pub(super) const REGISTRY_SK: &str = "RETENTION";
pub(super) const REGISTERED: &str = "retention_ids";

/// What the identity key's seal binds (the sealing's "hook" slot): no hook has this id.
pub(super) const IDENTITY_CONTEXT: &str = "workspace-identity";

/// A workspace's policy as a sending function needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePolicy {
    pub policy: Policy,
    /// The identity key, sealed; set once a policy other than `everything` was set.
    pub sealed_key: Option<Vec<u8>>,
}

/// The policy the workspace item `item` holds (none set: `everything`, every kind).
pub fn policy_of(item: &Item) -> Result<Policy, String> {
    let storage = match field_s(item, STORAGE) {
        None => Storage::Everything,
        Some(name) => Storage::parse(name).ok_or_else(|| format!("unknown storage {name:?}"))?,
    };
    let days = |name: &str| field_u64(item, name).map(|d| u32::try_from(d).unwrap_or(u32::MAX));
    let pii_entities = match item.get(PII_ENTITIES) {
        None => Kinds::all(),
        Some(AttributeValue::S(list)) => Kinds::parse(list)?,
        Some(_) => return Err("pii_entities is not a list of kinds".into()),
    };
    let pii_model = match field_s(item, PII_MODEL) {
        None => None,
        Some(text) => Some(model_of(text).ok_or_else(|| format!("unknown pii_model {text:?}"))?),
    };
    let policy = Policy {
        storage,
        retention_days: days(RETENTION_DAYS),
        raw_retention_days: days(RAW_RETENTION_DAYS),
        pii_entities,
        pii_model,
    };
    policy.check()?;
    Ok(policy)
}

/// A model as the workspace item keeps it: `aws_comprehend:<language>`.
pub(super) fn model_text(model: PiiModel) -> String {
    format!("{}:{}", PiiModel::NAME, model.language.as_str())
}

fn model_of(text: &str) -> Option<PiiModel> {
    let (name, language) = text.split_once(':')?;
    (name == PiiModel::NAME).then_some(())?;
    Some(PiiModel { language: Language::parse(language)? })
}

/// The workspace id a workspace item's key names (`WS#<id>`).
fn workspace_of(item: &Item) -> Option<u64> {
    field_s(item, "pk")?.strip_prefix("WS#")?.parse().ok()
}

fn sealed_key_of(item: &Item) -> Option<Vec<u8>> {
    match item.get(IDENTITY_KEY) {
        Some(AttributeValue::B(b)) => Some(b.as_ref().to_vec()),
        _ => None,
    }
}

impl Directory {
    /// The policy of `workspace_id` for a call being sent (see the module's notes): from
    /// `lookup` (operation B reads the workspace with the credential), the cache, else one
    /// read, waiting at most `within` for it when this instance read the item in the last
    /// minutes (it stands in after that), else `alone`.
    pub async fn policy_for(
        &self,
        lookup: &Lookup,
        workspace_id: u64,
        (within, alone): (Duration, Duration),
    ) -> Result<WorkspacePolicy, StoreError> {
        let pk = workspace_pk(workspace_id);
        let item = match self.known_workspace(lookup, workspace_id) {
            Some(item) => Some(item),
            None => {
                let within = match self.cache.get_recent(&pk, super::OUTAGE_GRACE) {
                    Some(_) => within,
                    None => alone,
                };
                // Read afresh (never an item kept from before: `Recent::Refused`), and cached
                // only when read now; when the table cannot answer, the item this instance
                // read in the last minutes stands in without being renewed, so the grace
                // runs out and a policy changed meanwhile is not held off for good.
                let read = self.read(std::iter::once((pk.as_str(), WORKSPACE_SK)), Recent::Refused);
                match tokio::time::timeout(within, read).await {
                    Ok(Ok(mut found)) => {
                        let item = found.remove(&pk);
                        if let Some(item) = &item {
                            self.cache.put(pk.clone(), item.clone());
                        }
                        item
                    }
                    Ok(Err(e @ StoreError::Internal(_))) => return Err(e),
                    failed => match self.cache.get_recent(&pk, super::OUTAGE_GRACE) {
                        Some(item) => {
                            tracing::warn!(
                                workspace_id,
                                "workspace unreadable; its policy read in the last minutes used"
                            );
                            Some(item)
                        }
                        None => {
                            return Err(match failed {
                                Ok(Err(e)) => e,
                                _ => StoreError::Unavailable(format!(
                                    "the workspace's policy was not read within {within:?}"
                                )),
                            })
                        }
                    },
                }
            }
        };
        // A workspace with no item has no policy set: `everything`.
        let Some(item) = item else { return Ok(WorkspacePolicy { policy: Policy::default(), sealed_key: None }) };
        let policy = policy_of(&item).map_err(|e| StoreError::Internal(format!("workspace {workspace_id}: {e}")))?;
        Ok(WorkspacePolicy { policy, sealed_key: sealed_key_of(&item) })
    }

    /// The workspace's identity key, opened (KMS, cached by the sealer for minutes).
    pub async fn identity_key(
        &self,
        sealer: &Sealer,
        workspace_id: u64,
        policy: &WorkspacePolicy,
    ) -> Result<Vec<u8>, StoreError> {
        let sealed = policy.sealed_key.as_deref().ok_or_else(|| {
            StoreError::Internal(format!("workspace {workspace_id} has a policy but no identity key"))
        })?;
        sealer.open(sealed, IDENTITY_CONTEXT, workspace_id).await
    }

    /// The workspaces with a retention (of their calls or raw bodies), and their policies (read now, not cached: the
    /// retention sweep's).
    pub async fn retention_policies(&self) -> Result<Vec<(u64, Policy)>, StoreError> {
        let ids: Vec<u64> =
            match self.get(REGISTRY_PK.to_owned(), REGISTRY_SK).await?.and_then(|i| i.get(REGISTERED).cloned()) {
                Some(AttributeValue::Ns(ids)) => ids.iter().filter_map(|id| id.parse().ok()).collect(),
                _ => Vec::new(),
            };
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let pks: Vec<String> = chunk.iter().map(|id| workspace_pk(*id)).collect();
            let keys: Vec<(&str, &str)> = pks.iter().map(|pk| (pk.as_str(), WORKSPACE_SK)).collect();
            for item in self.batch_get(&keys).await? {
                let (Some(id), Ok(policy)) =
                    (field_u64(&item, "workspace_id").or_else(|| workspace_of(&item)), policy_of(&item))
                else {
                    continue;
                };
                if policy.retention_days.or(policy.raw_retention_days).is_some() {
                    out.push((id, policy));
                }
            }
        }
        out.sort_by_key(|(id, _)| *id);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::item::{n, s};

    #[test]
    fn an_item_without_a_policy_is_everything_and_a_bad_one_is_an_error() {
        let mut item = Item::new();
        assert_eq!(policy_of(&item), Ok(Policy::default()));
        item.insert(STORAGE.into(), s("redacted"));
        item.insert(PII_ENTITIES.into(), s("email,ssn"));
        item.insert(RETENTION_DAYS.into(), n(30));
        let p = policy_of(&item).unwrap();
        assert_eq!(p.storage, Storage::Redacted);
        assert_eq!(p.pii_entities.names(), ["email", "ssn"]);
        assert_eq!(p.retention_days, Some(30));
        item.insert(STORAGE.into(), s("nothing"));
        assert!(policy_of(&item).is_err());
    }
}
