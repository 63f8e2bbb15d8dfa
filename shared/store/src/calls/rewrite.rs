//! Rewriting a stored call's content in place, for a data policy that changed after it was
//! stored (issue 32): tightened to a stricter `storage` (`callctl workspace apply-policy`),
//! or its raw bodies removed once past `raw_retention_days` (the retention sweep). Every
//! revision is rewritten, the head and the kept ones; ids, revisions, tokens and times stay.
//!
//! A frame in S3 is never changed: the new content goes to a new object (the submission's
//! key and the new frame's digest, `<token>-<digest>`), the items are switched to it on
//! condition that they are as read (`rewrites`, a count of rewrites, and the token that
//! wrote them), then the old object is erased. So a reader sees the old content or the new,
//! never a mix; and nothing of either is left behind an erase:
//! - before writing a new object, the rewrite names it on its item (`frames_written`) and
//!   then finds the head not being erased: an erase marks the head before it reads the items,
//!   so it either finds the name and erases the object (its marker wins over a late PUT) or
//!   began after the rewrite's check, and the rewrite's switch of the head fails on the mark;
//! - an object switched away from is named on the items (`frames_superseded`) in the same
//!   update: a rewrite cut short before erasing it is finished by the next one, and an erase
//!   erases it too;
//! - an item kept by `insert_late` is a clone of the head as read, frame and all: its write is
//!   conditioned on the head's `rewrites` as read (`revise::replacing`), so it never keeps a
//!   frame a rewrite erased.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use sha2::{Digest, Sha256};

use call_ingest_core::call::hex;
use call_ingest_core::privacy::{self, Kinds, Storage};

use super::frames::{Frames, INLINE_MAX};
use super::item::{call_pk, get_s, get_u64, is_erasing, n, s, Item, FRAME_KEY, HEAD, PIECES};
use super::query::SortKeys;
use super::submission::STORAGE;
use super::{codec, Owner, Store, StoreError};

/// On a head or revision: how many times its content was rewritten (absent: never).
pub const REWRITES: &str = "rewrites";
/// On a head or revision: when its raw body was removed (`raw_retention_days`); its raw
/// reads as gone (410) from then on.
pub const RAW_REMOVED_AT: &str = "raw_removed_at";
/// On a head or revision: the S3 keys a rewrite wrote, or was about to write, for it.
pub const FRAMES_WRITTEN: &str = "frames_written";
/// On a head or revision: the S3 keys it was switched away from, erased once no item of the
/// call names them.
pub const FRAMES_SUPERSEDED: &str = "frames_superseded";

/// The partition of the notes that a workspace's calls hold a raw body again, written with
/// a revision over a head whose raw bodies were removed (`revise::raw_due_note`), one per call;
/// the raw sweep rewrites those calls and deletes their notes ([`Store::raw_due`]).
pub fn raw_due_pk(workspace_id: u64) -> String {
    format!("RAWDUE#{workspace_id}")
}

/// The partition of the notes of calls created late: committed 18 hours or more after they
/// started (a backfill, a report held for want of its agent, a pending copy committed after
/// an outage). The raw sweep's passes go by the calls' start and may have gone by it before
/// the call existed, so the sweep reads these notes instead, each once the call's raw is due
/// ([`Store::raw_late`]). Sort key `<created_at, 20 digits>#<call id>`: the due ones are a
/// range.
pub fn raw_late_pk(workspace_id: u64) -> String {
    format!("RAWLATE#{workspace_id}")
}

/// How long a late note whose call the sweep does not find is kept: its head may not be
/// put yet (the note is written first; the put may be retried for seconds).
pub const LATE_NOTE_PATIENCE_MS: u64 = 15 * 60 * 1000;

/// A call created late, noted for the raw sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLate {
    pub call_id: String,
    /// The internal ids created under this provider call id at this time (two creations
    /// that raced: one of them is the call; or a revision that tried creating first).
    pub ids: Vec<u64>,
    /// When an id was last added: the note is written before its head, so a note whose
    /// call is not there yet is kept until [`LATE_NOTE_PATIENCE_MS`] after this.
    pub noted_at: u64,
    sk: String,
    listed: Vec<String>,
}

/// A call noted as holding a raw body again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDue {
    pub call_id: String,
    pub id: u64,
    /// The submission that wrote the note (the latest), so its deletion takes no later one.
    token: String,
}

/// Rounds of read-then-switch before giving up (each lost to a concurrent write).
const MAX_ROUNDS: usize = 8;

/// What to do to a stored call.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Tighten it to `storage` (redacted, or metadata only), replacing `kinds`. With the
    /// workspace's identity key, content stored unchanged is known afterwards by the identity
    /// a send under the policy computes (`privacy::identity`), so its replay stays unchanged.
    Tighten { storage: Storage, kinds: Kinds, identity_key: Option<&'a [u8]> },
    /// Remove its raw bodies, at `at_ms`.
    DropRaw { at_ms: u64 },
}

/// What a rewrite did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Heads and revisions switched to new content.
    pub items: usize,
    /// Whether the call was there (false: gone, another call now, or being erased).
    pub found: bool,
}

/// The call a late note stands for when none of its ids is ([`Store::late_winner`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    /// Its raw is due: rewrite call `id`.
    Due(u64),
    /// Not due yet, and noted under its own creation: the note read can go.
    Renoted,
    /// No call there (not yet: the note goes before the head), or one being erased.
    Missing,
}

/// The new content of one frame (one or more items share a frame: `insert_late`).
struct NewContent {
    packed: codec::Packed,
    raw_bytes: usize,
    digest: Option<String>,
}

impl Store {
    /// Applies `change` to call `id` (provider call id `call_id`) of `workspace_id`: every
    /// revision not already so. Run again, it changes nothing and finishes what a run cut
    /// short left (an old object not yet erased).
    pub async fn rewrite_call(
        &self,
        workspace_id: u64,
        call_id: &str,
        id: u64,
        change: Change<'_>,
    ) -> Result<Rewritten, StoreError> {
        let pk = call_pk(workspace_id, call_id);
        let mut done = Rewritten::default();
        for round in 0..MAX_ROUNDS {
            let items = self.query(&pk, SortKeys::All, None).await?;
            let Some(head) = items.iter().find(|i| get_s(i, "sk") == Some(HEAD)) else { return Ok(done) };
            if get_u64(head, "id") != Some(id) || is_erasing(head) {
                return Ok(done);
            }
            done.found = true;
            self.erase_superseded(&items).await?;
            // Content items by the frame they hold (an inline frame is its item's alone).
            let mut groups: BTreeMap<String, Vec<&Item>> = BTreeMap::new();
            for item in items.iter().filter(|i| i.contains_key("digest")) {
                let frame = get_s(item, FRAME_KEY).map_or_else(|| format!("inline:{}", sk(item)), str::to_owned);
                groups.entry(frame).or_default().push(item);
            }
            let mut lost = false;
            for group in groups.values() {
                if !needs(group[0], change) {
                    continue;
                }
                // Its frame gone: the call is being erased (the next round finds it so), or
                // chunks of an old layout are incomplete. Never "done": a note of the raw
                // sweep is settled only on a call rewritten or gone (a reviewer's find).
                let Some(frame) = self.frame(&pk, group[0]).await? else {
                    lost = true;
                    break;
                };
                let unpacked = codec::unpack(&frame).map_err(|e| StoreError::Internal(e.to_string()))?;
                let Some(content) = new_content(group[0], &unpacked, change)? else { continue };
                let key = match content.packed.frame.len() > INLINE_MAX {
                    false => None,
                    true => match self.write_frame(&pk, workspace_id, call_id, group[0], &content).await? {
                        Some(key) => Some(key),
                        // Changed meanwhile, or being erased: the next round reads it again.
                        None => {
                            lost = true;
                            break;
                        }
                    },
                };
                for item in group {
                    match self.switch(&pk, id, item, &content, key.as_deref(), change).await? {
                        true => done.items += 1,
                        false => lost = true,
                    }
                }
                if lost {
                    break;
                }
            }
            if !lost {
                // The objects switched away from are erased now (a reader that read an item
                // before the switch finds the new one on reading it again: `get_call_at`).
                let items = self.query(&pk, SortKeys::All, None).await?;
                self.erase_superseded(&items).await?;
                return Ok(done);
            }
            tokio::time::sleep(super::backoff(round)).await;
        }
        Err(StoreError::Unavailable("the call kept changing while it was being rewritten".into()))
    }

    /// Writes `content`'s frame to its new object, named first on `item` and only while the
    /// call is not being erased (see the module's notes). `None`: it is (or `item` changed:
    /// the next round reads it again).
    async fn write_frame(
        &self,
        pk: &str,
        workspace_id: u64,
        call_id: &str,
        item: &Item,
        content: &NewContent,
    ) -> Result<Option<String>, StoreError> {
        let token = get_s(item, "submission").unwrap_or_default();
        let digest = hex(&Sha256::digest(&content.packed.frame)[..16]);
        let key = format!("{}-{digest}", Frames::key(workspace_id, call_id, token));
        let named = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk(item)))
            .update_expression("ADD #written :key")
            .expression_attribute_names("#written", FRAMES_WRITTEN)
            .expression_attribute_values(":key", AttributeValue::Ss(vec![key.clone()]));
        let named = as_read(named, item).send().await;
        if !super::error::updated(named)? {
            return Ok(None);
        }
        match self.head(pk).await? {
            Some(head) if !is_erasing(&head) && head.contains_key("id") => {}
            _ => return Ok(None),
        }
        let agent = get_s(item, "agent_id").unwrap_or_default();
        let owner = Owner { workspace_id, agent_id: agent };
        let received = get_u64(item, "updated_at").unwrap_or_default();
        self.frames.put(&key, content.packed.frame.clone().into(), owner, call_id, received).await?;
        Ok(Some(key))
    }

    /// Switches `item` to `content` (at `key` in S3, or inline), on condition that it is as
    /// read (and, for the head, still call `id`, not being erased). Answers whether it did.
    async fn switch(
        &self,
        pk: &str,
        id: u64,
        item: &Item,
        content: &NewContent,
        key: Option<&str>,
        change: Change<'_>,
    ) -> Result<bool, StoreError> {
        let mut set = vec!["#rewrites = :rewrites", "raw_bytes = :raw", "unpacked_bytes = :unpacked"];
        let mut remove = Vec::new();
        let rewrites = get_u64(item, REWRITES).unwrap_or(0) + 1;
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk(item)))
            .expression_attribute_names("#rewrites", REWRITES)
            .expression_attribute_values(":rewrites", n(rewrites))
            .expression_attribute_values(":raw", n(content.raw_bytes))
            .expression_attribute_values(":unpacked", n(content.packed.unpacked_len));
        match key {
            Some(key) => {
                set.extend(["#frame = :frame", "frame_bytes = :frame_bytes"]);
                remove.push("body");
                update = update
                    .expression_attribute_names("#frame", FRAME_KEY)
                    .expression_attribute_values(":frame", s(key))
                    .expression_attribute_values(":frame_bytes", n(content.packed.frame.len()));
                match &content.packed.pieces {
                    Some(pieces) => {
                        set.push("#pieces = :pieces");
                        update = update
                            .expression_attribute_values(":pieces", AttributeValue::B(Blob::new(pieces.to_bytes())));
                    }
                    None => remove.push("#pieces"),
                }
                update = update.expression_attribute_names("#pieces", PIECES);
            }
            None => {
                set.push("body = :body");
                remove.extend(["#frame", "frame_bytes", "#pieces"]);
                update = update
                    .expression_attribute_names("#frame", FRAME_KEY)
                    .expression_attribute_names("#pieces", PIECES)
                    .expression_attribute_values(":body", AttributeValue::B(Blob::new(content.packed.frame.clone())));
            }
        }
        match change {
            // A head records the strictest policy its call had: never lowered.
            Change::Tighten { storage, .. } if storage > super::submission::storage_of(item) => {
                set.push("#storage = :storage");
                update = update
                    .expression_attribute_names("#storage", STORAGE)
                    .expression_attribute_values(":storage", s(storage.as_str()));
            }
            Change::Tighten { .. } => {}
            Change::DropRaw { at_ms } => {
                set.push("#removed = :removed");
                update = update
                    .expression_attribute_names("#removed", RAW_REMOVED_AT)
                    .expression_attribute_values(":removed", n(at_ms));
            }
        }
        if let (Some(digest), Some(sent)) = (&content.digest, get_s(item, "digest")) {
            set.extend(["digest = :digest", "#digest_sent = :digest_sent"]);
            update = update
                .expression_attribute_names("#digest_sent", super::item::DIGEST_SENT)
                .expression_attribute_values(":digest", s(digest.clone()))
                .expression_attribute_values(":digest_sent", s(sent));
        }
        let mut expression = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        let old = get_s(item, FRAME_KEY).filter(|old| Some(*old) != key);
        if let Some(old) = old {
            expression.push_str(" ADD #superseded :old");
            update = update
                .expression_attribute_names("#superseded", FRAMES_SUPERSEDED)
                .expression_attribute_values(":old", AttributeValue::Ss(vec![old.to_owned()]));
        }
        let mut update = as_read(update.update_expression(expression), item);
        if sk(item) == HEAD {
            let condition = update.get_condition_expression().clone().unwrap_or_default();
            update = update
                .condition_expression(format!("{condition} AND #id = :id AND attribute_not_exists(#erasing)"))
                .expression_attribute_names("#id", "id")
                .expression_attribute_names("#erasing", super::item::ERASING)
                .expression_attribute_values(":id", n(id));
        }
        super::error::updated(update.send().await)
    }

    /// Up to a page of `workspace_id`'s calls noted as holding a raw body again.
    pub async fn raw_due(&self, workspace_id: u64) -> Result<Vec<RawDue>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(raw_due_pk(workspace_id)))
            .limit(100)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(out
            .items()
            .iter()
            .filter_map(|i| {
                Some(RawDue {
                    call_id: get_s(i, "sk")?.to_owned(),
                    id: get_u64(i, "id")?,
                    token: get_s(i, "submission").unwrap_or_default().to_owned(),
                })
            })
            .collect())
    }

    /// Notes call `id` (provider call id `call_id`) of `workspace_id`, created at
    /// `created_at`, for the raw sweep ([`raw_late_pk`]). Written before the call is created,
    /// so no call created late lacks one; a creation that then loses leaves a note the sweep
    /// finds nothing for.
    pub(super) async fn note_raw_late(
        &self,
        workspace_id: u64,
        call_id: &str,
        id: u64,
        created_at: u64,
    ) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(raw_late_pk(workspace_id)))
            .key("sk", s(format!("{created_at:020}#{call_id}")))
            .update_expression("ADD ids :id SET call_id = :call, noted_at = :now")
            .expression_attribute_values(":id", AttributeValue::Ns(vec![id.to_string()]))
            .expression_attribute_values(":call", s(call_id))
            .expression_attribute_values(":now", n(super::now_ms()))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(())
    }

    /// Up to a page of `workspace_id`'s calls created late and before `cutoff` (their raw is
    /// due), oldest first, after `after` (the last of the page before).
    pub async fn raw_late(
        &self,
        workspace_id: u64,
        cutoff: u64,
        after: Option<&RawLate>,
    ) -> Result<Vec<RawLate>, StoreError> {
        let pk = raw_late_pk(workspace_id);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk < :cutoff")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":cutoff", s(format!("{cutoff:020}")))
            .limit(100);
        if let Some(last) = after {
            query = query.exclusive_start_key("pk", s(&pk)).exclusive_start_key("sk", s(&last.sk));
        }
        let out = query.send().await.map_err(StoreError::from_sdk)?;
        Ok(out
            .items()
            .iter()
            .filter_map(|i| {
                let listed = match i.get("ids") {
                    Some(AttributeValue::Ns(ids)) => ids.clone(),
                    _ => Vec::new(),
                };
                Some(RawLate {
                    call_id: get_s(i, "call_id")?.to_owned(),
                    ids: listed.iter().filter_map(|id| id.parse().ok()).collect(),
                    noted_at: get_u64(i, "noted_at").unwrap_or(0),
                    sk: get_s(i, "sk")?.to_owned(),
                    listed,
                })
            })
            .collect())
    }

    /// The call now at `call_id` of `workspace_id`, for a late note none of whose ids is
    /// the call: each named a creation that lost to another, such as a retry's while the
    /// first attempt's put was still on its way; the call that won is the one the note stands
    /// for (a reviewer's find: settled without it, its raw body was kept for good). Not due
    /// yet (created after `cutoff`), it is noted under its own creation first, so the note
    /// can go.
    pub async fn late_winner(&self, workspace_id: u64, call_id: &str, cutoff: u64) -> Result<Winner, StoreError> {
        let Some(head) = self.head(&call_pk(workspace_id, call_id)).await? else { return Ok(Winner::Missing) };
        let (Some(id), Some(created_at), false) =
            (get_u64(&head, "id"), get_u64(&head, "created_at"), is_erasing(&head))
        else {
            return Ok(Winner::Missing);
        };
        if created_at < cutoff {
            return Ok(Winner::Due(id));
        }
        self.note_raw_late(workspace_id, call_id, id, created_at).await?;
        Ok(Winner::Renoted)
    }

    /// Deletes `late`'s note unless it was written again meanwhile: the same ids, and the
    /// same `noted_at` (none, on a note written before it had one).
    pub async fn settle_raw_late(&self, workspace_id: u64, late: &RawLate) -> Result<(), StoreError> {
        let pk = raw_late_pk(workspace_id);
        let ids = (":ids", AttributeValue::Ns(late.listed.clone()));
        match late.noted_at {
            0 => {
                let condition = "ids = :ids AND attribute_not_exists(noted_at)";
                self.delete_note_if(pk, &late.sk, condition, &[], vec![ids]).await
            }
            at => {
                let condition = "ids = :ids AND noted_at = :at";
                self.delete_note_if(pk, &late.sk, condition, &[], vec![ids, (":at", n(at))]).await
            }
        }
    }

    /// Deletes the late note of call `call_id` created at `created_at` (erased).
    pub(super) async fn forget_raw_late(
        &self,
        workspace_id: u64,
        call_id: &str,
        created_at: u64,
    ) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(raw_late_pk(workspace_id)))
            .key("sk", s(format!("{created_at:020}#{call_id}")))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(())
    }

    /// Deletes `due`'s note unless a later revision wrote it again meanwhile.
    pub async fn settle_raw_due(&self, workspace_id: u64, due: &RawDue) -> Result<(), StoreError> {
        self.delete_note(raw_due_pk(workspace_id), &due.call_id, ("submission", s(due.token.clone()))).await
    }

    /// Deletes the raw sweep's note of call `id` (erased), not a note of a call stored under
    /// the same provider call id since.
    pub(super) async fn forget_raw_due(&self, workspace_id: u64, call_id: &str, id: u64) -> Result<(), StoreError> {
        self.delete_note(raw_due_pk(workspace_id), call_id, ("id", n(id))).await
    }

    /// Deletes the raw sweep's note `pk` / `sk` while its attribute `name` is `value` (else
    /// it is another's now, and stays).
    async fn delete_note(&self, pk: String, sk: &str, (name, value): (&str, AttributeValue)) -> Result<(), StoreError> {
        self.delete_note_if(pk, sk, "#name = :value", &[("#name", name)], vec![(":value", value)]).await
    }

    /// Deletes the raw sweep's note `pk` / `sk` on `condition` (else it changed, and stays).
    async fn delete_note_if(
        &self,
        pk: String,
        sk: &str,
        condition: &str,
        names: &[(&str, &str)],
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<(), StoreError> {
        let mut delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .condition_expression(condition);
        for (name, attribute) in names {
            delete = delete.expression_attribute_names(*name, *attribute);
        }
        for (name, value) in values {
            delete = delete.expression_attribute_values(name, value);
        }
        let result = delete.send().await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(()),
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }

    /// Erases the objects the call's items were switched away from that none of them names.
    async fn erase_superseded(&self, items: &[Item]) -> Result<(), StoreError> {
        let named: Vec<&str> = items.iter().filter_map(|i| get_s(i, FRAME_KEY)).collect();
        let mut gone: Vec<&str> = items.iter().flat_map(|i| strings(i, FRAMES_SUPERSEDED)).collect();
        gone.retain(|k| !named.contains(k));
        gone.sort_unstable();
        gone.dedup();
        super::bounded(gone.into_iter().map(|k| self.frames.erase(k))).await?;
        Ok(())
    }
}

/// The strings of a string-set attribute.
pub(super) fn strings<'a>(item: &'a Item, name: &str) -> impl Iterator<Item = &'a str> {
    item.get(name).and_then(|v| v.as_ss().ok()).into_iter().flatten().map(String::as_str)
}

fn sk(item: &Item) -> &str {
    get_s(item, "sk").unwrap_or(HEAD)
}

/// Whether `item` may not yet be as `change` leaves it: a raw body not removed; for a
/// policy, its document says (a head's `storage` is the strictest its call had, which may
/// be stricter than its own content: `insert_late`).
fn needs(item: &Item, change: Change<'_>) -> bool {
    match change {
        Change::Tighten { .. } => true,
        Change::DropRaw { .. } => !item.contains_key(RAW_REMOVED_AT) && get_u64(item, "raw_bytes").unwrap_or(0) > 0,
    }
}

/// The content `item` (unpacked) holds after `change`; `None` when it changes nothing.
fn new_content(item: &Item, unpacked: &codec::Unpacked, change: Change<'_>) -> Result<Option<NewContent>, StoreError> {
    let (document, raw, digest) = match change {
        Change::Tighten { storage, kinds, identity_key } => {
            let Some((document, raw)) = privacy::tighten_stored(&unpacked.document, storage, kinds) else {
                return Ok(None);
            };
            // Content stored as sent (a plain digest) is known from now on by its identity.
            let digest = identity_key
                .filter(|_| get_s(item, "digest").is_some_and(|d| !d.starts_with("h:")))
                .map(|key| privacy::identity(key, get_s(item, "agent_id").unwrap_or_default(), &unpacked.document));
            (document, raw, digest)
        }
        Change::DropRaw { .. } => (unpacked.document.clone(), Vec::new(), None),
    };
    let packed = codec::pack(&raw, &document).map_err(|e| StoreError::Internal(format!("compression failed: {e}")))?;
    Ok(Some(NewContent { packed, raw_bytes: raw.len(), digest }))
}

/// `update` on condition that its item is as read: the same submission wrote it, and no
/// rewrite switched it since.
fn as_read(
    update: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder,
    item: &Item,
) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
    // Its revision too: `insert_late` writes a head that is a clone of the one it replaces
    // (the same token, the same rewrites), keeping the old one as a revision; a switch of
    // the head read before would pass, and the revision keep the old content (a reviewer's
    // find).
    let mut update = update
        .expression_attribute_names("#submission", "submission")
        .expression_attribute_names("#rewrites_read", REWRITES)
        .expression_attribute_names("#revision_read", "revision");
    let token = match get_s(item, "submission") {
        Some(token) => {
            update = update.expression_attribute_values(":token", s(token));
            "#submission = :token"
        }
        // An item written before every item carried its submission's token.
        None => "attribute_not_exists(#submission)",
    };
    let revision = match get_u64(item, "revision") {
        Some(r) => {
            update = update.expression_attribute_values(":revision_read", n(r));
            "#revision_read = :revision_read"
        }
        None => "attribute_not_exists(#revision_read)",
    };
    match get_u64(item, REWRITES) {
        Some(r) => update
            .condition_expression(format!("{token} AND {revision} AND #rewrites_read = :read"))
            .expression_attribute_values(":read", n(r)),
        None => update.condition_expression(format!("{token} AND {revision} AND attribute_not_exists(#rewrites_read)")),
    }
}
