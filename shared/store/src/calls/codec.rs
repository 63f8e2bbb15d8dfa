//! How a submission is kept: the exact request body and the normalised document in one
//! zstd frame, inline in its item or in S3 (`frames`).
//!
//! One frame with long-distance matching, because the document repeats most of the body
//! (every word and timing): compressed together, the document costs little beyond the body.

use std::io::Write;

/// Window of the frame: 16 MiB covers a body of up to 6 MiB and its document; the larger
/// bodies that arrive compressed still fit, matched a little less well past the window.
const WINDOW_LOG: u32 = 24;
/// zstd's level for a frame of up to [`DENSE_MAX`] bytes: the frame is stored for as long as
/// the call is kept, and writing it happens once. Measured on callgen calls (body and
/// document): level 16 makes the 10-minute frame 18.7 % of the request instead of 22.8 %
/// at level 3 (27.0 KB instead of 33.0 KB) and the 60-minute 17.0 % instead of 22.1 %, at
/// about 11 MB/s on this machine (150 ms for a 60-minute call; level 3: 520 MB/s).
/// Decompression is as fast either way (about 3 GB/s).
const DENSE_LEVEL: i32 = 16;
/// Above this many bytes (body and document), a frame is compressed at [`FAST_LEVEL`]: level
/// 16 runs at 8 MB/s on a 5.8 MB call's 11.6 MB, seconds on a Lambda's share of a CPU, and
/// the answer must come well inside a one-shot client's 10 s.
const DENSE_MAX: usize = 2 << 20;
const FAST_LEVEL: i32 = 3;

/// The raw body and document, compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub frame: Vec<u8>,
    /// Uncompressed size (body + document + 8-byte header).
    pub unpacked_len: usize,
}

/// A stored submission, decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    pub raw: Vec<u8>,
    pub document: Vec<u8>,
}

/// Compresses `raw` and `document` into one frame: an 8-byte little-endian length of
/// `raw`, then `raw`, then `document`.
pub fn pack(raw: &[u8], document: &[u8]) -> std::io::Result<Packed> {
    let unpacked_len = 8 + raw.len() + document.len();
    let level = if unpacked_len <= DENSE_MAX { DENSE_LEVEL } else { FAST_LEVEL };
    let mut encoder = zstd::stream::Encoder::new(Vec::with_capacity(unpacked_len / 6), level)?;
    encoder.long_distance_matching(true)?;
    encoder.window_log(WINDOW_LOG)?;
    encoder.set_pledged_src_size(Some(unpacked_len as u64))?;
    encoder.include_checksum(true)?;
    encoder.write_all(&(raw.len() as u64).to_le_bytes())?;
    encoder.write_all(raw)?;
    encoder.write_all(document)?;
    Ok(Packed { frame: encoder.finish()?, unpacked_len })
}

/// The raw body and the document of a frame made by [`pack`]. Each is read into a buffer of
/// its exact size (the frame declares its content size): no buffer grows by doubling and
/// nothing is copied, so a call at the 32 MiB cap takes its own size once in memory.
pub fn unpack(frame: &[u8]) -> std::io::Result<Unpacked> {
    use std::io::Read;
    let corrupt = || std::io::Error::new(std::io::ErrorKind::InvalidData, "stored frame is corrupt");
    let total = zstd::zstd_safe::get_frame_content_size(frame).ok().flatten();
    let mut decoder = zstd::stream::read::Decoder::new(frame)?;
    let mut header = [0u8; 8];
    decoder.read_exact(&mut header)?;
    let raw_len = usize::try_from(u64::from_le_bytes(header)).map_err(|_| corrupt())?;
    let total = total.and_then(|t| usize::try_from(t).ok());
    if total.is_some_and(|t| t < 8 + raw_len) {
        return Err(corrupt());
    }
    let mut raw = Vec::new();
    raw.try_reserve_exact(raw_len).map_err(|_| corrupt())?;
    (&mut decoder).take(raw_len as u64).read_to_end(&mut raw)?;
    if raw.len() != raw_len {
        return Err(corrupt());
    }
    let mut document = Vec::with_capacity(total.map_or(0, |t| t - 8 - raw_len));
    decoder.read_to_end(&mut document)?;
    Ok(Unpacked { raw, document })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_and_document_come_back_byte_for_byte() {
        let raw = br#"{"b": 1,  "a": [1,2,3]}"#;
        let doc = br#"{"a":[1,2,3],"b":1}"#;
        let packed = pack(raw, doc).unwrap();
        let back = unpack(&packed.frame).unwrap();
        assert_eq!(back.raw, raw);
        assert_eq!(back.document, doc);
        assert!(unpack(b"not zstd").is_err());
    }
}
