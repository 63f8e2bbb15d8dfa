//! How a submission is kept: the exact request body and the normalised document in one
//! zstd frame, inline in its item or in S3 (`frames`).
//!
//! One frame with long-distance matching, because the document repeats most of the body
//! (every word and timing): compressed together, the document costs little beyond the body.
//!
//! Above [`DENSE_MAX`] bytes the frame is a run of independent zstd frames, one per
//! [`PIECE`] bytes of the stream ([`Pieces`]), so that a byte range of the body or the
//! document is a ranged GET of the pieces that hold it, not a download of the whole frame.
//! The document then no longer matches against the body: such a frame is about twice the
//! size of one frame. Only calls of over about an hour and a half are that large.

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

/// Bytes of the stream (header, body, document) in one piece of a frame in pieces.
pub const PIECE: usize = 1 << 20;

/// The raw body and document, compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub frame: Vec<u8>,
    /// Uncompressed size (body + document + 8-byte header).
    pub unpacked_len: usize,
    /// Where each piece ends, for a frame in pieces.
    pub pieces: Option<Pieces>,
}

/// The table of a frame in pieces: piece `i` holds bytes `i * size ..` of the stream, and
/// ends at byte `ends[i]` of the frame (exclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    pub size: u32,
    pub ends: Vec<u32>,
}

impl Pieces {
    /// As kept in an item: little-endian `size`, then each end.
    pub fn to_bytes(&self) -> Vec<u8> {
        std::iter::once(self.size).chain(self.ends.iter().copied()).flat_map(u32::to_le_bytes).collect()
    }

    /// A table read back, for a stream of `unpacked` bytes in a frame of `frame` bytes;
    /// `None` unless it is one [`to_bytes`](Self::to_bytes) makes for them.
    pub fn of(bytes: &[u8], unpacked: u64, frame: u64) -> Option<Pieces> {
        let pieces = Pieces::from_bytes(bytes)?;
        let count = unpacked.div_ceil(u64::from(pieces.size));
        let whole = pieces.ends.len() as u64 == count && pieces.ends.last().map(|e| u64::from(*e)) == Some(frame);
        whole.then_some(pieces)
    }

    /// A table read back; `None` unless it is one [`to_bytes`](Self::to_bytes) makes.
    pub fn from_bytes(bytes: &[u8]) -> Option<Pieces> {
        let mut words = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let size = words.next().filter(|s| *s > 0)?;
        let ends: Vec<u32> = words.collect();
        let ordered = ends.windows(2).all(|w| w[0] < w[1]);
        (bytes.len() % 4 == 0 && !ends.is_empty() && ordered).then_some(Pieces { size, ends })
    }

    /// The bytes of the frame (`first..=last`) that hold bytes `from..=to` of the stream,
    /// and where `from` is in what they decompress to; `None` past the last piece.
    pub fn locate(&self, from: u64, to: u64) -> Option<(u64, u64, u64)> {
        let size = u64::from(self.size);
        let (i, j) = (usize::try_from(from / size).ok()?, usize::try_from(to / size).ok()?);
        let last = u64::from(*self.ends.get(j)?).checked_sub(1)?;
        let first = match i {
            0 => 0,
            i => u64::from(*self.ends.get(i - 1)?),
        };
        Some((first, last, from - i as u64 * size))
    }
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
    if unpacked_len > DENSE_MAX {
        return pack_in_pieces(raw, document);
    }
    let mut encoder = zstd::stream::Encoder::new(Vec::with_capacity(unpacked_len / 6), DENSE_LEVEL)?;
    encoder.long_distance_matching(true)?;
    encoder.window_log(WINDOW_LOG)?;
    encoder.set_pledged_src_size(Some(unpacked_len as u64))?;
    encoder.include_checksum(true)?;
    encoder.write_all(&(raw.len() as u64).to_le_bytes())?;
    encoder.write_all(raw)?;
    encoder.write_all(document)?;
    Ok(Packed { frame: encoder.finish()?, unpacked_len, pieces: None })
}

/// [`pack`] for a large stream: one independent frame per [`PIECE`] bytes, each with its
/// content size and checksum.
fn pack_in_pieces(raw: &[u8], document: &[u8]) -> std::io::Result<Packed> {
    use std::io::Read;
    let unpacked_len = 8 + raw.len() + document.len();
    let header = (raw.len() as u64).to_le_bytes();
    let mut stream = header.as_slice().chain(raw).chain(document);
    let mut compressor = zstd::bulk::Compressor::new(FAST_LEVEL)?;
    compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    let mut frame = Vec::with_capacity(unpacked_len / 4);
    let mut ends = Vec::with_capacity(unpacked_len.div_ceil(PIECE));
    let mut piece = Vec::with_capacity(PIECE);
    loop {
        piece.clear();
        (&mut stream).take(PIECE as u64).read_to_end(&mut piece)?;
        if piece.is_empty() {
            break;
        }
        frame.extend_from_slice(&compressor.compress(&piece)?);
        let end = u32::try_from(frame.len()).map_err(|_| std::io::Error::other("frame over 4 GiB"))?;
        ends.push(end);
    }
    Ok(Packed { frame, unpacked_len, pieces: Some(Pieces { size: PIECE as u32, ends }) })
}

/// The raw body and the document of a frame made by [`pack`]. Each is read into a buffer of
/// its exact size (the frame declares its content size): no buffer grows by doubling and
/// nothing is copied, so a call at the 32 MiB cap takes its own size once in memory.
pub fn unpack(frame: &[u8]) -> std::io::Result<Unpacked> {
    use std::io::Read;
    let corrupt = || std::io::Error::new(std::io::ErrorKind::InvalidData, "stored frame is corrupt");
    let total = content_size(frame);
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

/// What `frames` (one or more whole zstd frames) decompress to, in bytes, from their
/// headers; `None` when one does not say.
fn content_size(mut frames: &[u8]) -> Option<u64> {
    let mut total = 0u64;
    while !frames.is_empty() {
        total = total.checked_add(zstd::zstd_safe::get_frame_content_size(frames).ok().flatten()?)?;
        let len = zstd::zstd_safe::find_frame_compressed_size(frames).ok()?;
        frames = frames.get(len..).filter(|_| len > 0)?;
    }
    Some(total)
}

/// Bytes `skip..skip + len` of what `frames` (one or more whole zstd frames) decompress
/// to. With `to_end`, the rest is decompressed too (and dropped), so that every frame's
/// checksum is checked: a ranged GET carries no checksum of its own.
pub fn unpack_span(frames: &[u8], skip: u64, len: usize, to_end: bool) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut decoder = zstd::stream::read::Decoder::with_buffer(frames)?;
    std::io::copy(&mut (&mut decoder).take(skip), &mut std::io::sink())?;
    let mut span = Vec::new();
    span.try_reserve_exact(len).map_err(|_| std::io::Error::other("span too large"))?;
    (&mut decoder).take(len as u64).read_to_end(&mut span)?;
    if span.len() != len {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the frame ends before the span"));
    }
    if to_end {
        std::io::copy(&mut decoder, &mut std::io::sink())?;
    }
    Ok(span)
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

    /// A stream of `len` bytes that compresses somewhat, as JSON does.
    fn text(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                b"abcdefgh {}:,\"0123"[(x >> 59) as usize % 16]
            })
            .collect()
    }

    #[test]
    fn a_large_frame_is_in_pieces_and_any_span_of_it_comes_from_its_own_pieces() {
        let (raw, doc) = (text(1_500_000, 1), text(2_300_000, 2));
        let packed = pack(&raw, &doc).unwrap();
        let pieces = packed.pieces.clone().expect("over DENSE_MAX: in pieces");
        assert_eq!(pieces.ends.len(), packed.unpacked_len.div_ceil(PIECE));
        assert_eq!(*pieces.ends.last().unwrap() as usize, packed.frame.len());
        assert_eq!(Pieces::from_bytes(&pieces.to_bytes()), Some(pieces.clone()));
        let (unpacked, frame) = (packed.unpacked_len as u64, packed.frame.len() as u64);
        assert_eq!(Pieces::of(&pieces.to_bytes(), unpacked, frame), Some(pieces.clone()));
        assert_eq!(Pieces::of(&pieces.to_bytes(), unpacked + PIECE as u64, frame), None, "a piece short");
        assert_eq!(Pieces::of(&pieces.to_bytes(), unpacked, frame + 1), None, "not this frame's");
        assert_eq!(content_size(&packed.frame), Some(packed.unpacked_len as u64));
        let back = unpack(&packed.frame).unwrap();
        assert!(back.raw == raw && back.document == doc, "every piece decompresses, in order");

        let stream: Vec<u8> = [&(raw.len() as u64).to_le_bytes()[..], &raw, &doc].concat();
        for (from, to) in
            [(0, 0), (8, 9), (PIECE as u64 - 1, PIECE as u64), (1_100_000, 3_000_000), (3_800_007, 3_800_007)]
        {
            let (first, last, skip) = pieces.locate(from, to).unwrap();
            // Only the pieces that hold the span are read, whole.
            let ends: Vec<u64> = pieces.ends.iter().map(|e| u64::from(*e)).collect();
            assert!(first == 0 || ends.contains(&first), "{first}");
            assert!(ends.contains(&(last + 1)), "{last}");
            let read = ends.iter().filter(|e| **e > first && **e <= last + 1).count() as u64;
            assert_eq!(read, to / PIECE as u64 - from / PIECE as u64 + 1, "only its pieces, for {from}-{to}");
            let part = &packed.frame[first as usize..=last as usize];
            let span = unpack_span(part, skip, (to - from + 1) as usize, true).unwrap();
            assert_eq!(span, &stream[from as usize..=to as usize], "{from}-{to}");
        }
        assert_eq!(pieces.locate(0, packed.unpacked_len as u64 + PIECE as u64), None);
    }

    #[test]
    fn a_small_frame_is_one_frame_and_a_span_of_it_skips_to_its_start() {
        let packed = pack(b"{\"a\": 1}", b"{\"a\":1}").unwrap();
        assert_eq!(packed.pieces, None);
        assert_eq!(unpack_span(&packed.frame, 8 + 8, 7, false).unwrap(), b"{\"a\":1}");
        assert!(unpack_span(&packed.frame, 8 + 8, 8, false).is_err(), "past the end");
    }

    #[test]
    fn a_table_that_is_not_one_is_refused() {
        for bad in
            [&b""[..], &[1, 0, 0, 0], &[0, 0, 0, 0, 5, 0, 0, 0], &[1, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0], &[1, 0, 0]]
        {
            assert_eq!(Pieces::from_bytes(bad), None, "{bad:?}");
        }
    }
}
