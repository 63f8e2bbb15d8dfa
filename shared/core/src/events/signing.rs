//! Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "{webhook-id}.{webhook-timestamp}.{body}">`, one per secret (space-separated) while a
//! rotation keeps two; secrets are `whsec_` and the base64 of their bytes.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::Mac;

/// What a secret's text starts with.
pub const SECRET_PREFIX: &str = "whsec_";
/// The fewest bytes a secret may have (the specification: 24 to 64).
pub const MIN_SECRET_BYTES: usize = 24;
/// The most bytes a secret may have.
pub const MAX_SECRET_BYTES: usize = 64;

/// An endpoint's signing secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A secret of these bytes (random ones: the caller draws them), 24 to 64 of them.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Secret, String> {
        match bytes.len() {
            MIN_SECRET_BYTES..=MAX_SECRET_BYTES => Ok(Secret(bytes)),
            n => Err(format!("a signing secret has {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes, not {n}")),
        }
    }

    /// A secret as shown to its owner (`whsec_…`).
    pub fn parse(text: &str) -> Result<Secret, String> {
        let encoded =
            text.strip_prefix(SECRET_PREFIX).ok_or_else(|| format!("a secret starts with {SECRET_PREFIX}"))?;
        let bytes = STANDARD.decode(encoded).map_err(|e| format!("a secret is base64 after {SECRET_PREFIX}: {e}"))?;
        Secret::from_bytes(bytes)
    }

    /// The secret as shown to its owner, once, when it is made: `whsec_` and base64.
    pub fn reveal(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.0))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// This secret's signature of a message: `v1,` and the base64 of the HMAC-SHA256 of
    /// `{id}.{timestamp}.{body}`.
    pub fn sign(&self, id: &str, timestamp: u64, body: &[u8]) -> String {
        let mut mac = crate::providers::signature::mac(&self.0);
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// The `webhook-signature` header of a message: each secret's signature, space-separated
/// (the current secret first; during a rotation's overlap the one before it too).
pub fn signature(secrets: &[Secret], id: &str, timestamp: u64, body: &[u8]) -> String {
    secrets.iter().map(|s| s.sign(id, timestamp, body)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = br#"{"type":"call.stored","data":{"id":1}}"#;
    const ID: &str = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";

    /// Expected values from the reference library (`standardwebhooks` 1.1.0 for Python,
    /// `Webhook(secret).sign(...)`); the end-to-end tests verify delivered messages with it.
    #[test]
    fn signs_as_the_reference_library_does() {
        let one = Secret::parse("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX").unwrap();
        assert_eq!(one.bytes(), (0u8..24).collect::<Vec<_>>());
        assert_eq!(one.sign(ID, 1_674_087_231, BODY), "v1,Nm1h09xFtYSEdV+SIog9PpYpqC9Jvpy+7eRFucqdW9g=");
        let two = Secret::from_bytes((100u8..132).collect()).unwrap();
        assert_eq!(two.reveal(), "whsec_ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=");
        assert_eq!(
            signature(&[two, one], ID, 1_674_087_231, BODY),
            "v1,kCefwI7DTv8EX6O/aFWQ89vPRr+E6K6fs4C0VTNZQq8= v1,Nm1h09xFtYSEdV+SIog9PpYpqC9Jvpy+7eRFucqdW9g="
        );
    }

    #[test]
    fn secrets_are_24_to_64_bytes_of_whsec_base64() {
        assert!(Secret::from_bytes(vec![7; 23]).is_err());
        assert!(Secret::from_bytes(vec![7; 65]).is_err());
        let s = Secret::from_bytes(vec![7; 32]).unwrap();
        assert_eq!(Secret::parse(&s.reveal()).unwrap(), s);
        assert!(Secret::parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYX").is_err(), "no prefix");
        assert!(Secret::parse("whsec_not base64!").is_err());
        assert_eq!(format!("{s:?}"), "Secret(..)", "never in a log");
    }
}
