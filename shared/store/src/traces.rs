//! Traces kept (issue 31): OTLP batches durable in S3 before their answer, then split into
//! their traces, indexed, and joined to calls.
//!
//! **In S3** (the frames bucket):
//! - `traces/in/{workspace}/{received_ms:016}-{random}`: a batch as the receiver kept it
//!   (its spans after [`call_ingest_traces::policy`], protobuf, zstd). S3 announces it on the
//!   pending queue, and commit-pending indexes it ([`Store::index_trace_batch`]), then
//!   deletes it.
//! - `traces/spans/{workspace}/{trace}/{received_ms:016}-{random}`: one trace's spans of one
//!   batch (the batch's name): a trace is as many parts as batches brought its spans, and an
//!   erase removes a trace's parts and nothing else. As frames are: written only where no
//!   object is (`If-None-Match`), erased by an empty marker (so a late copy of the PUT fails
//!   on it), the markers removed by the bucket's lifecycle after 8 days.
//!
//! **In the Calls table**:
//! - `TRACE#{workspace}#{trace}` / `T`: the trace: its parts (`parts`, a string set), span
//!   count (`spans`), how many parts were ever added (`version`), first receipt (`first_ms`), candidate keys by rank (`k0`…`k9`, string
//!   sets: [`call_ingest_traces::join`]), the call it joined (`call`, a provider call id), and
//!   after an erase the erase's time (`erased`): a batch received before it adds nothing.
//! - `TKEY#{workspace}#{value}` / `{trace}`: a trace one of whose candidate keys is `value`,
//!   so that a call finds the traces that may be its own.
//! - `TOPEN#{workspace}` / `{first_ms:016}#{trace}`: a trace that joined no call yet
//!   (`callctl traces unjoined`); removed when it joins.
//! - `TDAY#{day}` / `{workspace}#{trace}`: the traces first received that day, for
//!   retention: 30 days on, a trace that joined no call is removed
//!   ([`Store::expire_unjoined_traces`]).
//!
//! **Joining** is lazy and final: a trace joins the call named by the best of its candidate
//! keys that names a call of the workspace when it is looked at: when it is indexed, when
//! its call is read or erased. Once joined it stays joined (a conditional write), so two
//! readers never see it joined to different calls.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use aws_sdk_s3::primitives::ByteStream;

use call_ingest_traces::join::{candidates, Candidate};
use call_ingest_traces::split::{by_trace, span_count};
use call_ingest_traces::{policy, ExportTraceServiceRequest, Message};

use crate::calls::frames::s3_error;
use crate::calls::item::{call_pk, erased_at, get_s, get_u64, is_erasing, is_tombstone, n, s, Item, HEAD};
use crate::calls::query::{query, SortKeys};
use crate::calls::{now_ms, random_hex, Store, StoreError, Transaction};

pub const BATCH_PREFIX: &str = "traces/in/";
pub const PART_PREFIX: &str = "traces/spans/";
const TRACE_SK: &str = "T";
/// The zstd level of batches and parts: spans compress about 8 to 1 at it.
const LEVEL: i32 = 3;
/// The ranks a trace's candidate keys can have ([`call_ingest_traces::join::JOIN_KEYS`]).
const RANKS: u8 = 10;
/// The most bytes a kept batch or part may expand to when read back: a batch is at most
/// the receiver's decompressed cap.
const MAX_EXPANDED: usize = 64 << 20;

pub fn trace_pk(workspace_id: u64, trace: &str) -> String {
    format!("TRACE#{workspace_id}#{trace}")
}

pub fn key_pk(workspace_id: u64, value: &str) -> String {
    format!("TKEY#{workspace_id}#{value}")
}

pub fn open_pk(workspace_id: u64) -> String {
    format!("TOPEN#{workspace_id}")
}

/// The most parts (batches) one trace is kept in: its item lists them (33 bytes each), and
/// an item holds at most 400 KB. An exporter sending one span a batch reaches it at 5,000
/// spans; a pipecat call's 5-second batches, after 7 hours.
pub const MAX_PARTS_PER_TRACE: usize = 5_000;
/// The most distinct values of one rank of candidate keys a trace keeps.
pub const MAX_KEYS_PER_RANK: usize = 8;

/// How long a trace that joined no call is kept.
pub const UNJOINED_KEPT_MS: u64 = 30 * 24 * 3600 * 1000;
const DAY_MS: u64 = 24 * 3600 * 1000;
/// How long an erased trace's tombstone outlives its erase: past any batch's lateness.
const TOMBSTONE_KEPT_SECS: u64 = 30 * 24 * 3600;

/// The partition of the traces first received on `day` (days since the epoch): what the
/// retention sweep looks at once they are [`UNJOINED_KEPT_MS`] old.
pub fn day_pk(day: u64) -> String {
    format!("TDAY#{day}")
}

/// A new batch's key: its workspace, its receipt, and a random part.
pub fn batch_key(workspace_id: u64, received_ms: u64) -> Result<String, StoreError> {
    Ok(format!("{BATCH_PREFIX}{workspace_id}/{received_ms:016}-{}", random_hex(8)?))
}

fn part_key(workspace_id: u64, trace: &str, part: &str) -> String {
    format!("{PART_PREFIX}{workspace_id}/{trace}/{part}")
}

/// The workspace and batch name of a batch key; `None` for any other key.
pub fn batch_of(key: &str) -> Option<(u64, &str)> {
    let (workspace, name) = key.strip_prefix(BATCH_PREFIX)?.split_once('/')?;
    let received = name.split_once('-')?.0;
    (received.len() == 16 && received.bytes().all(|b| b.is_ascii_digit()) && !name.contains('/'))
        .then_some((workspace.parse().ok()?, name))
}

fn received_of(name: &str) -> u64 {
    name.split_once('-').and_then(|(r, _)| r.parse().ok()).unwrap_or(0)
}

fn pack(export: &ExportTraceServiceRequest) -> Result<Vec<u8>, StoreError> {
    zstd::bulk::compress(&export.encode_to_vec(), LEVEL).map_err(|e| StoreError::Internal(format!("zstd: {e}")))
}

fn unpack(bytes: &[u8]) -> Result<ExportTraceServiceRequest, StoreError> {
    let mut out = Vec::new();
    let mut decoder = zstd::stream::read::Decoder::new(bytes).map_err(|e| StoreError::Internal(e.to_string()))?;
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut decoder, MAX_EXPANDED as u64), &mut out)
        .map_err(|e| StoreError::Internal(format!("a kept trace batch is unreadable: {e}")))?;
    ExportTraceServiceRequest::decode(&out[..])
        .map_err(|e| StoreError::Internal(format!("a kept trace batch is unreadable: {e}")))
}

/// What indexing a batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Indexed {
    /// Spans kept in their traces.
    pub spans: u64,
    /// Spans dropped: their trace was erased after they were received, or is full.
    pub dropped: u64,
    /// Traces that joined a call now.
    pub joined: u64,
}

/// A trace that joined no call yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unjoined {
    pub trace: String,
    pub first_ms: u64,
    pub spans: u64,
    /// Its candidate keys, best first.
    pub keys: Vec<String>,
}

/// Why a trace's part was not added.
enum Refused {
    Erased,
    Full,
    Known,
}

impl Store {
    fn s3(&self) -> &aws_sdk_s3::Client {
        self.frames().client()
    }

    fn bucket(&self) -> &str {
        self.frames().bucket()
    }

    /// Keeps a batch (its spans after the policy) for indexing; answers its key. Durable when
    /// this answers: the receiver answers 200 only then.
    pub async fn put_trace_batch(
        &self,
        workspace_id: u64,
        received_ms: u64,
        batch: &ExportTraceServiceRequest,
    ) -> Result<String, StoreError> {
        let key = batch_key(workspace_id, received_ms)?;
        self.put_trace_batch_at(&key, batch).await?;
        Ok(key)
    }

    /// [`Store::put_trace_batch`] at a key chosen once ([`batch_key`]): a PUT tried again
    /// after a reply that never came writes the same object, not a second batch.
    pub async fn put_trace_batch_at(&self, key: &str, batch: &ExportTraceServiceRequest) -> Result<(), StoreError> {
        let body = pack(batch)?;
        self.s3()
            .put_object()
            .bucket(self.bucket())
            .key(key)
            .content_type("application/zstd")
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(s3_error)?;
        Ok(())
    }

    /// Indexes the batch at `key`: each trace's spans become a part of their trace, the trace
    /// is joined to its call when that exists, and the batch is deleted. Run again (a queue
    /// message delivered twice, a failure part-way), it adds nothing twice.
    pub async fn index_trace_batch(&self, key: &str) -> Result<Indexed, StoreError> {
        let Some((workspace_id, name)) = batch_of(key) else {
            return Err(StoreError::Internal(format!("{key} is not a trace batch")));
        };
        let Some(bytes) = self.frames().get(key).await? else { return Ok(Indexed::default()) };
        let received = received_of(name);
        let mut done = Indexed::default();
        for (trace, export) in by_trace(unpack(&bytes)?) {
            let spans = span_count(&export) as u64;
            match self.add_part(workspace_id, &trace, name, received, &export).await? {
                Ok(joined) => {
                    done.spans += spans;
                    done.joined += u64::from(joined);
                }
                Err(Refused::Known) => done.spans += spans,
                Err(Refused::Erased | Refused::Full) => done.dropped += spans,
            }
        }
        self.frames().delete(key).await?;
        Ok(done)
    }

    /// Indexes the batches the queue did not (lost or dead-lettered messages) received
    /// before `before_ms`, oldest first, until `deadline`: the sweep's share. Answers the
    /// batches indexed and those left (failing, or past the deadline).
    pub async fn index_trace_batches(
        &self,
        before_ms: u64,
        deadline: std::time::Instant,
    ) -> Result<(u64, u64), StoreError> {
        let mut keys = self.keys_under(BATCH_PREFIX).await?;
        keys.retain(|k| batch_of(k).is_some_and(|(_, name)| received_of(name) < before_ms));
        keys.sort_by_key(|k| batch_of(k).map(|(_, name)| received_of(name)));
        let (mut indexed, mut left) = (0, 0);
        for key in &keys {
            if std::time::Instant::now() >= deadline {
                left += 1;
                continue;
            }
            match self.index_trace_batch(key).await {
                Ok(_) => indexed += 1,
                Err(e) => {
                    tracing::warn!(key, error = %e, "trace batch not indexed; next sweep");
                    left += 1;
                }
            }
        }
        Ok((indexed, left))
    }

    /// Adds one trace's part of batch `part`: the object first, then the trace's item (which
    /// refuses it when the trace was erased after `received`, is full, or has it already);
    /// a part refused for the first two is removed. Answers whether the trace joined a call now.
    async fn add_part(
        &self,
        workspace_id: u64,
        trace: &str,
        part: &str,
        received: u64,
        export: &ExportTraceServiceRequest,
    ) -> Result<Result<bool, Refused>, StoreError> {
        let object = part_key(workspace_id, trace, part);
        let body = pack(export)?;
        // Only where nothing is: the same part (a delivery again: the same bytes), or an
        // erase's empty marker, which a late copy of this PUT must not overwrite.
        let put = self
            .s3()
            .put_object()
            .bucket(self.bucket())
            .key(&object)
            .if_none_match("*")
            .content_type("application/zstd")
            .body(ByteStream::from(body))
            .send()
            .await;
        match put {
            Ok(_) => {}
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => {}
            Err(e) => return Err(s3_error(e)),
        }
        let spans = span_count(export) as u64;
        let found = candidates(export);
        let mut update = self
            .update_trace(workspace_id, trace)
            .expression_attribute_values(":received", n(received))
            .expression_attribute_values(":room", n((policy::MAX_SPANS_PER_TRACE as u64).saturating_sub(spans)))
            .expression_attribute_values(":part", s(part))
            .expression_attribute_values(":parts", AttributeValue::Ss(vec![part.to_owned()]))
            .expression_attribute_values(":spans", n(spans))
            .expression_attribute_values(":first", n(received))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        // `version` counts the parts ever added: an erase's end is conditioned on it, so that
        // neither a part added meanwhile nor a late copy of that end loses a part's keys.
        let mut adds = vec!["parts :parts".to_owned(), "spans :spans".to_owned(), "version :one".to_owned()];
        // Refused: a batch received before the trace's erase, a part known, a full trace.
        let mut conditions = vec![
            "(attribute_not_exists(erased) OR erased < :received)".to_owned(),
            "NOT contains(parts, :part)".to_owned(),
            "(attribute_not_exists(spans) OR spans <= :room)".to_owned(),
            "(attribute_not_exists(parts) OR size(parts) < :max_parts)".to_owned(),
        ];
        update = update.expression_attribute_values(":max_parts", n(MAX_PARTS_PER_TRACE));
        for (rank, values) in by_rank(&found) {
            adds.push(format!("k{rank} :k{rank}"));
            conditions.push(format!("(attribute_not_exists(k{rank}) OR size(k{rank}) <= :max_keys)"));
            update = update.expression_attribute_values(format!(":k{rank}"), AttributeValue::Ss(values));
        }
        if !by_rank(&found).is_empty() {
            let room = MAX_KEYS_PER_RANK.saturating_sub(by_rank(&found).values().map(Vec::len).max().unwrap_or(0));
            update = update.expression_attribute_values(":max_keys", n(room));
        }
        // A trace used again after an erase is no longer a tombstone: it does not expire.
        let expression =
            format!("SET first_ms = if_not_exists(first_ms, :first) REMOVE expires_at ADD {}", adds.join(", "));
        let update = update.condition_expression(conditions.join(" AND "));
        // The item before (`old`) tells what this part adds: a trace's later batches, with the
        // keys its first brought, cost this one write.
        let (old, redelivered) = match update.update_expression(expression).send().await {
            Ok(out) => (out.attributes.unwrap_or_default(), false),
            Err(e) => {
                let old = found_instead(e)?;
                // An erase since the batch was received wins, even over a part known (a
                // delivery again, after the erase removed it): its object goes again.
                let erased = get_u64(&old, "erased").is_some_and(|e| e >= received);
                let known = matches!(old.get("parts"), Some(AttributeValue::Ss(p)) if p.iter().any(|x| x == part));
                if erased || !known {
                    self.frames().erase(&object).await?;
                    // An erase cut short (this batch's own join, stopped part-way) left
                    // parts it covers: they go now.
                    let at = get_u64(&old, "erased").unwrap_or(0);
                    if erased && parts(&old).iter().any(|p| received_of(p) <= at) {
                        self.erase_trace(workspace_id, trace, at, false).await?;
                    }
                    return Ok(Err(if erased { Refused::Erased } else { Refused::Full }));
                }
                // Delivered again: what followed its write may not have happened; it is
                // all written again below (each write is idempotent).
                (old, true)
            }
        };
        let item = if redelivered { old.clone() } else { merged(&old, part, &found, received) };
        let had = ranked(&old);
        // Each candidate key finds the trace.
        for (_, value) in found.iter().filter(|(_, v)| redelivered || !had.contains(v)) {
            self.put_entry(key_pk(workspace_id, value), trace.to_owned()).await?;
        }
        if let Some(call) = get_s(&item, "call") {
            // Joined already: a part received before that call's last erase (indexed late,
            // the erase blind to it: the trace had no entry for it then) is not its own. It
            // goes now, at that erase's time; the parts after it stay.
            let head = self.read_item(call_pk(workspace_id, call), HEAD).await?;
            let erased = head.as_ref().map_or(0, erased_at);
            if erased > 0 && erased >= earliest(&item) {
                self.erase_trace(workspace_id, trace, erased, false).await?;
                if received <= erased {
                    return Ok(Err(Refused::Erased));
                }
                // This part came after the erase: it stays, and joins again.
                if let Some(left) = self.trace_item(workspace_id, trace).await? {
                    self.join(workspace_id, trace, &left, true).await?;
                }
            }
            return Ok(if redelivered { Err(Refused::Known) } else { Ok(false) });
        }
        // Until it joins, it is listed as open (once, from its first part).
        let first = get_u64(&item, "first_ms").unwrap_or(received);
        if redelivered || parts(&old).is_empty() {
            self.put_entry(open_pk(workspace_id), format!("{first:016}#{trace}")).await?;
            self.put_entry(day_pk(first / DAY_MS), format!("{workspace_id}#{trace}")).await?;
        }
        // Its keys may name a call now; or a call they named was erased since an earlier
        // part came (which goes now: the erase did not know this trace).
        let joined = self.join(workspace_id, trace, &item, true).await?.is_some();
        Ok(if redelivered { Err(Refused::Known) } else { Ok(joined) })
    }

    /// Whether `call_id` is a call of the workspace now (not erased, not being erased), and
    /// then when it was last erased before (0 if never): spans received before that erase
    /// never join it.
    async fn call_exists(&self, workspace_id: u64, call_id: &str) -> Result<Option<u64>, StoreError> {
        let head = self.read_item(call_pk(workspace_id, call_id), HEAD).await?;
        Ok(head.filter(|head| !is_tombstone(head) && !is_erasing(head)).map(|head| erased_at(&head)))
    }

    /// The item at `pk` / `sk`, read consistently.
    async fn read_item(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let get = self.client().get_item().table_name(self.table()).key("pk", s(pk)).key("sk", s(sk));
        Ok(get.consistent_read(true).send().await.map_err(StoreError::from_sdk)?.item)
    }

    /// The call trace `item` joined, joining it now to the call its best candidate key
    /// names when it joined none yet; `None` while none of its keys names a call.
    ///
    /// Spans received before their call's erase are dropped here too: a batch indexed after
    /// the erase (the queue was slow, the trace unknown when the erase looked) still finds
    /// the erase in the call's head (`erased_at`). `tidy`: its parts received before it are
    /// removed now (indexing, erasing, retention); otherwise (a read) only passed over.
    async fn join(
        &self,
        workspace_id: u64,
        trace: &str,
        item: &Item,
        tidy: bool,
    ) -> Result<Option<String>, StoreError> {
        if let Some(call) = get_s(item, "call") {
            return Ok(Some(call.to_owned()));
        }
        let mut item = item.clone();
        let mut named = None;
        for value in ranked(&item) {
            let Some(head) = self.read_item(call_pk(workspace_id, &value), HEAD).await? else { continue };
            let erased = erased_at(&head);
            if erased > 0 && erased >= earliest(&item) {
                // A read leaves it to the next indexing, erase or retention run: the trace
                // joins nothing until its parts from before the erase are gone.
                if !tidy {
                    return Ok(None);
                }
                self.erase_trace(workspace_id, trace, erased, false).await?;
                match self.trace_item(workspace_id, trace).await? {
                    Some(left) if get_s(&left, "call").is_some() => return Ok(get_s(&left, "call").map(str::to_owned)),
                    Some(left) if !parts(&left).is_empty() => item = left,
                    _ => return Ok(None),
                }
            }
            if !is_tombstone(&head) && !is_erasing(&head) && erased < earliest(&item) {
                named = Some(value);
                break;
            }
        }
        let first = earliest(&item);
        let Some(call) = named else { return Ok(None) };
        // The call's own key finds the trace before it is joined: an erase of the call that
        // begins now finds it there (whatever became of the entry its part wrote).
        self.put_entry(key_pk(workspace_id, &call), trace.to_owned()).await?;
        let joined = self
            .update_trace(workspace_id, trace)
            .update_expression("SET #call = :call")
            // Not over an erase since its parts were read (a late copy of this request, or
            // an erase that raced it): the erased parts never join.
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(#call) AND (attribute_not_exists(erased) OR erased < :first)")
            .expression_attribute_names("#call", "call")
            .expression_attribute_values(":call", s(&call))
            .expression_attribute_values(":first", n(first))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let call = match joined {
            Ok(_) => call,
            // Joined meanwhile (to the same call or, by a key that named a call first, another).
            Err(e) => match get_s(&found_instead(e)?, "call") {
                Some(other) => other.to_owned(),
                None => return Ok(None),
            },
        };
        // Its unjoined entry is named by `first_ms`, as add_part wrote it.
        let listed = get_u64(&item, "first_ms").unwrap_or(first);
        self.delete_entry(open_pk(workspace_id), format!("{listed:016}#{trace}")).await?;
        // An erase of the call that ended between the head's read and the join (the call
        // perhaps sent again since) did not see it: its spans go now, at that erase's time.
        if tidy {
            let head = self.read_item(call_pk(workspace_id, &call), HEAD).await?;
            if let Some(head) = head.filter(|h| erased_at(h) >= first) {
                self.erase_trace(workspace_id, trace, erased_at(&head), false).await?;
                return Ok(None);
            }
        }
        Ok(Some(call))
    }

    /// An UpdateItem of trace `trace`'s item.
    fn update_trace(&self, workspace_id: u64, trace: &str) -> UpdateItemFluentBuilder {
        let update = self.client().update_item().table_name(self.table());
        update.key("pk", s(trace_pk(workspace_id, trace))).key("sk", s(TRACE_SK))
    }

    async fn trace_item(&self, workspace_id: u64, trace: &str) -> Result<Option<Item>, StoreError> {
        self.read_item(trace_pk(workspace_id, trace), TRACE_SK).await
    }

    /// The traces one of whose candidate keys is `value`, with their items.
    async fn traces_naming(&self, workspace_id: u64, value: &str) -> Result<Vec<(String, Item)>, StoreError> {
        let mut traces = Vec::new();
        for entry in self.entries(key_pk(workspace_id, value)).await? {
            if let Some(trace) = get_s(&entry, "sk") {
                if let Some(found) = self.trace_item(workspace_id, trace).await? {
                    traces.push((trace.to_owned(), found));
                }
            }
        }
        Ok(traces)
    }

    /// The items of partition `pk` (a key's or the unjoined list's entries), every page.
    async fn entries(&self, pk: String) -> Result<Vec<Item>, StoreError> {
        query(self.client(), self.table(), &pk, &SortKeys::All, false, None).await
    }

    /// Writes the entry `pk` / `sk` (no attributes of its own).
    async fn put_entry(&self, pk: String, sk: String) -> Result<(), StoreError> {
        let put = self.client().put_item().table_name(self.table()).item("pk", s(pk)).item("sk", s(sk));
        put.send().await.map_err(StoreError::from_sdk)?;
        Ok(())
    }

    async fn delete_entry(&self, pk: String, sk: String) -> Result<(), StoreError> {
        let delete = self.client().delete_item().table_name(self.table()).key("pk", s(pk)).key("sk", s(sk));
        delete.send().await.map_err(StoreError::from_sdk)?;
        Ok(())
    }

    /// The traces joined to call `call_id` (joining those its keys name now), each as its
    /// parts' spans in one export, by trace id.
    pub async fn traces_of_call(
        &self,
        workspace_id: u64,
        call_id: &str,
    ) -> Result<BTreeMap<String, ExportTraceServiceRequest>, StoreError> {
        let mut out = BTreeMap::new();
        // Spans received before the call's last erase are never its own, whatever joined
        // meanwhile (a join that raced the erase, a batch indexed after it).
        let Some(erased_at) = self.call_exists(workspace_id, call_id).await? else { return Ok(out) };
        for (trace, item) in self.traces_naming(workspace_id, call_id).await? {
            if self.join(workspace_id, &trace, &item, false).await?.as_deref() != Some(call_id) {
                continue;
            }
            let mut whole = ExportTraceServiceRequest::default();
            for part in parts(&item).into_iter().filter(|p| received_of(p) > erased_at) {
                if let Some(bytes) = self.frames().get(&part_key(workspace_id, &trace, &part)).await? {
                    whole.resource_spans.extend(unpack(&bytes)?.resource_spans);
                }
            }
            out.insert(trace, whole);
        }
        Ok(out)
    }

    /// Erases the traces joined to call `call_id` (joining first those its keys name, while
    /// it exists): their parts, then their items but a tombstone (`erased`), so that a batch
    /// received before now adds nothing to them. Answers how many traces were erased.
    ///
    /// `id`: the call being erased. Once it is gone (the pass after its own erase) the
    /// boundary is its erase's (`erased_at`, which a call sent again carries), not now: spans
    /// received since belong to whatever comes next under the call id.
    pub async fn erase_traces(&self, workspace_id: u64, call_id: &str, id: u64) -> Result<usize, StoreError> {
        let mut erased = 0;
        let head = self.read_item(call_pk(workspace_id, call_id), HEAD).await?;
        let ours = head.as_ref().is_some_and(|h| get_u64(h, "id") == Some(id));
        let at = match head {
            Some(head) if !ours && erased_at(&head) > 0 => erased_at(&head),
            _ => now_ms(),
        };
        for (trace, item) in self.traces_naming(workspace_id, call_id).await? {
            if self.join(workspace_id, &trace, &item, true).await?.as_deref() != Some(call_id) {
                continue;
            }
            self.erase_trace(workspace_id, &trace, at, false).await?;
            erased += 1;
        }
        Ok(erased)
    }

    /// Removes a trace's parts received at or before `at` and leaves its item as a
    /// tombstone erased at `at`. The tombstone is written first: a part received before `at`
    /// and added after it was read is refused, and one added before is in the parts read after.
    ///
    /// Parts received after `at` (a trace used again after its call's erase, indexed before
    /// this erase of the old spans ran) stay, with the keys that find them, listed as
    /// unjoined from their own first receipt.
    ///
    /// `unjoined`: retention's erase, of a trace that joined no call: refused (`false`) when it
    /// joined one meanwhile. An erase at or after `at` already done (another eraser, or a
    /// late copy of this request) is not redone, and answers `false`.
    async fn erase_trace(&self, workspace_id: u64, trace: &str, at: u64, unjoined: bool) -> Result<bool, StoreError> {
        let mut condition = "attribute_not_exists(erased) OR erased < :at".to_owned();
        if unjoined {
            condition = format!("({condition}) AND attribute_not_exists(#call)");
        }
        let out = self
            .update_trace(workspace_id, trace)
            .update_expression("SET erased = :at, expires_at = :expires REMOVE #call")
            .condition_expression(condition)
            .expression_attribute_names("#call", "call")
            .expression_attribute_values(":at", n(at))
            .expression_attribute_values(":expires", n(at / 1000 + TOMBSTONE_KEPT_SECS))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let (old, at) = match out {
            Ok(out) => (out.attributes.unwrap_or_default(), at),
            Err(e) => {
                let found = found_instead(e)?;
                // An erase at or after `at` is there. Done, unless it was cut short (its
                // reply lost, its function stopped): parts it covers are still listed,
                // and it is finished here, at its own time.
                let later = get_u64(&found, "erased").unwrap_or(0);
                let unfinished = parts(&found).iter().any(|p| received_of(p) <= later);
                if later < at || !unfinished || (unjoined && found.contains_key("call")) {
                    return Ok(false);
                }
                (found, later)
            }
        };
        let (gone, kept): (Vec<String>, Vec<String>) = parts(&old).into_iter().partition(|p| received_of(p) <= at);
        for part in &gone {
            self.frames().erase(&part_key(workspace_id, trace, part)).await?;
        }
        if let Some(first) = get_u64(&old, "first_ms") {
            self.delete_entry(open_pk(workspace_id), format!("{first:016}#{trace}")).await?;
        }
        // The parts read are gone: the item keeps the tombstone, and only what was added
        // after the erase (a batch received since: `at < received`). Exactly what was read is
        // removed, so such a part stays; what is left came after the erase (`first_ms`).
        if kept.is_empty() && self.forget_trace(workspace_id, trace, at, &old).await? {
            return Ok(true);
        }
        // Parts received after `at` are there (read now, or added since the tombstone): they
        // keep the trace's keys and the entries that find them.
        let Some(now) = self.trace_item(workspace_id, trace).await? else { return Ok(true) };
        if get_u64(&now, "erased") != Some(at) {
            return Ok(true); // another erase came after this one: what it read, it removes
        }
        let kept: Vec<String> = parts(&now).into_iter().filter(|p| received_of(p) > at).collect();
        let first = kept.iter().map(|p| received_of(p)).min().unwrap_or(at + 1);
        let mut update = self
            .update_trace(workspace_id, trace)
            .condition_expression("erased = :at")
            .expression_attribute_values(":at", n(at))
            .expression_attribute_values(":first", n(first));
        // The spans of the parts kept are not known apart: the count stays (the cap errs on
        // the side of refusing).
        let mut expression = "SET first_ms = :first REMOVE expires_at".to_owned();
        if !gone.is_empty() {
            expression += " DELETE parts :gone";
            update = update.expression_attribute_values(":gone", AttributeValue::Ss(gone.clone()));
        }
        match update.update_expression(expression).send().await {
            Ok(_) => {}
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                return Ok(true)
            }
            Err(e) => return Err(StoreError::from_sdk(e)),
        }
        for value in ranked(&now) {
            self.put_entry(key_pk(workspace_id, &value), trace.to_owned()).await?;
        }
        self.put_entry(open_pk(workspace_id), format!("{first:016}#{trace}")).await?;
        self.put_entry(day_pk(first / DAY_MS), format!("{workspace_id}#{trace}")).await?;
        Ok(true)
    }

    /// The end of an erase that removed every part it read (`old`): the item keeps only the
    /// tombstone, and no entry names the erased call's keys. One transaction, on condition
    /// that no part was added since the tombstone (`version`): a part added before it keeps
    /// the keys and entries (answers `false`: the caller keeps them), and one added after it
    /// finds no keys and writes its own entries.
    async fn forget_trace(&self, workspace_id: u64, trace: &str, at: u64, old: &Item) -> Result<bool, StoreError> {
        let mut values = HashMap::from([(":at".to_owned(), n(at)), (":zero".to_owned(), n(0))]);
        // No part added since `old` was read (`version` counts them), not even by a late
        // copy of this request after one was (a count of parts could match again).
        let mut condition = "erased = :at".to_owned();
        match get_u64(old, "version") {
            Some(version) => {
                condition += " AND version = :version";
                values.insert(":version".to_owned(), n(version));
            }
            None => condition += " AND attribute_not_exists(version) AND attribute_not_exists(parts)",
        }
        let mut deletes = Vec::new();
        for name in std::iter::once("parts".to_owned()).chain((0..RANKS).map(|r| format!("k{r}"))) {
            if let Some(AttributeValue::Ss(set)) =
                old.get(&name).filter(|v| matches!(v, AttributeValue::Ss(x) if !x.is_empty()))
            {
                deletes.push(format!("{name} :old_{name}"));
                values.insert(format!(":old_{name}"), AttributeValue::Ss(set.clone()));
            }
        }
        // No first receipt either: a trace id used again counts from its new spans (its
        // retention, its place among the unjoined).
        let mut expression = "SET spans = :zero REMOVE first_ms".to_owned();
        if !deletes.is_empty() {
            expression += &format!(" DELETE {}", deletes.join(", "));
        }
        let update = Update::builder()
            .table_name(self.table())
            .key("pk", s(trace_pk(workspace_id, trace)))
            .key("sk", s(TRACE_SK))
            .update_expression(expression)
            .condition_expression(condition)
            .set_expression_attribute_values(Some(values))
            .build()?;
        let mut items = vec![TransactWriteItem::builder().update(update).build()];
        for value in ranked(old) {
            let delete = Delete::builder()
                .table_name(self.table())
                .key("pk", s(key_pk(workspace_id, &value)))
                .key("sk", s(trace));
            items.push(TransactWriteItem::builder().delete(delete.build()?).build());
        }
        for _ in 0..3 {
            match self.transact(items.clone()).await? {
                Transaction::Committed => return Ok(true),
                Transaction::ConditionFailed => return Ok(false),
                Transaction::Conflict => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
        Err(StoreError::Unavailable("a trace's erase met other writes".into()))
    }

    /// Removes the traces first received on days wholly before `now - UNJOINED_KEPT_MS` that
    /// joined no call (joining first those whose keys now name one: those are kept with
    /// their call), until `deadline`. Each day's entries are removed as they are done, so a
    /// sweep cut short resumes where it stopped. Answers (traces removed, traces kept).
    pub async fn expire_unjoined_traces(
        &self,
        now_ms: u64,
        deadline: std::time::Instant,
    ) -> Result<(u64, u64), StoreError> {
        let (mut removed, mut kept) = (0, 0);
        let last_day = now_ms.saturating_sub(UNJOINED_KEPT_MS) / DAY_MS;
        // Days are looked at from a week before the last one due: the sweep runs every
        // minute, so an older day was done long ago (or its entries are still there and the
        // next days' runs will not reach them: a day missed by a week is an alarm, not data).
        for day in last_day.saturating_sub(7)..last_day {
            for entry in self.entries(day_pk(day)).await? {
                if std::time::Instant::now() >= deadline {
                    return Ok((removed, kept));
                }
                let Some((ws, trace)) = get_s(&entry, "sk").and_then(|k| k.split_once('#')) else { continue };
                let Ok(workspace_id) = ws.parse::<u64>() else { continue };
                if let Some(item) = self.trace_item(workspace_id, trace).await? {
                    // Erased since (by its call's erase): nothing left to remove. Used
                    // again since (its spans now are newer than this day): not due; its
                    // new first day's entry brings it back.
                    let erased = item.contains_key("erased") && !item.contains_key("parts");
                    let renewed = earliest(&item) >= (last_day + 1) * DAY_MS;
                    if erased || renewed {
                    } else if self.join(workspace_id, trace, &item, true).await?.is_some() {
                        kept += 1;
                    } else {
                        match self.erase_trace(workspace_id, trace, now_ms, true).await? {
                            true => removed += 1,
                            // Joined a call meanwhile.
                            false => kept += 1,
                        }
                    }
                }
                self.delete_entry(day_pk(day), format!("{workspace_id}#{trace}")).await?;
            }
        }
        Ok((removed, kept))
    }

    /// The workspace's traces that joined no call yet, oldest first (those whose keys name
    /// a call now are joined, and not listed).
    pub async fn unjoined_traces(&self, workspace_id: u64) -> Result<Vec<Unjoined>, StoreError> {
        let mut list = Vec::new();
        for open in self.entries(open_pk(workspace_id)).await? {
            let Some((first, trace)) = get_s(&open, "sk").and_then(|k| k.split_once('#')) else { continue };
            let Some(item) = self.trace_item(workspace_id, trace).await? else { continue };
            if self.join(workspace_id, trace, &item, false).await?.is_some() {
                continue;
            }
            list.push(Unjoined {
                trace: trace.to_owned(),
                first_ms: first.parse().unwrap_or_default(),
                spans: get_u64(&item, "spans").unwrap_or_default(),
                keys: ranked(&item),
            });
        }
        Ok(list)
    }
}

/// The item a conditional UpdateItem found when its condition failed (it asks for
/// `ReturnValuesOnConditionCheckFailure::AllOld`); any other failure as the error it is.
fn found_instead(e: SdkError<UpdateItemError, HttpResponse>) -> Result<Item, StoreError> {
    match e.as_service_error() {
        Some(UpdateItemError::ConditionalCheckFailedException(c)) => Ok(c.item.clone().unwrap_or_default()),
        _ => Err(StoreError::from_sdk(e)),
    }
}

/// A trace's item after a part with candidate keys `found`, received at `received`, was
/// added to `old` (the keys and the first receipt; what joining reads).
fn merged(old: &Item, part: &str, found: &[Candidate], received: u64) -> Item {
    let mut item = old.clone();
    match item.entry("parts".to_owned()).or_insert_with(|| AttributeValue::Ss(Vec::new())) {
        AttributeValue::Ss(set) => set.push(part.to_owned()),
        other => *other = AttributeValue::Ss(vec![part.to_owned()]),
    }
    for (rank, values) in by_rank(found) {
        let entry = item.entry(format!("k{rank}")).or_insert_with(|| AttributeValue::Ss(Vec::new()));
        if let AttributeValue::Ss(set) = entry {
            for v in values {
                if !set.contains(&v) {
                    set.push(v);
                }
            }
        }
    }
    item.entry("first_ms".to_owned()).or_insert_with(|| n(received));
    item
}

/// Candidate values by rank, for the item's `k{rank}` sets.
fn by_rank(found: &[Candidate]) -> BTreeMap<u8, Vec<String>> {
    let mut out: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    for (rank, value) in found.iter().filter(|(r, _)| *r < RANKS) {
        out.entry(*rank).or_default().push(value.clone());
    }
    out
}

/// A trace item's candidate keys, best first (within a rank, in order of value).
fn ranked(item: &Item) -> Vec<String> {
    let mut out = Vec::new();
    for rank in 0..RANKS {
        if let Some(AttributeValue::Ss(values)) = item.get(&format!("k{rank}")) {
            let mut values = values.clone();
            values.sort();
            for value in values {
                if !out.contains(&value) {
                    out.push(value);
                }
            }
        }
    }
    out
}

/// The receipt of a trace's earliest part (part names carry it): a trace used again after
/// an erase counts from what it holds now, not from its first use.
fn earliest(item: &Item) -> u64 {
    parts(item).iter().map(|p| received_of(p)).min().or(get_u64(item, "first_ms")).unwrap_or_default()
}

fn parts(item: &Item) -> Vec<String> {
    match item.get("parts") {
        Some(AttributeValue::Ss(parts)) => {
            let mut parts = parts.clone();
            parts.sort();
            parts
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_keys_name_their_workspace_and_receipt_and_nothing_else_is_one() {
        assert_eq!(batch_of("traces/in/7/0001795815313225-ab12"), Some((7, "0001795815313225-ab12")));
        assert_eq!(received_of("0001795815313225-ab12"), 1795815313225);
        for other in
            ["traces/in/7/x-1", "traces/in/x/0001795815313225-ab", "pending/7/a/b", "traces/in/7/0001795815313225-a/b"]
        {
            assert_eq!(batch_of(other), None, "{other}");
        }
    }

    #[test]
    fn candidate_keys_come_back_best_first() {
        let found =
            vec![(4, "conv".to_owned()), (1, "call-9".to_owned()), (8, "RM".to_owned()), (4, "conv".to_owned())];
        let mut item = Item::new();
        for (rank, values) in by_rank(&found) {
            item.insert(format!("k{rank}"), AttributeValue::Ss(values));
        }
        assert_eq!(ranked(&item), ["call-9", "conv", "RM"]);
    }
}
