//! Walks over a workspace's stored calls that bring them under its data policy (issue 32):
//! the raw-retention sweep, run with the retention sweep, and `callctl workspace
//! apply-policy`. Both rewrite calls through `calls::rewrite` and erase through the erase
//! path, and keep where they stand (`calls::walk`) so that a run cut short is gone on from.

use std::time::Instant;

use futures_util::StreamExt;

use call_ingest_core::privacy::{Policy, Storage};

use crate::backend::{Backend, RETENTION_PARALLEL};
use crate::calls::list::{CallSummary, Listing, MAX_PAGE};
use crate::calls::rewrite::{Change, Winner, LATE_NOTE_PATIENCE_MS};
use crate::calls::walk::{Kind, Walk};
use crate::calls::StoreError;

/// What a walk did in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Progress {
    /// Calls gone through in this run.
    pub calls: u64,
    /// Calls gone through over every run of this walk.
    pub total: u64,
    /// Heads and revisions rewritten (redacted, stripped, or their raw body removed).
    pub rewritten: usize,
    /// Calls erased (past `retention_days`).
    pub erased: usize,
    /// The walk is not finished: the next run goes on from where this one stopped.
    pub unfinished: bool,
    /// The `listed_ms` the walk has reached (newest first), for a progress line.
    pub at_ms: Option<u64>,
    /// Calls that could not be done now (storage failing, the call changing): the walk
    /// stays at their page, and the next run tries them again.
    pub failed: usize,
}

/// What `apply-policy` does to one call.
#[derive(Debug, Clone, Copy)]
struct Apply<'a> {
    policy: &'a Policy,
    identity_key: Option<&'a [u8]>,
    now_ms: u64,
    day_ms: u64,
}

impl Backend {
    /// Removes the raw bodies of `workspace_id`'s calls created more than
    /// `raw_retention_days` ago. Each run goes over the calls listed since the cutoff its
    /// last finished pass reached, up to the new cutoff; a call listed in that range but
    /// created later (sent long after it started) holds the next pass back to it.
    pub async fn sweep_raw(
        &self,
        workspace_id: u64,
        days: u32,
        now_ms: u64,
        deadline: Instant,
    ) -> Result<Progress, StoreError> {
        let store = self.store();
        // Calls revised since their raw bodies were removed: the passes would not come back.
        let (mut again, mut failed) = (0, 0);
        for due in store.raw_due(workspace_id).await? {
            if Instant::now() >= deadline {
                return Ok(Progress { rewritten: again, failed, unfinished: true, ..Progress::default() });
            }
            let change = Change::DropRaw { at_ms: now_ms };
            match store.rewrite_call(workspace_id, &due.call_id, due.id, change).await {
                Ok(done) => {
                    again += done.items;
                    store.settle_raw_due(workspace_id, &due).await?;
                }
                // Its note stays for the next run.
                Err(e) => {
                    failed += 1;
                    tracing::warn!(workspace_id, error = %e, "a call revised after its raw retention not rewritten yet")
                }
            }
        }
        let cutoff = now_ms.saturating_sub(u64::from(days) * self.config.retention_day.ms(workspace_id));
        // Calls created late, below where the passes stand.
        let late = self.sweep_raw_late(workspace_id, cutoff, now_ms, deadline).await?;
        again += late.rewritten;
        failed += late.failed;
        if late.unfinished {
            return Ok(Progress { rewritten: again, failed, unfinished: true, ..Progress::default() });
        }
        let mut walk = store.walk(Kind::RawRetention, workspace_id).await?.unwrap_or_default();
        if walk.target.is_none() {
            if cutoff <= walk.done_to {
                return Ok(Progress { total: walk.count, rewritten: again, failed, ..Progress::default() });
            }
            walk.target = Some(cutoff);
        }
        let target = walk.target.unwrap_or(cutoff);
        let change = Change::DropRaw { at_ms: now_ms };
        let mut progress = self
            .walk(Kind::RawRetention, workspace_id, walk, deadline, move |call| async move {
                if call.created_at >= target {
                    return Ok(Step::Later);
                }
                let done = store.rewrite_call(workspace_id, &call.call_id, call.id, change).await?;
                Ok(Step::Done { rewritten: done.items, erased: 0 })
            })
            .await?;
        progress.rewritten += again;
        progress.failed += failed;
        Ok(progress)
    }

    /// Removes the raw bodies of the calls created late (18 hours or more after they started:
    /// backfills, held reports, pending copies committed after an outage) whose raw is due:
    /// the passes go by the calls' start and may have gone by theirs before they existed.
    /// Each was noted when it was created (`rewrite::raw_late_pk`); the due ones are read a
    /// page at a time, oldest first, and each note deleted once its call is done.
    async fn sweep_raw_late(
        &self,
        workspace_id: u64,
        cutoff: u64,
        now_ms: u64,
        deadline: Instant,
    ) -> Result<Progress, StoreError> {
        let store = self.store();
        let change = Change::DropRaw { at_ms: now_ms };
        let mut progress = Progress::default();
        let mut after = None;
        loop {
            let notes = store.raw_late(workspace_id, cutoff, after.as_ref()).await?;
            let Some(last) = notes.last().cloned() else { return Ok(progress) };
            let done: Vec<Result<usize, StoreError>> = futures_util::stream::iter(notes.iter())
                .map(|late| async move {
                    let (mut items, mut found) = (0, false);
                    for id in &late.ids {
                        let done = store.rewrite_call(workspace_id, &late.call_id, *id, change).await?;
                        items += done.items;
                        found |= done.found;
                    }
                    // None of its ids is the call: the creation that won is.
                    if !found {
                        match store.late_winner(workspace_id, &late.call_id, cutoff).await? {
                            Winner::Due(id) => {
                                let done = store.rewrite_call(workspace_id, &late.call_id, id, change).await?;
                                items += done.items;
                                found |= done.found;
                            }
                            Winner::Renoted => found = true,
                            Winner::Missing => {}
                        }
                    }
                    // Its call not there (yet: the note is written before the head), and
                    // noted lately: kept for a later run (a reviewer's find: settled now, a
                    // head put just after would keep its raw body).
                    if found || now_ms.saturating_sub(late.noted_at) > LATE_NOTE_PATIENCE_MS {
                        store.settle_raw_late(workspace_id, late).await?;
                    }
                    Ok(items)
                })
                .buffered(RETENTION_PARALLEL)
                .collect()
                .await;
            for one in done {
                match one {
                    Ok(items) => {
                        progress.calls += 1;
                        progress.rewritten += items;
                    }
                    Err(e) => {
                        progress.failed += 1;
                        tracing::warn!(workspace_id, error = %e, "a call created late not rewritten yet");
                    }
                }
            }
            // A note that failed stays: the next run tries it again.
            if Instant::now() >= deadline {
                progress.unfinished = true;
                return Ok(progress);
            }
            after = Some(last);
        }
    }

    /// Applies `workspace_id`'s policy (as it is now) to every call it stored: a call past
    /// `retention_days` is erased, the others tightened to its `storage` and their raw
    /// bodies removed past `raw_retention_days`. Goes on from where the last run stopped
    /// (`restart`: from the newest call again); stops at `deadline` or after `max_calls`.
    pub async fn apply_policy(
        &self,
        workspace_id: u64,
        restart: bool,
        deadline: Instant,
        max_calls: Option<u64>,
    ) -> Result<Progress, StoreError> {
        let store = self.store();
        let directory = self.directory();
        let lookup = crate::directory::Lookup::default();
        let patience = (std::time::Duration::from_secs(10), std::time::Duration::from_secs(10));
        let read = directory.policy_for(&lookup, workspace_id, patience).await?;
        let key = match (read.policy.storage, self.sealer()) {
            (Storage::Everything, _) => None,
            (_, Some(sealer)) => Some(directory.identity_key(sealer, workspace_id, &read).await?),
            (_, None) => return Err(StoreError::Internal("applying a policy needs KMS (the identity key)".into())),
        };
        let now_ms = crate::calls::now_ms();
        // A walk begun under another policy (tightened again since) starts afresh: the calls
        // it passed hold the policy they were given then (a reviewer's find).
        let applying = serde_json::to_string(&read.policy).unwrap_or_default();
        let mut walk = match restart {
            true => None,
            false => store.walk(Kind::ApplyPolicy, workspace_id).await?.filter(|w| w.note == applying),
        }
        .unwrap_or_else(|| Walk { note: applying, ..Walk::default() });
        // One pass over every call stored before it began.
        walk.target.get_or_insert(now_ms + 1);
        let apply = Apply {
            policy: &read.policy,
            identity_key: key.as_deref(),
            now_ms,
            day_ms: self.config.retention_day.ms(workspace_id),
        };
        let budget = std::sync::atomic::AtomicU64::new(max_calls.unwrap_or(u64::MAX));
        let budget = &budget;
        let mut progress = self
            .walk(Kind::ApplyPolicy, workspace_id, walk, deadline, move |call| async move {
                if budget
                    .fetch_update(std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst, |b| {
                        b.checked_sub(1)
                    })
                    .is_err()
                {
                    return Ok(Step::Stop);
                }
                self.apply_to(workspace_id, &call, apply).await
            })
            .await?;
        if !progress.unfinished {
            store.end_walk(Kind::ApplyPolicy, workspace_id).await?;
            progress.at_ms = None;
        }
        Ok(progress)
    }

    /// `apply`'s policy on one call.
    async fn apply_to(&self, workspace_id: u64, call: &CallSummary, apply: Apply<'_>) -> Result<Step, StoreError> {
        let store = self.store();
        let age = apply.now_ms.saturating_sub(call.created_at);
        let past = |days: Option<u32>| days.is_some_and(|d| age > u64::from(d) * apply.day_ms);
        if past(apply.policy.retention_days) {
            let erased = store.erase_everything(workspace_id, &call.call_id, call.id).await?;
            return Ok(Step::Done { rewritten: 0, erased: usize::from(erased > 0) });
        }
        let mut rewritten = 0;
        if apply.policy.storage != Storage::Everything {
            let change = Change::Tighten {
                storage: apply.policy.storage,
                kinds: apply.policy.pii_entities,
                identity_key: apply.identity_key,
            };
            rewritten += store.rewrite_call(workspace_id, &call.call_id, call.id, change).await?.items;
        }
        if past(apply.policy.raw_retention_days) {
            let change = Change::DropRaw { at_ms: apply.now_ms };
            rewritten += store.rewrite_call(workspace_id, &call.call_id, call.id, change).await?.items;
        }
        Ok(Step::Done { rewritten, erased: 0 })
    }

    /// Goes through the calls of `walk`'s pass, newest first, a page at a time, `step` on
    /// each (a few at once), keeping where it stands after each page.
    async fn walk<F, Fut>(
        &self,
        kind: Kind,
        workspace_id: u64,
        mut walk: Walk,
        deadline: Instant,
        step: F,
    ) -> Result<Progress, StoreError>
    where
        F: Fn(CallSummary) -> Fut + Copy,
        Fut: std::future::Future<Output = Result<Step, StoreError>>,
    {
        let store = self.store();
        let mut progress = Progress { total: walk.count, ..Progress::default() };
        let Some(target) = walk.target else { return Ok(progress) };
        loop {
            if Instant::now() >= deadline {
                progress.unfinished = true;
                return Ok(progress);
            }
            let listing = Listing {
                workspace_id,
                agent_id: None,
                from_ms: walk.done_to,
                to_ms: target.saturating_sub(1),
                after: walk.after.clone(),
                limit: MAX_PAGE,
            };
            let page = store.list_calls(&listing).await?;
            let steps: Vec<_> = futures_util::stream::iter(page.calls.iter().cloned())
                .map(|call| async move { (call.listed_ms, step(call).await) })
                .buffered(RETENTION_PARALLEL)
                .collect()
                .await;
            let failed = steps.iter().filter(|(_, step)| step.is_err()).count();
            if failed > 0 {
                // One call's failure holds the walk at this page (the rest of it is done
                // again next time, which changes nothing) and stops this workspace's run,
                // never the sweep of the others.
                let first = steps.iter().find_map(|(_, step)| step.as_ref().err().map(ToString::to_string));
                tracing::warn!(workspace_id, failed, error = first.unwrap_or_default(), "calls not rewritten yet");
                progress.failed += failed;
                progress.unfinished = true;
                store.save_walk(kind, workspace_id, &walk).await?;
                return Ok(progress);
            }
            for (listed_ms, step) in steps {
                match step? {
                    Step::Done { rewritten, erased } => {
                        progress.calls += 1;
                        progress.rewritten += rewritten;
                        progress.erased += erased;
                        walk.count += 1;
                    }
                    Step::Later => walk.stall = Some(walk.stall.map_or(listed_ms, |s| s.min(listed_ms))),
                    Step::Stop => {
                        // Where it stands is the page's start: the calls of this page are
                        // gone through again, which changes nothing the second time.
                        progress.unfinished = true;
                        progress.total = walk.count;
                        store.save_walk(kind, workspace_id, &walk).await?;
                        return Ok(progress);
                    }
                }
                progress.at_ms = Some(listed_ms);
            }
            progress.total = walk.count;
            match page.next {
                Some(next) => walk.after = Some(next),
                None => {
                    walk.done_to = walk.stall.unwrap_or(target).min(target);
                    walk.target = None;
                    walk.after = None;
                    walk.stall = None;
                    store.save_walk(kind, workspace_id, &walk).await?;
                    return Ok(progress);
                }
            }
            store.save_walk(kind, workspace_id, &walk).await?;
        }
    }
}

/// What a walk's step did to one call.
enum Step {
    Done {
        rewritten: usize,
        erased: usize,
    },
    /// Not yet: the pass after the next cutoff takes it.
    Later,
    /// The run's budget is spent.
    Stop,
}
