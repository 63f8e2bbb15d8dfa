//! Webhook secrets, sealed: KMS envelope encryption. Each seal asks KMS for a fresh
//! AES-256 data key (`GenerateDataKey`), encrypts the secret with it (AES-256-GCM), and
//! keeps only the data key as KMS encrypted it. Opening asks KMS to decrypt the data key
//! (`Decrypt`). Both bind an encryption context (the hook and its workspace), so a sealed
//! secret copied to another hook's item does not open. The table never holds a secret in
//! plain text; opened secrets are cached in the instance's memory for a few minutes, keyed
//! by the sealed bytes (a rotation seals new ones), and never logged.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;

use crate::calls::StoreError;

/// How long an opened secret stays in an instance's memory.
const OPENED_TTL: Duration = Duration::from_secs(300);
/// More opened secrets than this and the cache starts over.
const MAX_OPENED: usize = 1000;
const NONCE_BYTES: usize = 12;

/// Secrets opened on this instance, by their hook, workspace and sealed bytes: when each
/// was opened, and it.
type Opened = HashMap<Vec<u8>, (Instant, Vec<u8>)>;

/// What the AES-GCM tag binds besides the secret: the hook and its workspace.
fn aad(hook: &str, workspace_id: u64) -> Vec<u8> {
    format!("{hook}\0{workspace_id}").into_bytes()
}

/// A KMS key to seal with, and a client of it.
pub struct Sealer {
    client: aws_sdk_kms::Client,
    key_id: String,
    opened: Mutex<Opened>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl Sealer {
    pub fn new(client: aws_sdk_kms::Client, key_id: impl Into<String>) -> Sealer {
        Sealer { client, key_id: key_id.into(), opened: Mutex::new(HashMap::new()) }
    }

    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// `secret` sealed for `hook` of `workspace_id`: the data key as KMS encrypted it
    /// (length-prefixed), the nonce, then the ciphertext and its tag.
    pub async fn seal(&self, secret: &[u8], hook: &str, workspace_id: u64) -> Result<Vec<u8>, StoreError> {
        let out = self
            .client
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .encryption_context("hook", hook)
            .encryption_context("workspace", workspace_id.to_string())
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        let (Some(plain), Some(wrapped)) = (out.plaintext(), out.ciphertext_blob()) else {
            return Err(StoreError::Internal("KMS gave no data key".into()));
        };
        let cipher =
            Aes256Gcm::new_from_slice(plain.as_ref()).map_err(|_| StoreError::Internal("data key size".into()))?;
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::getrandom(&mut nonce).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
        let sealed = cipher
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: secret, aad: &aad(hook, workspace_id) })
            .map_err(|_| StoreError::Internal("sealing failed".into()))?;
        let wrapped = wrapped.as_ref();
        let len = u16::try_from(wrapped.len()).map_err(|_| StoreError::Internal("data key too long".into()))?;
        Ok([&len.to_be_bytes()[..], wrapped, &nonce, &sealed].concat())
    }

    /// The secret `sealed` holds, for `hook` of `workspace_id`.
    pub async fn open(&self, sealed: &[u8], hook: &str, workspace_id: u64) -> Result<Vec<u8>, StoreError> {
        // Cached under the hook and workspace too: a sealed secret copied to another hook's
        // item never opens from the cache where KMS would refuse it.
        let key = [&aad(hook, workspace_id)[..], b"\0", sealed].concat();
        if let Some(secret) = self.cached(&key) {
            return Ok(secret);
        }
        let corrupt = || StoreError::Internal(format!("the sealed secret of hook {hook} is corrupt"));
        let len =
            usize::from(u16::from_be_bytes(sealed.get(..2).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?));
        let wrapped = sealed.get(2..2 + len).ok_or_else(corrupt)?;
        let nonce = sealed.get(2 + len..2 + len + NONCE_BYTES).ok_or_else(corrupt)?;
        let body = sealed.get(2 + len + NONCE_BYTES..).ok_or_else(corrupt)?;
        let out = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(wrapped))
            .encryption_context("hook", hook)
            .encryption_context("workspace", workspace_id.to_string())
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        let plain = out.plaintext().ok_or_else(corrupt)?;
        let cipher = Aes256Gcm::new_from_slice(plain.as_ref()).map_err(|_| corrupt())?;
        let secret = cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: body, aad: &aad(hook, workspace_id) })
            .map_err(|_| corrupt())?;
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        if opened.len() >= MAX_OPENED {
            opened.clear();
        }
        opened.insert(key, (Instant::now(), secret.clone()));
        Ok(secret)
    }

    fn cached(&self, key: &[u8]) -> Option<Vec<u8>> {
        let opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        opened.get(key).filter(|(at, _)| at.elapsed() < OPENED_TTL).map(|(_, s)| s.clone())
    }

    /// Creates the key and its alias unless the alias exists (the local stack; in AWS the
    /// template does). Answers whether it created them.
    pub async fn create_key(&self) -> Result<bool, StoreError> {
        if self.client.describe_key().key_id(&self.key_id).send().await.is_ok() {
            return Ok(false);
        }
        let key = self
            .client
            .create_key()
            .description("call-ingest: seals webhook secrets")
            .send()
            .await
            .map_err(StoreError::from_sdk)?;
        let id = key.key_metadata().map(|m| m.key_id().to_owned()).unwrap_or_default();
        if let Some(alias) = self.key_id.strip_prefix("alias/").map(|_| self.key_id.clone()) {
            self.client
                .create_alias()
                .alias_name(alias)
                .target_key_id(id)
                .send()
                .await
                .map_err(StoreError::from_sdk)?;
        }
        Ok(true)
    }
}
