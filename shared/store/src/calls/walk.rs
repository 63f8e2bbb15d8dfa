//! Where a walk over a workspace's calls stands, kept so that the next run goes on from
//! there: the raw-retention sweep (which run after run goes over the calls listed since the
//! last cutoff it finished) and `callctl workspace apply-policy` (one pass over every call,
//! resumable). One item per walk and workspace, `WALK#<kind>#<workspace>` in the calls table.

use super::item::{get_s, get_u64, n, s};
use super::list::Position;
use super::{Store, StoreError};

/// A walk's kind: its items' key and the attribute names are the same for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Raw bodies past `raw_retention_days` removed (`Backend::sweep_raw`).
    RawRetention,
    /// A policy applied to the stored calls (`Backend::apply_policy`).
    ApplyPolicy,
}

impl Kind {
    fn pk(self, workspace_id: u64) -> String {
        let kind = match self {
            Kind::RawRetention => "RAW",
            Kind::ApplyPolicy => "APPLY",
        };
        format!("WALK#{kind}#{workspace_id}")
    }
}

const SK: &str = "STATE";

/// Where a walk stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walk {
    /// Calls listed before this (`listed_ms`) are done.
    pub done_to: u64,
    /// The pass under way: calls listed from `done_to` to before this.
    pub target: Option<u64>,
    /// Where in that pass (newest first) the last page ended.
    pub after: Option<Position>,
    /// The earliest call of the pass it had to leave for a later one (`listed_ms`).
    pub stall: Option<u64>,
    /// Calls the walk has gone through, over all its runs.
    pub count: u64,
    /// What the walk does, as it began (`apply-policy`: the policy it applies).
    pub note: String,
}

impl Store {
    /// Where walk `kind` of `workspace_id` stands (`None`: never run, or finished and ended).
    pub async fn walk(&self, kind: Kind, workspace_id: u64) -> Result<Option<Walk>, StoreError> {
        let Some(item) = self.item(&kind.pk(workspace_id), SK).await? else { return Ok(None) };
        let after = match (get_u64(&item, "after_ms"), get_s(&item, "after_call")) {
            (Some(listed_ms), Some(call_id)) => Some(Position { listed_ms, call_id: call_id.to_owned() }),
            _ => None,
        };
        Ok(Some(Walk {
            done_to: get_u64(&item, "done_to").unwrap_or(0),
            target: get_u64(&item, "target"),
            after,
            stall: get_u64(&item, "stall"),
            count: get_u64(&item, "count").unwrap_or(0),
            note: get_s(&item, "note").unwrap_or_default().to_owned(),
        }))
    }

    /// Keeps where walk `kind` of `workspace_id` stands. The last write wins: two runs at
    /// once each do work the other does too, which changes nothing the second time.
    pub async fn save_walk(&self, kind: Kind, workspace_id: u64, walk: &Walk) -> Result<(), StoreError> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(kind.pk(workspace_id)))
            .item("sk", s(SK))
            .item("done_to", n(walk.done_to))
            .item("count", n(walk.count))
            .item("note", s(walk.note.clone()))
            .item("saved_at", n(super::now_ms()));
        if let Some(target) = walk.target {
            put = put.item("target", n(target));
        }
        if let Some(stall) = walk.stall {
            put = put.item("stall", n(stall));
        }
        if let Some(after) = &walk.after {
            put = put.item("after_ms", n(after.listed_ms)).item("after_call", s(after.call_id.clone()));
        }
        put.send().await.map_err(StoreError::from_sdk)?;
        Ok(())
    }

    /// Ends walk `kind` of `workspace_id`: the next starts afresh.
    pub async fn end_walk(&self, kind: Kind, workspace_id: u64) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(kind.pk(workspace_id)))
            .key("sk", s(SK))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(())
    }
}
