//! Reading calls back: by (workspace, provider call id) or by internal id, with their
//! revisions; a frame from its item, from S3, or (calls stored before frames moved to S3)
//! from its chunks.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde_json::value::RawValue;

use super::item::{
    call_pk, chunk_prefix, get_b, get_s, get_u64, is_erasing, parse_call_pk, revision_sk, s, Item, FRAME_KEY, PIECES,
};
use super::query::SortKeys;
use super::{codec, tables, Store, StoreError};

/// One stored submission of a call.
#[derive(Debug, Clone, Serialize)]
pub struct StoredRevision {
    pub revision: u64,
    pub digest: String,
    pub updated_at: u64,
    /// The normalised document, as stored (JSON, never re-serialised).
    pub document: Box<RawValue>,
    /// The request body exactly as received.
    #[serde(skip)]
    pub raw: Vec<u8>,
}

/// A call as stored: its current content and, when asked for, the earlier ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredCall {
    pub id: u64,
    pub workspace_id: u64,
    pub agent_id: String,
    pub call_id: String,
    pub operation: String,
    pub created_at: u64,
    pub current: StoredRevision,
    /// Earlier revisions, oldest first (empty unless asked for).
    pub revisions: Vec<StoredRevision>,
}

/// A call at one revision as its items describe it. Its content stays in its frame until
/// it is read, whole ([`Store::content`]) or a span of it ([`Store::span`]).
#[derive(Debug, Clone)]
pub struct CallAt {
    pub id: u64,
    pub workspace_id: u64,
    pub call_id: String,
    /// The agent and operation of this revision.
    pub agent_id: String,
    pub operation: String,
    pub created_at: u64,
    pub revision: u64,
    pub digest: String,
    pub updated_at: u64,
    pk: String,
    item: Item,
}

/// Most bytes [`Store::span`] reads at once (a part of an answer is at most 12 MiB, for a
/// client that takes it gzip-compressed).
pub const MAX_SPAN: usize = 16 << 20;

/// One of the two things a submission keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The request body exactly as received.
    Raw,
    /// The normalised document.
    Document,
}

impl CallAt {
    /// When the call started (unix ms): its document's start, else when it was first
    /// received (the listing's order).
    pub fn started_ms(&self) -> Option<u64> {
        super::item::get_u64(&self.item, "listed_ms")
    }

    /// How many times its content was rewritten (a policy applied, its raw body removed).
    pub fn rewrites(&self) -> u64 {
        get_u64(&self.item, super::rewrite::REWRITES).unwrap_or(0)
    }

    /// When its raw body was removed, past its workspace's `raw_retention_days`.
    pub fn raw_removed_at(&self) -> Option<u64> {
        get_u64(&self.item, super::rewrite::RAW_REMOVED_AT)
    }

    /// The size of `part`, in bytes.
    pub fn len(&self, part: Part) -> u64 {
        let raw = get_u64(&self.item, "raw_bytes").unwrap_or_default();
        match part {
            Part::Raw => raw,
            Part::Document => get_u64(&self.item, "unpacked_bytes").unwrap_or_default().saturating_sub(8 + raw),
        }
    }

    /// Where `part` starts in the frame's stream (after the 8-byte length of the body).
    fn offset(&self, part: Part) -> u64 {
        match part {
            Part::Raw => 8,
            Part::Document => 8 + self.len(Part::Raw),
        }
    }
}

/// What a revision was, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevisionInfo {
    pub revision: u64,
    pub digest: String,
    /// When it was received (epoch ms).
    pub updated_at: u64,
    pub agent_id: String,
    pub operation: String,
    /// The size of its raw body.
    pub raw_bytes: u64,
}

impl StoredRevision {
    /// The document as a JSON value, to look into (read as `Free`: a client's key named as
    /// serde_json's private one is data).
    pub fn document_value(&self) -> serde_json::Value {
        serde_json::from_str(self.document.get()).map(|call_ingest_core::api::free::Free(v)| v).unwrap_or_default()
    }
}

impl PartialEq for StoredRevision {
    fn eq(&self, other: &Self) -> bool {
        (self.revision, &self.digest, self.updated_at, self.document.get(), &self.raw)
            == (other.revision, &other.digest, other.updated_at, other.document.get(), &other.raw)
    }
}

impl Store {
    /// The call `call_id` of `workspace_id`, or `None`; with its earlier revisions when
    /// asked.
    pub async fn get_call(
        &self,
        workspace_id: u64,
        call_id: &str,
        with_revisions: bool,
    ) -> Result<Option<StoredCall>, StoreError> {
        let Some(mut call) = self.get_call_at(workspace_id, call_id, None).await? else {
            return Ok(None);
        };
        if with_revisions && call.current.revision > 1 {
            // Exactly the revisions before this head: each was written with (or before) the
            // head that replaced it and never changes, so a revision committed after the head
            // was read is neither listed twice nor instead of an older one.
            let pk = call_pk(workspace_id, call_id);
            let range = SortKeys::Between(revision_sk(1), revision_sk(call.current.revision - 1));
            let items = self.query(&pk, range, None).await?;
            if items.len() as u64 != call.current.revision - 1 {
                // Removed by an erase under way (or stopped part-way): no such call.
                return Ok(None);
            }
            for item in items {
                match self.revision(&pk, &item).await? {
                    Some(revision) => call.revisions.push(revision),
                    None => {
                        // Switched by a rewrite since it was read (see `current_content`)?
                        let sk = super::item::get_s(&item, "sk").unwrap_or_default();
                        let again = self
                            .item(&pk, sk)
                            .await?
                            .filter(|a| a.get(super::rewrite::REWRITES) != item.get(super::rewrite::REWRITES));
                        match again {
                            Some(a) => call.revisions.push(self.revision(&pk, &a).await?.ok_or_else(|| {
                                StoreError::Unavailable("a revision changed twice while it was read".into())
                            })?),
                            None => return Ok(None),
                        }
                    }
                }
            }
        }
        Ok(Some(call))
    }

    /// The call with internal id `id`, or `None`.
    pub async fn get_call_by_id(&self, id: u64, with_revisions: bool) -> Result<Option<StoredCall>, StoreError> {
        match self.locate(id).await? {
            Some((workspace_id, call_id)) => self.get_call(workspace_id, &call_id, with_revisions).await,
            None => Ok(None),
        }
    }

    /// The workspace and provider call id of the call with internal id `id`, from the
    /// `by-id` index (eventually consistent: a call stored a moment ago may not be there
    /// yet).
    pub async fn locate(&self, id: u64) -> Result<Option<(u64, String)>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(tables::BY_ID.name)
            .key_condition_expression("id = :id")
            .expression_attribute_values(":id", AttributeValue::N(id.to_string()))
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        Ok(out
            .items()
            .iter()
            .find_map(|i| get_s(i, "pk").and_then(parse_call_pk))
            .map(|(workspace_id, call_id)| (workspace_id, call_id.to_owned())))
    }

    /// The call `call_id` of `workspace_id` as it was at `revision` (its current content
    /// when that is `None` or the current revision), or `None` when there is no such call
    /// or revision. One read when the revision is current, two for an earlier one.
    pub async fn get_call_at(
        &self,
        workspace_id: u64,
        call_id: &str,
        revision: Option<u64>,
    ) -> Result<Option<StoredCall>, StoreError> {
        let Some(mut at) = self.call_at(workspace_id, call_id, revision).await? else {
            return Ok(None);
        };
        let Some((current, read)) = self.current_content(&at).await? else { return Ok(None) };
        at = read;
        Ok(Some(StoredCall {
            id: at.id,
            workspace_id,
            agent_id: at.agent_id,
            call_id: at.call_id,
            operation: at.operation,
            created_at: at.created_at,
            current,
            revisions: Vec::new(),
        }))
    }

    /// [`get_call_at`](Self::get_call_at) without the content: the items only.
    pub async fn call_at(
        &self,
        workspace_id: u64,
        call_id: &str,
        revision: Option<u64>,
    ) -> Result<Option<CallAt>, StoreError> {
        let pk = call_pk(workspace_id, call_id);
        let Some(head) = self.readable_head(&pk).await? else {
            return Ok(None);
        };
        let latest = get_u64(&head, "revision").unwrap_or(1);
        let item = match revision.unwrap_or(latest) {
            r if r == latest => head.clone(),
            r if (1..latest).contains(&r) => {
                // Written with the head that replaced it, and never changed since.
                match self.item(&pk, &revision_sk(r)).await? {
                    Some(item) => item,
                    // Removed by an erase under way, or one that stopped part-way
                    // (revisions go before the head): no such call.
                    None => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(CallAt {
            id: get_u64(&head, "id").unwrap_or_default(),
            workspace_id,
            call_id: call_id.to_owned(),
            agent_id: get_s(&item, "agent_id").unwrap_or_default().to_owned(),
            operation: get_s(&item, "operation").unwrap_or_default().to_owned(),
            created_at: get_u64(&head, "created_at").unwrap_or_default(),
            revision: get_u64(&item, "revision").unwrap_or(1),
            digest: get_s(&item, "digest").unwrap_or_default().to_owned(),
            updated_at: get_u64(&item, "updated_at").unwrap_or_default(),
            pk,
            item,
        }))
    }

    /// [`content`](Self::content), read once more when its frame was gone because a rewrite
    /// switched the item to new content after it was read (`rewrite`; not when the call is
    /// being erased): the content and the item it is of.
    pub async fn current_content(&self, at: &CallAt) -> Result<Option<(StoredRevision, CallAt)>, StoreError> {
        if let Some(content) = self.content(at).await? {
            return Ok(Some((content, at.clone())));
        }
        match self.switched(at).await? {
            Some(again) => Ok(self.content(&again).await?.map(|c| (c, again))),
            None => Ok(None),
        }
    }

    /// `at` read again, when a rewrite switched it since (its `rewrites` changed).
    pub async fn switched(&self, at: &CallAt) -> Result<Option<CallAt>, StoreError> {
        let again = self.call_at(at.workspace_id, &at.call_id, Some(at.revision)).await?;
        Ok(again.filter(|a| a.id == at.id && a.rewrites() != at.rewrites()))
    }

    /// The content of `at`, whole; `None` when it is gone (see [`revision`](Self::revision)).
    pub async fn content(&self, at: &CallAt) -> Result<Option<StoredRevision>, StoreError> {
        self.revision(&at.pk, &at.item).await
    }

    /// Bytes `first..=last` of `part` of `at` (`last` within it); `None` when the content is
    /// gone. A frame in pieces is read with one ranged GET of the pieces that hold them;
    /// any other is read whole, and decompressed only as far as `last`.
    pub async fn span(&self, at: &CallAt, part: Part, first: u64, last: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let corrupt = |e: std::io::Error| StoreError::Internal(format!("stored frame is corrupt: {e}"));
        if last < first || last >= at.len(part) {
            return Err(StoreError::Internal(format!("span {first}-{last} is not within {part:?}")));
        }
        let (from, to) = (at.offset(part) + first, at.offset(part) + last);
        let len = usize::try_from(last - first + 1).map_err(|e| StoreError::Internal(e.to_string()))?;
        if len > MAX_SPAN {
            return Err(StoreError::Internal(format!("span of {len} bytes: at most {MAX_SPAN} are read at once")));
        }
        let unpacked = get_u64(&at.item, "unpacked_bytes").unwrap_or_default();
        let frame_bytes = get_u64(&at.item, "frame_bytes").unwrap_or_default();
        let pieces = get_b(&at.item, PIECES).and_then(|t| codec::Pieces::of(t, unpacked, frame_bytes));
        if let (Some(key), Some(pieces)) = (get_s(&at.item, FRAME_KEY), pieces) {
            let (start, end, skip) = pieces
                .locate(from, to)
                .ok_or_else(|| StoreError::Internal(format!("span {from}-{to} is past the frame's pieces")))?;
            // Decompressed to the end of the pieces read: each one's checksum is checked.
            return match self.frames.get_range(key, start, end).await? {
                Some(bytes) => codec::unpack_span(&bytes, skip, len, true).map(Some).map_err(corrupt),
                None => Ok(None),
            };
        }
        // A frame of one zstd frame (or one stored before frames were in pieces): read whole,
        // its transfer checked by S3's checksum or DynamoDB's; decompressed as far as `to`.
        match self.frame(&at.pk, &at.item).await? {
            Some(frame) => codec::unpack_span(&frame, from, len, false).map(Some).map_err(corrupt),
            None => Ok(None),
        }
    }

    /// The revisions of the call `call_id` of `workspace_id`, oldest first, the current
    /// one last, without their content; `None` when there is no such call.
    pub async fn revisions(
        &self,
        workspace_id: u64,
        call_id: &str,
    ) -> Result<Option<(u64, Vec<RevisionInfo>)>, StoreError> {
        let pk = call_pk(workspace_id, call_id);
        let Some(head) = self.readable_head(&pk).await? else {
            return Ok(None);
        };
        let latest = get_u64(&head, "revision").unwrap_or(1);
        let mut items = match latest {
            1 => Vec::new(),
            _ => {
                let range = SortKeys::Between(revision_sk(1), revision_sk(latest - 1));
                // Not their content: the read costs the same, but nothing large travels.
                self.query(
                    &pk,
                    range,
                    Some(&["revision", "digest", "updated_at", "agent_id", "operation", "raw_bytes"]),
                )
                .await?
            }
        };
        if items.len() as u64 != latest - 1 {
            // Removed by an erase under way, or one that stopped part-way: no such call.
            return Ok(None);
        }
        items.push(head);
        let info = |i: &Item| RevisionInfo {
            revision: get_u64(i, "revision").unwrap_or(1),
            digest: get_s(i, "digest").unwrap_or_default().to_owned(),
            updated_at: get_u64(i, "updated_at").unwrap_or_default(),
            agent_id: get_s(i, "agent_id").unwrap_or_default().to_owned(),
            operation: get_s(i, "operation").unwrap_or_default().to_owned(),
            raw_bytes: get_u64(i, "raw_bytes").unwrap_or_default(),
        };
        let id = items.last().and_then(|h| get_u64(h, "id")).unwrap_or_default();
        Ok(Some((id, items.iter().map(info).collect())))
    }

    /// Decodes a head or revision item, fetching its frame from S3 or its chunks when it
    /// has them. `None` when they are gone: an erase removes them before the head, so the
    /// call is being erased, or its erase stopped part-way (the next one finishes it).
    /// Nothing else removes them.
    async fn revision(&self, pk: &str, item: &Item) -> Result<Option<StoredRevision>, StoreError> {
        let Some(frame) = self.frame(pk, item).await? else {
            return Ok(None);
        };
        let unpacked = codec::unpack(&frame).map_err(|e| StoreError::Internal(e.to_string()))?;
        let document = String::from_utf8(unpacked.document)
            .map_err(|e| StoreError::Internal(e.to_string()))
            .and_then(|json| RawValue::from_string(json).map_err(|e| StoreError::Internal(e.to_string())))?;
        Ok(Some(StoredRevision {
            revision: get_u64(item, "revision").unwrap_or(1),
            digest: get_s(item, "digest").unwrap_or_default().to_owned(),
            updated_at: get_u64(item, "updated_at").unwrap_or_default(),
            document,
            raw: unpacked.raw,
        }))
    }

    /// The frame of a head or revision item: its own, from S3, or from its chunks; `None`
    /// when they are gone.
    pub(super) async fn frame(&self, pk: &str, item: &Item) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(Some(match (get_b(item, "body"), get_s(item, FRAME_KEY)) {
            (Some(body), _) => body.to_vec(),
            (None, Some(key)) => match self.frames.get(key).await? {
                Some(frame) => frame,
                None => return Ok(None),
            },
            (None, None) => {
                let token = get_s(item, "submission")
                    .ok_or_else(|| StoreError::Internal("item has neither body nor chunks".into()))?;
                let expected = get_u64(item, "chunks").unwrap_or_default() as usize;
                let chunks = self.query(pk, SortKeys::Prefix(chunk_prefix(token)), None).await?;
                if chunks.len() != expected {
                    return Ok(None);
                }
                let parts: Vec<&[u8]> = chunks.iter().map(|c| get_b(c, "data").unwrap_or_default()).collect();
                parts.concat()
            }
        }))
    }

    /// The head as readers see it: `None` for no call, a tombstone, or a call an erase has
    /// begun on.
    async fn readable_head(&self, pk: &str) -> Result<Option<Item>, StoreError> {
        Ok(self.head(pk).await?.filter(|head| !is_erasing(head)))
    }

    /// Every item of the call partition whose sort key is in `range`, in order, read
    /// consistently (only the attributes of `projection`, when given).
    pub(super) async fn query(
        &self,
        pk: &str,
        range: SortKeys,
        projection: Option<&[&str]>,
    ) -> Result<Vec<Item>, StoreError> {
        super::query::query(&self.client, &self.table, pk, &range, true, projection).await
    }

    /// Whether the head of `call_id` holds content of this `digest` (its identity as sent):
    /// a replay of what the call stores. One consistent read of a few small attributes
    /// (a head read stale, or being erased, is not one: a send then may well be stored); for
    /// sparing work a replay does not need (the model of personal data), never for deciding
    /// what is stored.
    pub async fn holds_digest(&self, workspace_id: u64, call_id: &str, digest: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(call_pk(workspace_id, call_id)))
            .key("sk", s(super::item::HEAD))
            .consistent_read(true)
            .projection_expression("#d, #s, #id, #erasing")
            .expression_attribute_names("#d", "digest")
            .expression_attribute_names("#s", super::item::DIGEST_SENT)
            .expression_attribute_names("#id", "id")
            .expression_attribute_names("#erasing", super::item::ERASING)
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        let Some(head) = out.item.filter(|h| h.contains_key("id") && !is_erasing(h)) else { return Ok(false) };
        Ok([get_s(&head, "digest"), get_s(&head, super::item::DIGEST_SENT)].contains(&Some(digest)))
    }

    /// The raw item at the head's key, a tombstone included (for tests and tools that
    /// check what was written).
    pub async fn raw_head(&self, workspace_id: u64, call_id: &str) -> Result<Option<Item>, StoreError> {
        self.item(&call_pk(workspace_id, call_id), super::item::HEAD).await
    }
}
