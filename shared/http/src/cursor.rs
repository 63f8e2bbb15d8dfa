//! List cursors: where a page ended, opaque to clients, signed (HMAC-SHA-256) together with
//! the listing it belongs to (workspace, agent, start range). A cursor that was forged,
//! altered, cut short or issued for another listing fails the check and is refused before
//! anything is read; even one that passed could only move within the listing the caller is
//! allowed to read, whose partition comes from the credential, never from the cursor.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use call_ingest_store::calls::{Listing, Position};
use call_ingest_store::config::CursorKey;

/// The first byte of every cursor: its format.
const VERSION: u8 = 1;
/// Bytes of the tag kept (128 bits).
const TAG_BYTES: usize = 16;
/// The longest cursor taken: a version, a time, a provider call id of at most 200
/// characters (800 bytes) and the tag, in base64.
pub const MAX_CURSOR_CHARS: usize = 1200;

/// Why a cursor was refused (one answer for every reason: 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCursor;

/// The cursor of the page after `position` in `listing`.
pub fn issue(key: &CursorKey, listing: &Listing<'_>, position: &Position) -> Result<String, BadCursor> {
    let mut bytes = Vec::with_capacity(1 + 8 + position.call_id.len() + TAG_BYTES);
    bytes.push(VERSION);
    bytes.extend_from_slice(&position.listed_ms.to_be_bytes());
    bytes.extend_from_slice(position.call_id.as_bytes());
    let tag = signer(key, listing, &bytes)?.finalize().into_bytes();
    bytes.extend_from_slice(&tag[..TAG_BYTES]);
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The position a cursor holds, if it was issued for `listing` with this key.
pub fn open(key: &CursorKey, listing: &Listing<'_>, cursor: &str) -> Result<Position, BadCursor> {
    if cursor.len() > MAX_CURSOR_CHARS {
        return Err(BadCursor);
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| BadCursor)?;
    if bytes.len() < 1 + 8 + TAG_BYTES || bytes[0] != VERSION {
        return Err(BadCursor);
    }
    let (signed, tag) = bytes.split_at(bytes.len() - TAG_BYTES);
    signer(key, listing, signed)?.verify_truncated_left(tag).map_err(|_| BadCursor)?;
    let (time, call_id) = signed[1..].split_at(8);
    let listed_ms = u64::from_be_bytes(time.try_into().map_err(|_| BadCursor)?);
    let call_id = std::str::from_utf8(call_id).map_err(|_| BadCursor)?;
    if !(listing.from_ms..=listing.to_ms).contains(&listed_ms) {
        return Err(BadCursor);
    }
    Ok(Position { listed_ms, call_id: call_id.to_owned() })
}

/// A MAC over the listing (every field length-prefixed or fixed-size, so no two listings
/// read alike) and then `bytes`.
fn signer(key: &CursorKey, listing: &Listing<'_>, bytes: &[u8]) -> Result<Hmac<Sha256>, BadCursor> {
    // HMAC takes a key of any length: this never fails.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.as_bytes()).map_err(|_| BadCursor)?;
    mac.update(b"call-ingest list cursor\0");
    mac.update(&listing.workspace_id.to_be_bytes());
    let agent = listing.agent_id.unwrap_or_default().as_bytes();
    mac.update(&[u8::from(listing.agent_id.is_some())]);
    mac.update(&(agent.len() as u64).to_be_bytes());
    mac.update(agent);
    mac.update(&listing.from_ms.to_be_bytes());
    mac.update(&listing.to_ms.to_be_bytes());
    mac.update(bytes);
    Ok(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(workspace_id: u64, agent_id: Option<&str>) -> Listing<'_> {
        Listing { workspace_id, agent_id, from_ms: 0, to_ms: u64::MAX, after: None, limit: 10 }
    }

    #[test]
    fn a_cursor_opens_only_for_its_own_listing_and_key() {
        let key = CursorKey::new("k".repeat(32));
        let here = listing(1, Some("ag_1"));
        let at = Position { listed_ms: 1_700_000_000_000, call_id: "call#1/é".into() };
        let cursor = issue(&key, &here, &at).unwrap();
        assert_eq!(open(&key, &here, &cursor), Ok(at.clone()));
        assert!(cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{cursor}");
        for other in [listing(2, Some("ag_1")), listing(1, Some("ag_2")), listing(1, None)] {
            assert_eq!(open(&key, &other, &cursor), Err(BadCursor), "{other:?}");
        }
        let narrower = Listing { to_ms: 1_800_000_000_000, ..here.clone() };
        assert_eq!(open(&key, &narrower, &cursor), Err(BadCursor));
        assert_eq!(open(&CursorKey::new("j".repeat(32)), &here, &cursor), Err(BadCursor));
    }

    proptest::proptest! {
        #[test]
        fn any_position_round_trips_and_any_text_is_refused_without_panicking(
            listed_ms in proptest::prelude::any::<u64>(),
            call_id in "\\PC{0,200}",
            junk in "\\PC{0,1300}",
        ) {
            let key = CursorKey::new("k".repeat(32));
            let here = listing(7, Some("ag"));
            let at = Position { listed_ms, call_id };
            proptest::prop_assert_eq!(open(&key, &here, &issue(&key, &here, &at).unwrap()), Ok(at));
            proptest::prop_assert_eq!(open(&key, &here, &junk), Err(BadCursor));
        }
    }

    #[test]
    fn an_altered_or_cut_cursor_is_refused() {
        let key = CursorKey::new("k".repeat(32));
        let here = listing(1, None);
        let cursor = issue(&key, &here, &Position { listed_ms: 5, call_id: "c".into() }).unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        for i in 0..bytes.len() {
            bytes[i] ^= 1;
            assert_eq!(open(&key, &here, &URL_SAFE_NO_PAD.encode(&bytes)), Err(BadCursor), "byte {i}");
            bytes[i] ^= 1;
        }
        for cut in [0, 1, 10, cursor.len() - 1] {
            assert_eq!(open(&key, &here, &cursor[..cut]), Err(BadCursor));
        }
        for junk in ["", "!!!", "a.b", &"A".repeat(MAX_CURSOR_CHARS + 4)] {
            assert_eq!(open(&key, &here, junk), Err(BadCursor));
        }
    }
}
