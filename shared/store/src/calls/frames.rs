//! Frames in S3: a submission's compressed frame (the raw body and the normalised document,
//! `codec`) when it is larger than [`INLINE_MAX`], where DynamoDB's write units cost more
//! than one S3 PUT. The head or revision item keeps the object's key (`frame_key`).
//!
//! Keys belong to one submission: `frames/<workspace>/<sha256 of the provider call id, 32
//! hex>/<submission token>` (`-<sha256 of the frame, 32 hex>` after it for frames written
//! before an erase had to name them ahead). The SDK's retry of a PUT whose
//! reply was lost, a late copy of it, and the commit of the same submission's pending copy
//! name the same object, and `If-None-Match: *` writes it once. Another submission of the
//! same bytes (a call stored again after an erase) names another object, so a late or
//! repeated delete of an erased call's frame can never reach a call stored after it. A
//! replay that finds the head already holding its content writes no object. An erase
//! finds a call's objects from its items. The object carries the submission's identity as metadata (workspace, agent,
//! provider call id, received time), so it can be committed or swept without DynamoDB.

use aws_sdk_s3::primitives::ByteStream;
use sha2::{Digest, Sha256};

use super::{Owner, StoreError};
use call_ingest_core::call::hex;

/// Frames up to this many bytes stay inline in their item. Above it S3 is cheaper overall:
/// its PUT ($5 per million) costs what 8 KB of item writes do (on-demand, $0.625 per million
/// write units of 1 KB), and it stores a GB for $0.023 a month against DynamoDB's $0.25, so
/// a 4–8 KB frame's extra write is paid back in storage within months.
pub const INLINE_MAX: usize = 4 * 1024;

/// An S3 error, sorted: besides 5xx, a conditional write that met a concurrent one (409
/// ConditionalRequestConflict) and a request S3 timed out on (400 RequestTimeout) are
/// "try again".
pub(crate) fn s3_error<E: aws_sdk_s3::error::ProvideErrorMetadata>(
    e: aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> StoreError {
    let transient = e.raw_response().is_some_and(|r| r.status().as_u16() == 409)
        || aws_sdk_s3::error::ProvideErrorMetadata::code(&e) == Some("RequestTimeout");
    match transient {
        true => StoreError::Unavailable(format!(
            "S3: {}",
            aws_sdk_s3::error::ProvideErrorMetadata::code(&e).unwrap_or("409")
        )),
        false => StoreError::from_sdk(e),
    }
}

/// The bucket of frames, and a client of it.
#[derive(Debug, Clone)]
pub struct Frames {
    client: aws_sdk_s3::Client,
    bucket: String,
}

impl Frames {
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Frames { client, bucket: bucket.into() }
    }

    pub fn client(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key of the frame of submission `token` of call `call_id` in `workspace_id` (one
    /// submission, one content: the pipeline is deterministic). An erase can name it before
    /// it exists, so a late copy of its PUT finds the erase's marker there
    /// ([`Frames::erase`]).
    pub fn key(workspace_id: u64, call_id: &str, token: &str) -> String {
        let call = Sha256::digest(call_id.as_bytes());
        let token: String = token.chars().filter(char::is_ascii_alphanumeric).take(32).collect();
        format!("frames/{workspace_id}/{}/{token}", hex(&call[..16]))
    }

    /// The submission token a frame's key names (`<token>`, or `<token>-<content digest>`
    /// for a frame written before keys were the token alone).
    pub fn token_of(key: &str) -> &str {
        let name = key.rsplit('/').next().unwrap_or_default();
        name.split_once('-').map_or(name, |(token, _)| token)
    }

    /// Writes `frame` at `key` unless an object is there already: the same bytes (one
    /// submission's), or an erase's marker (the call was erased: nothing will name it). Its
    /// digest goes in its metadata, for an operator comparing it with its items'.
    pub async fn put(
        &self,
        key: &str,
        frame: bytes::Bytes,
        owner: Owner<'_>,
        call_id: &str,
        received_ms: u64,
    ) -> Result<(), StoreError> {
        let digest = hex(&Sha256::digest(&frame)[..16]);
        let result = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .if_none_match("*")
            .content_type("application/zstd")
            .metadata("workspace", owner.workspace_id.to_string())
            .metadata("agent", hex(owner.agent_id.as_bytes()))
            .metadata("call-id", hex(call_id.as_bytes()))
            .metadata("received-ms", received_ms.to_string())
            .metadata("digest", digest.clone())
            .body(ByteStream::from(frame))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // 412: the object exists: this submission's frame (one content: the pipeline is
            // deterministic), or an erase's marker (then nothing will name it).
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => Ok(()),
            Err(e) => Err(s3_error(e)),
        }
    }

    /// The frame at `key`, or `None` when it is gone (its call is being erased).
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.fetch(key, None).await
    }

    /// Bytes `first..=last` of the frame at `key` (one ranged GET), or `None` when it is gone.
    pub async fn get_range(&self, key: &str, first: u64, last: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let bytes = self.fetch(key, Some(format!("bytes={first}-{last}"))).await?;
        match bytes {
            Some(b) if b.len() as u64 != last - first + 1 => {
                Err(StoreError::Internal(format!("frame {key} is shorter than its table says")))
            }
            other => Ok(other),
        }
    }

    async fn fetch(&self, key: &str, range: Option<String>) -> Result<Option<Vec<u8>>, StoreError> {
        let result = self.client.get_object().bucket(&self.bucket).key(key).set_range(range).send().await;
        let out = match result {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            // A range of an erased frame's empty marker.
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 416) => return Ok(None),
            Err(e) => return Err(StoreError::from_sdk(e)),
        };
        let bytes =
            out.body.collect().await.map_err(|e| StoreError::Unavailable(format!("reading a frame failed: {}", e)))?;
        // An erased frame's marker ([`Frames::erase`]): no frame.
        Ok(Some(bytes.to_vec()).filter(|b| !b.is_empty()))
    }

    /// Creates the bucket unless it exists (the local stack; in AWS the template does);
    /// answers whether it created it.
    pub async fn create_bucket(&self) -> Result<bool, StoreError> {
        // In us-east-1 creating a bucket you own answers 200, as if it were new: ask first.
        match self.client.head_bucket().bucket(&self.bucket).send().await {
            Ok(_) => return Ok(false),
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => {}
            Err(e) => return Err(StoreError::from_sdk(e)),
        }
        match self.client.create_bucket().bucket(&self.bucket).send().await {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_bucket_already_owned_by_you() || s.is_bucket_already_exists()) =>
            {
                Ok(false)
            }
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }

    /// Erases the frame at `key`: overwrites it with an empty object rather than deleting
    /// it. A copy of its PUT that arrives late (stuck in the network, applied after the
    /// SDK's retry) is conditioned on no object being there (`If-None-Match: *`), so it
    /// fails on the marker instead of bringing erased content back, as a delete would let
    /// it. Empty objects under `frames/` are markers: readers take one as no frame, and the
    /// bucket's lifecycle removes them after 8 days, long after any late request.
    pub async fn erase(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from_static(b""))
            .send()
            .await
            .map_err(s3_error)?;
        Ok(())
    }

    /// Copies `from` to `to` (with `metadata` in place of its own, when given), then deletes
    /// `from`. Run twice, it copies the same bytes again: the copy's name is the
    /// submission's own (a pending or held key), and committing it twice stores it once.
    pub async fn move_object(
        &self,
        from: &str,
        to: &str,
        metadata: Option<std::collections::HashMap<String, String>>,
    ) -> Result<(), StoreError> {
        let copy =
            self.client.copy_object().bucket(&self.bucket).copy_source(format!("{}/{from}", self.bucket)).key(to);
        let copy = match metadata {
            Some(metadata) => copy
                .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
                .content_type("application/json")
                .set_metadata(Some(metadata)),
            None => copy,
        };
        copy.send().await.map_err(StoreError::from_sdk)?;
        self.delete(from).await
    }

    /// Deletes the object at `key` (deleting one that is gone succeeds).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.client.delete_object().bucket(&self.bucket).key(key).send().await.map_err(StoreError::from_sdk)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_per_workspace_call_and_submission_and_never_hold_the_call_id() {
        let a = Frames::key(7, "call/../1 ü", "00ff00ff00ff00ff");
        assert!(a.starts_with("frames/7/"), "{a}");
        let hex32 = |h: &str| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit());
        let parts: Vec<&str> = a.split('/').collect();
        assert!(parts.len() == 4 && hex32(parts[2]) && parts[3] == "00ff00ff00ff00ff", "{a}");
        assert_eq!(a, Frames::key(7, "call/../1 ü", "00ff00ff00ff00ff"), "one submission, one key");
        assert_ne!(a, Frames::key(7, "call/../1 ü", "11ff00ff00ff00ff"), "another submission, another key");
        assert_ne!(a, Frames::key(8, "call/../1 ü", "00ff00ff00ff00ff"));
        assert_ne!(a, Frames::key(7, "call/../2 ü", "00ff00ff00ff00ff"));
        assert!(!Frames::key(7, "c", "../x").contains(".."), "a token never escapes its folder");
        assert_eq!(Frames::token_of(&a), "00ff00ff00ff00ff");
        assert_eq!(Frames::token_of("frames/7/ab/00ff-c0ffee"), "00ff", "a key of the earlier layout");
    }
}
