//! Retention: a call past its workspace's `retention_days` (counted from its `created_at`)
//! is erased by the same path as an erase by id ([`Store::erase_everything`]: its traces,
//! then the call, its frames, pending and held copies, then traces that joined meanwhile),
//! by a scheduled sweep (`Backend::sweep_retention`).
//!
//! The sweep finds a workspace's expired calls in its listing index (calls by
//! `listed_ms`, the call's start, else when it was first received): a call created before
//! the cutoff started before it (a call is sent after it ends), so the calls listed before
//! the cutoff hold every expired one; those created after it (sent long after they
//! happened) are passed over. A call whose start is later than when it was received (a
//! client's clock ahead) is found once the cutoff passes its start.

use super::list::{Listing, MAX_PAGE};
use super::{Store, StoreError};

/// Pages of a workspace's listing one sweep reads at the most.
const MAX_PAGES: usize = 20;

/// A call to erase: its id and provider call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    pub id: u64,
    pub call_id: String,
}

impl Store {
    /// Erases everything of call `id` (provider call id `call_id`) of `workspace_id`, as an
    /// erase by id does: its traces first, while the call exists to join them; the call;
    /// then again the traces, for one that joined it meanwhile. Answers the call's items
    /// removed (0: nothing of it was left).
    pub async fn erase_everything(&self, workspace_id: u64, call_id: &str, id: u64) -> Result<usize, StoreError> {
        self.erase_everything_until(workspace_id, call_id, id, None).await
    }

    /// [`Store::erase_everything`], given up (`Unavailable`) at `until`, but never once the
    /// call is buried ([`Store::erase_call_until`]): what follows, its clean-up and the
    /// traces that joined it meanwhile, is finished whatever the time.
    pub async fn erase_everything_until(
        &self,
        workspace_id: u64,
        call_id: &str,
        id: u64,
        until: Option<tokio::time::Instant>,
    ) -> Result<usize, StoreError> {
        super::erase::before(until, Box::pin(self.erase_traces(workspace_id, call_id, id))).await?;
        let erased = self.erase_call_until(workspace_id, call_id, id, until).await?;
        Box::pin(self.erase_traces(workspace_id, call_id, id)).await?;
        Ok(erased.items)
    }

    /// Up to `limit` calls of `workspace_id` created before `cutoff_ms`.
    pub async fn expired(&self, workspace_id: u64, cutoff_ms: u64, limit: usize) -> Result<Vec<Expired>, StoreError> {
        let mut out = Vec::new();
        let mut after = None;
        for _ in 0..MAX_PAGES {
            let listing = Listing {
                workspace_id,
                agent_id: None,
                from_ms: 0,
                to_ms: cutoff_ms.saturating_sub(1),
                after,
                limit: MAX_PAGE,
            };
            let page = self.list_calls(&listing).await?;
            let old = page.calls.into_iter().filter(|c| c.created_at < cutoff_ms);
            out.extend(old.map(|c| Expired { id: c.id, call_id: c.call_id }));
            if out.len() >= limit || page.next.is_none() {
                break;
            }
            after = page.next;
        }
        out.truncate(limit);
        Ok(out)
    }
}
