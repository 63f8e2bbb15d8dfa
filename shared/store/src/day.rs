//! A day's length for retention (`config::Config::retention_day`).

/// A day's length for retention. 86,400,000 ms, unless `RETENTION_DAY_SECONDS` shortens
/// it, which only the local stack does (its tests' calls expire in seconds; `template.rs`
/// asserts AWS never sets it): for every workspace, or only for those
/// `RETENTION_DAY_WORKSPACES` lists (comma-separated ids), so that the history checker's
/// retention workspaces live short days while the other clients' calls keep production's
/// (each call of theirs would otherwise be created late, and noted: a write more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionDay {
    short_ms: u64,
    only: Option<Vec<u64>>,
}

impl RetentionDay {
    /// A day: 86,400,000 ms.
    pub const MS: u64 = 86_400_000;

    /// Days of `short_ms` for the workspaces `only` names, or for every one.
    pub fn new(short_ms: u64, only: Option<Vec<u64>>) -> RetentionDay {
        RetentionDay { short_ms, only }
    }

    /// Days of `ms` for every workspace (tests).
    pub fn every(ms: u64) -> RetentionDay {
        RetentionDay { short_ms: ms, only: None }
    }

    /// A day's length, in ms, for `workspace_id`.
    pub fn ms(&self, workspace_id: u64) -> u64 {
        match &self.only {
            Some(ids) if !ids.contains(&workspace_id) => Self::MS,
            _ => self.short_ms,
        }
    }
}

impl Default for RetentionDay {
    fn default() -> Self {
        RetentionDay::every(Self::MS)
    }
}
