//! Item keys and typed reading of DynamoDB attribute maps.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use super::StoreError;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

pub use call_ingest_core::call_key::{call_pk, parse_call_pk};

pub const HEAD: &str = "HEAD";

/// On a head, the internal ids this provider call id had before, erased since. An erase
/// leaves the head as a tombstone holding only these (and a TTL): a late copy of a write
/// that created or revised an erased call finds it and fails, instead of bringing the
/// erased id and content back. A call stored again after the erase carries them forward.
pub const ERASED_IDS: &str = "erased_ids";

/// On a head: an erase has begun (set before it deletes anything). Readers treat the call as
/// gone from then on, so a call whose erase stopped part-way reads as no call everywhere;
/// the next erase finishes it. A new revision's head does not carry it.
pub const ERASING: &str = "erasing";

/// Whether `head` is a call an erase has begun on.
pub fn is_erasing(head: &Item) -> bool {
    head.contains_key(ERASING)
}

/// On a tombstone, and carried forward on the heads of a call stored again over it: when the
/// last erase under this key happened (epoch ms). A pending submission received before it
/// is dropped when committed (`pending`).
pub const ERASED_AT: &str = "erased_at";

/// On a head: when its content was last received again (a replay, which writes no
/// revision), if after its own submission: the content was still current then.
/// Submissions are ordered by when they were received, and this is the last of them.
pub const SEEN_AT: &str = "seen_at";

/// On a head or revision written by a direct send received before the content it replaced
/// (it committed last): that content's last receipt. Its content counts as current from
/// then, not from its own receipt, so a pending copy received in between is kept below it
/// and judged against the content it replaced. Never changed once written; unlike
/// [`SEEN_AT`], which says until when content was current, not since when.
pub const CURRENT_FROM: &str = "current_from";

/// When the last erase under `item`'s key happened; 0 when none did.
pub fn erased_at(item: &Item) -> u64 {
    get_u64(item, ERASED_AT).unwrap_or(0)
}

/// Whether `item`, read at a head's key, is an erase's tombstone rather than a call.
pub fn is_tombstone(item: &Item) -> bool {
    !item.contains_key("id")
}

/// Whether `item` (a tombstone or a head) names `id` among the erased.
pub fn names_erased(item: &Item, id: u64) -> bool {
    match item.get(ERASED_IDS) {
        Some(AttributeValue::Ns(ids)) => ids.iter().any(|i| i.parse() == Ok(id)),
        _ => false,
    }
}

/// The attributes that put an item in an index: only heads carry them, so a revision is
/// neither found by id nor listed.
pub const HEAD_ONLY: &[&str] = &["id", "agent_key", "listed_ws", "listed_ms", COMMITTED];

/// The tokens of the pending submissions (S3 objects) committed into this call: a head-only
/// string set, merged from head to head, so a second commit of one of them (the queue and
/// the sweep at once, a retry after a lost delete) changes nothing, however many revisions
/// came after it.
pub const COMMITTED: &str = "pending_committed";

/// Sort key of an earlier revision, zero-padded so that they sort in order.
pub fn revision_sk(revision: u64) -> String {
    format!("REV#{revision:010}")
}

/// On a head or revision whose digest a tightening re-keyed to the identity a send under the
/// policy computes: its digest before, which a copy received before the change still has
/// (`Submission::same_content`; written by `rewrite`).
pub const DIGEST_SENT: &str = "digest_sent";

/// On a head or revision whose frame is in S3: the object's key (`frames::Frames::key`).
pub const FRAME_KEY: &str = "frame_key";

/// On a head or revision whose frame in S3 is in pieces: the table of its pieces
/// (`codec::Pieces`), so that a byte range is a ranged GET.
pub const PIECES: &str = "pieces";

/// Sort key prefix of the chunks of one submission: how frames too large for an item were
/// kept before they moved to S3. Read, and erased, until `callctl` has moved them.
pub fn chunk_prefix(token: &str) -> String {
    format!("CHUNK#{token}#")
}

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A string attribute.
pub fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)?.as_s().ok().map(String::as_str)
}

/// A number attribute that is a whole non-negative number.
pub fn get_u64(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

/// A binary attribute.
pub fn get_b<'a>(item: &'a Item, name: &str) -> Option<&'a [u8]> {
    item.get(name)?.as_b().ok().map(|b| b.as_ref())
}

/// The size DynamoDB bills an item at: attribute names plus values (strings and binaries
/// by length, numbers about one byte per two digits).
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(name, value)| name.len() + value_size(value)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.len().div_ceil(2) + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(m) => 3 + m.iter().map(|(k, v)| 1 + k.len() + value_size(v)).sum::<usize>(),
        AttributeValue::Ss(l) => l.iter().map(String::len).sum(),
        AttributeValue::Ns(l) => l.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(l) => l.iter().map(|b| b.as_ref().len()).sum(),
        _ => 0,
    }
}

/// A transaction item that puts `item` into `table` unless an item with its key exists.
pub fn put_new(table: &str, item: Item) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder().table_name(table).set_item(Some(item)).condition_expression("attribute_not_exists(pk)");
    Ok(TransactWriteItem::builder().put(put.build()?).build())
}

/// Write units DynamoDB charges for writing `size` bytes: one per started KiB.
pub fn write_units(size: usize) -> usize {
    size.div_ceil(1024).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_keys_round_trip_even_with_hashes_in_the_call_id() {
        let pk = call_pk(7, "abc#def");
        assert_eq!(parse_call_pk(&pk), Some((7, "abc#def")));
        assert!(revision_sk(2) < revision_sk(10));
    }
}
