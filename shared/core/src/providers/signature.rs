//! Each provider's own signature scheme, checked on the raw body as received, in constant
//! time (`hmac`'s `verify_slice`; the shared-secret header through an HMAC of each side).
//!
//! - **Vapi**: the hook's secret in the header its credential names ([`SecretHeader`]):
//!   Vapi's Bearer Token credential by default (`Authorization: Bearer <secret>`; the
//!   header name and the prefix are settings of the credential), or the legacy
//!   `X-Vapi-Secret` (no timestamp either way: the call id's idempotency is the only replay
//!   guard); or the HMAC credential we prescribe:
//!   `x-signature` = hex(HMAC-SHA256(secret, "{x-timestamp}.{body}")), `x-timestamp` within
//!   5 minutes (epoch milliseconds; a value under 10^11 is read as seconds).
//! - **Retell** (`Retell.verify`, RetellAI/retell-python-sdk): `x-retell-signature:
//!   v=<ms>,d=<hex>`, d = hex(HMAC-SHA256(api key, body + "<ms>")), within 5 minutes.
//! - **ElevenLabs** (`construct_event`, elevenlabs/elevenlabs-python): `ElevenLabs-Signature:
//!   t=<s>,v0=<hex>`, v0 = hex(HMAC-SHA256(secret, "<t>.<body>")), no older than 30 minutes.
//!
//! One deliberate difference from the references: a timestamp more than 5 minutes ahead
//! of our clock is refused too (the references accept any future time).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::Provider;

/// How far a signature's timestamp may be behind our clock, per provider, in ms.
const VAPI_WINDOW_MS: i64 = 5 * 60 * 1000;
const RETELL_WINDOW_MS: i64 = 5 * 60 * 1000;
const ELEVENLABS_WINDOW_MS: i64 = 30 * 60 * 1000;
/// Key of the MACs that compare a shared secret with the one given, in constant time.
const SHARED_SECRET_KEY: &[u8] = b"call-ingest: compare X-Vapi-Secret";
/// How far ahead of our clock any timestamp may be.
const AHEAD_MS: i64 = 5 * 60 * 1000;

/// Where a Vapi hook's secret is sent: a header, and the prefix before the secret in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretHeader<'a> {
    /// The header's name, in lower case.
    pub name: &'a str,
    /// What precedes the secret (`Bearer`, then one space), if anything.
    pub prefix: Option<&'a str>,
}

impl SecretHeader<'static> {
    /// Vapi's Bearer Token credential, as its dashboard makes it.
    pub const BEARER: SecretHeader<'static> = SecretHeader { name: "authorization", prefix: Some("Bearer") };
    /// The legacy inline secret (a hook made before credentials had settings).
    pub const LEGACY: SecretHeader<'static> = SecretHeader { name: "x-vapi-secret", prefix: None };
}

impl SecretHeader<'_> {
    /// The secret in `value`: after the prefix (matched in any case, as HTTP's auth schemes
    /// are) and white space, or all of it without a prefix. `None` when the prefix is not there.
    fn secret<'v>(&self, value: &'v str) -> Option<&'v str> {
        let value = value.trim();
        match self.prefix {
            None => Some(value),
            Some(prefix) => {
                let head = value.get(..prefix.len())?;
                let rest = value.get(prefix.len()..)?;
                (head.eq_ignore_ascii_case(prefix) && rest.starts_with([' ', '\t'])).then(|| rest.trim_start())
            }
        }
    }
}

/// Why a request's signature was refused: said in the 401's detail. Never names a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No signature header the provider uses.
    Missing(&'static str),
    /// A signature header that is not in the provider's format.
    Malformed(&'static str),
    /// Signed too long ago, or ahead of our clock.
    Stale { age_ms: i64 },
    /// A well-formed signature that none of the hook's secrets made.
    Mismatch,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Missing(what) => write!(f, "the request carries no signature: {what}"),
            Refused::Malformed(what) => write!(f, "the signature header is not in the provider's format: {what}"),
            Refused::Stale { age_ms } if *age_ms < 0 => {
                write!(f, "the signature's timestamp is {} s ahead of our clock", age_ms.unsigned_abs() / 1000)
            }
            Refused::Stale { age_ms } => {
                write!(f, "the signature's timestamp is {} s old, outside the provider's window", age_ms / 1000)
            }
            Refused::Mismatch => write!(f, "the signature does not match the body with this hook's secret"),
        }
    }
}

/// Checks `body`'s signature for `provider`. `header` answers a request header by its
/// lower-case name; `secrets` are the hook's (two during a rotation); `now_ms` our clock;
/// `shared` where a Vapi hook's secret is sent (no other header is read for it).
pub fn verify<'h>(
    provider: Provider,
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
    secrets: &[&[u8]],
    now_ms: i64,
    shared: SecretHeader<'_>,
) -> Result<(), Refused> {
    match provider {
        Provider::Vapi => vapi(header, body, secrets, now_ms, shared),
        Provider::Retell => retell(header, body, secrets, now_ms),
        Provider::ElevenLabs => elevenlabs(header, body, secrets, now_ms),
    }
}

fn vapi<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
    secrets: &[&[u8]],
    now: i64,
    shared: SecretHeader<'_>,
) -> Result<(), Refused> {
    if let Some(value) = header(shared.name) {
        let given = shared.secret(value).ok_or(Refused::Malformed("the credential's header lacks its prefix"))?;
        // Equal in constant time: the MACs of both under one key are compared.
        let given = mac(SHARED_SECRET_KEY).chain_update(given.as_bytes()).finalize().into_bytes();
        return match secrets.iter().any(|s| mac(SHARED_SECRET_KEY).chain_update(s).verify_slice(&given).is_ok()) {
            true => Ok(()),
            false => Err(Refused::Mismatch),
        };
    }
    let missing = match shared == SecretHeader::BEARER {
        true => "Authorization: Bearer <secret>, or x-signature with x-timestamp",
        false => "the credential's header, or x-signature with x-timestamp",
    };
    let signature = header("x-signature").ok_or(Refused::Missing(missing))?;
    let stamp = header("x-timestamp").ok_or(Refused::Malformed("x-signature without x-timestamp"))?;
    let value: i64 = stamp.trim().parse().map_err(|_| Refused::Malformed("x-timestamp is not an integer"))?;
    let ms = if value.unsigned_abs() < 100_000_000_000 { value.saturating_mul(1000) } else { value };
    fresh(now, ms, VAPI_WINDOW_MS)?;
    let digest = unhex(signature.trim()).ok_or(Refused::Malformed("x-signature is not hex SHA-256"))?;
    matches(secrets, &[stamp.as_bytes(), b".", body], &digest)
}

fn retell<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
    secrets: &[&[u8]],
    now: i64,
) -> Result<(), Refused> {
    let value = header("x-retell-signature").ok_or(Refused::Missing("x-retell-signature"))?;
    // The reference's `re.fullmatch(r"v=(\d+),d=([0-9a-f]{64})")`.
    let malformed = Refused::Malformed("x-retell-signature: v=<ms>,d=<64 lower-case hex>");
    let (stamp, digest) = value.split_once(',').ok_or(malformed.clone())?;
    let stamp = stamp.strip_prefix("v=").filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    let digest = digest.strip_prefix("d=").filter(|d| d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    let (Some(stamp), Some(digest)) = (stamp, digest) else { return Err(malformed) };
    let ms: i64 = stamp.parse().map_err(|_| Refused::Malformed("v= is past any time"))?;
    fresh(now, ms, RETELL_WINDOW_MS)?;
    let digest = unhex(digest).ok_or(malformed)?;
    // Signed over the timestamp as the integer it is (`str(int(v))`: no leading zeros).
    matches(secrets, &[body, ms.to_string().as_bytes()], &digest)
}

fn elevenlabs<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
    secrets: &[&[u8]],
    now: i64,
) -> Result<(), Refused> {
    let value = header("elevenlabs-signature").ok_or(Refused::Missing("ElevenLabs-Signature"))?;
    // As the reference: parts split on ",", untrimmed; the last `t=` and `v0=` count.
    let last = |prefix: &str| value.split(',').filter_map(|p| p.strip_prefix(prefix)).next_back();
    let stamp = last("t=").ok_or(Refused::Malformed("ElevenLabs-Signature has no t=<seconds>"))?;
    let digest = last("v0=").ok_or(Refused::Malformed("ElevenLabs-Signature has no v0=<hex>"))?;
    let secs: i64 = stamp.parse().map_err(|_| Refused::Malformed("t= is not epoch seconds"))?;
    fresh(now, secs.saturating_mul(1000), ELEVENLABS_WINDOW_MS)?;
    let digest = unhex(digest).ok_or(Refused::Mismatch)?;
    matches(secrets, &[stamp.as_bytes(), b".", body], &digest)
}

fn fresh(now: i64, signed: i64, window: i64) -> Result<(), Refused> {
    let age = now.saturating_sub(signed);
    match age > window || age < -AHEAD_MS {
        true => Err(Refused::Stale { age_ms: age }),
        false => Ok(()),
    }
}

/// Whether one of `secrets` signs the concatenation of `parts` as `digest`.
fn matches(secrets: &[&[u8]], parts: &[&[u8]], digest: &[u8]) -> Result<(), Refused> {
    let signed_by = |secret: &&[u8]| {
        let mut m = mac(secret);
        parts.iter().for_each(|p| m.update(p));
        m.verify_slice(digest).is_ok()
    };
    match secrets.iter().any(signed_by) {
        true => Ok(()),
        false => Err(Refused::Mismatch),
    }
}

/// An HMAC-SHA256 keyed with `key` (also the events' signatures, `events::signing`).
pub(crate) fn mac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC keys have no length limit"))
}

/// Bytes of a hex SHA-256 digest: 64 lower-case digits, as every provider sends it (the
/// references compare the lower-case text, so an upper-case digest is refused).
fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    text.chunks_exact(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// Hex of HMAC-SHA256(`secret`, the concatenation of `parts`): how a test or `callctl`
/// signs a sample the way the provider would.
pub fn sign(secret: &[u8], parts: &[&[u8]]) -> String {
    let mut m = mac(secret);
    parts.iter().for_each(|p| m.update(p));
    crate::call::hex(&m.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_000_000_000;

    fn headers<'a>(list: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |name| list.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn each_scheme_accepts_its_own_signature_and_refuses_a_tampered_one() {
        let body = br#"{"a":1}"#;
        let key: &[u8] = b"secret";
        let retell = [("x-retell-signature", format!("v={NOW},d={}", sign(key, &[body, NOW.to_string().as_bytes()])))];
        assert_eq!(verify(Provider::Retell, headers(&retell), body, &[key], NOW, SecretHeader::LEGACY), Ok(()));
        assert_eq!(
            verify(Provider::Retell, headers(&retell), br#"{"a":2}"#, &[key], NOW, SecretHeader::LEGACY),
            Err(Refused::Mismatch)
        );
        let t = NOW / 1000;
        let eleven =
            [("elevenlabs-signature", format!("t={t},v0={}", sign(key, &[t.to_string().as_bytes(), b".", body])))];
        assert_eq!(verify(Provider::ElevenLabs, headers(&eleven), body, &[key], NOW, SecretHeader::LEGACY), Ok(()));
        assert_eq!(
            verify(Provider::ElevenLabs, headers(&eleven), body, &[b"other"], NOW, SecretHeader::LEGACY),
            Err(Refused::Mismatch)
        );
        let vapi =
            [("x-signature", sign(key, &[NOW.to_string().as_bytes(), b".", body])), ("x-timestamp", NOW.to_string())];
        assert_eq!(
            verify(Provider::Vapi, headers(&vapi), body, &[b"old", key], NOW, SecretHeader::LEGACY),
            Ok(()),
            "either secret"
        );
        let shared = [("x-vapi-secret", "secret".to_owned())];
        assert_eq!(verify(Provider::Vapi, headers(&shared), body, &[key], NOW, SecretHeader::LEGACY), Ok(()));
        let wrong = [("x-vapi-secret", "secreT".to_owned())];
        assert_eq!(
            verify(Provider::Vapi, headers(&wrong), body, &[key], NOW, SecretHeader::LEGACY),
            Err(Refused::Mismatch)
        );
        assert!(matches!(
            verify(Provider::Vapi, headers(&[]), body, &[key], NOW, SecretHeader::LEGACY),
            Err(Refused::Missing(_))
        ));
    }

    #[test]
    fn vapis_bearer_credential_is_read_from_its_own_header_only() {
        let body = b"{}";
        let key: &[u8] = b"s3cret";
        let bearer = |value: &str| {
            let h = [("authorization", value.to_owned())];
            verify(Provider::Vapi, headers(&h), body, &[key], NOW, SecretHeader::BEARER)
        };
        assert_eq!(bearer("Bearer s3cret"), Ok(()));
        assert_eq!(bearer("bearer  s3cret "), Ok(()), "the scheme in any case, white space around");
        assert_eq!(bearer("Bearer s3creT"), Err(Refused::Mismatch));
        assert!(matches!(bearer("s3cret"), Err(Refused::Malformed(_))), "no prefix where one is set");
        assert!(matches!(bearer("Bearers3cret"), Err(Refused::Malformed(_))));
        // The legacy header is not read for a hook whose credential is the Bearer one.
        let legacy = [("x-vapi-secret", "s3cret".to_owned())];
        assert!(matches!(
            verify(Provider::Vapi, headers(&legacy), body, &[key], NOW, SecretHeader::BEARER),
            Err(Refused::Missing(_))
        ));
        // A custom header with no prefix: the whole value is the secret.
        let custom = SecretHeader { name: "x-call-ingest-key", prefix: None };
        let h = [("x-call-ingest-key", "s3cret".to_owned())];
        assert_eq!(verify(Provider::Vapi, headers(&h), body, &[key], NOW, custom), Ok(()));
        let h = [("authorization", "Bearer s3cret".to_owned())];
        assert!(matches!(verify(Provider::Vapi, headers(&h), body, &[key], NOW, custom), Err(Refused::Missing(_))));
    }

    #[test]
    fn windows_are_each_providers_and_the_future_is_refused_past_five_minutes() {
        let body = b"{}";
        let key: &[u8] = b"k";
        let retell = |ms: i64| {
            let h = [("x-retell-signature", format!("v={ms},d={}", sign(key, &[body, ms.to_string().as_bytes()])))];
            verify(Provider::Retell, headers(&h), body, &[key], NOW, SecretHeader::LEGACY)
        };
        assert_eq!(retell(NOW - 300_000), Ok(()));
        assert!(matches!(retell(NOW - 300_001), Err(Refused::Stale { .. })));
        assert_eq!(retell(NOW + 300_000), Ok(()));
        assert!(matches!(retell(NOW + 300_001), Err(Refused::Stale { .. })));
        let eleven = |s: i64| {
            let h =
                [("elevenlabs-signature", format!("t={s},v0={}", sign(key, &[s.to_string().as_bytes(), b".", body])))];
            verify(Provider::ElevenLabs, headers(&h), body, &[key], NOW, SecretHeader::LEGACY)
        };
        assert_eq!(eleven(NOW / 1000 - 1800), Ok(()));
        assert!(matches!(eleven(NOW / 1000 - 1801), Err(Refused::Stale { .. })));
        assert!(matches!(eleven(NOW / 1000 + 301), Err(Refused::Stale { .. })));
        let vapi = |stamp: String| {
            let h = [("x-signature", sign(key, &[stamp.as_bytes(), b".", body])), ("x-timestamp", stamp)];
            verify(Provider::Vapi, headers(&h), body, &[key], NOW, SecretHeader::LEGACY)
        };
        assert_eq!(vapi((NOW / 1000 - 299).to_string()), Ok(()), "seconds");
        assert!(matches!(vapi((NOW - 300_001).to_string()), Err(Refused::Stale { .. })));
    }

    #[test]
    fn malformed_headers_are_told_apart_from_wrong_ones() {
        let upper = format!("v={NOW},d={}", "A".repeat(64));
        for value in [
            "",
            "v=1",
            "d=ab,v=1",
            "v=x,d=00",
            &format!("v={NOW},d=zz"),
            &upper,
            &format!(" v={NOW},d={}", "a".repeat(64)),
        ] {
            let h = [("x-retell-signature", value.to_owned())];
            assert!(
                matches!(
                    verify(Provider::Retell, headers(&h), b"", &[b"k"], NOW, SecretHeader::LEGACY),
                    Err(Refused::Malformed(_))
                ),
                "{value}"
            );
        }
    }
}
