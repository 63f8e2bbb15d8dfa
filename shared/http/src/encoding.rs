//! Compressed request bodies: `Content-Encoding: gzip` or `zstd`, decompressed as a stream
//! into a buffer that never grows past a cap (`MAX_DECOMPRESSED_BYTES`), whatever sizes
//! the compressed data declares. What is stored as the call's exact body is the
//! decompressed body.

use std::borrow::Cow;
use std::io::Read;

use lambda_http::http::{header, HeaderMap};

use call_ingest_core::api::Problem;

use crate::problems;

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Zstd,
}

/// The encodings we take, as named in a 415's detail and its `Accept-Encoding`.
pub const SUPPORTED: &str = "gzip, zstd";

/// The largest zstd window accepted (32 MiB, the default cap): a frame cannot make the
/// decoder allocate more, and no body within the cap needs a larger one.
const ZSTD_WINDOW_LOG_MAX: u32 = 25;
/// How much of a compressed body a prefix reads at most: a real stream's first 4 KiB come
/// from far fewer bytes; one whose do not is read in full after the credential.
const PREFIX_INPUT: usize = 16 * 1024;
/// The largest zstd window a prefix accepts (2 MiB, zstd's default at level 3 and below).
const PREFIX_WINDOW_LOG_MAX: u32 = 21;

impl Encoding {
    /// The request's `Content-Encoding`: none or `identity`, `gzip` (`x-gzip`) or `zstd`,
    /// in any case. Anything else, or several codings, is 415.
    pub fn of(headers: &HeaderMap) -> Result<Encoding, Problem> {
        let mut values = headers.get_all(header::CONTENT_ENCODING).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return match headers.contains_key(header::CONTENT_ENCODING) {
                true => Err(unsupported("several encodings")),
                false => Ok(Encoding::Identity),
            };
        };
        let value = value.to_str().unwrap_or("?").trim();
        match value.to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(Encoding::Identity),
            "gzip" | "x-gzip" => Ok(Encoding::Gzip),
            "zstd" => Ok(Encoding::Zstd),
            _ => Err(unsupported(&format!("{:?}", value.chars().take(40).collect::<String>()))),
        }
    }

    /// The decompressed body: 413 past `cap` bytes, 400 when the data is corrupt or
    /// truncated.
    pub fn decode<'b>(self, body: &'b [u8], cap: usize) -> Result<Cow<'b, [u8]>, Problem> {
        let read = match self {
            Encoding::Identity => return Ok(Cow::Borrowed(body)),
            Encoding::Gzip => read_capped(flate2::read::MultiGzDecoder::new(body), body.len(), cap),
            Encoding::Zstd => zstd_decoder(body, ZSTD_WINDOW_LOG_MAX).and_then(|d| read_capped(d, body.len(), cap)),
        };
        match read {
            Ok(out) => Ok(Cow::Owned(out)),
            Err(Failed::TooLarge) => Err(problems::decompressed_too_large(cap)),
            Err(Failed::Corrupt) => Err(problems::bad_encoding(self.name())),
        }
    }

    /// The first `n` bytes of the decompressed body, or as many as precede an error or
    /// come from its first `PREFIX_INPUT` bytes: what this costs is bounded whatever the
    /// body holds (thousands of empty gzip members, a frame declaring a large window), as
    /// it runs before the caller is known.
    pub fn prefix<'b>(self, body: &'b [u8], n: usize) -> Cow<'b, [u8]> {
        let mut out = Vec::new();
        let input = &body[..body.len().min(PREFIX_INPUT)];
        let _ = match self {
            Encoding::Identity => return Cow::Borrowed(&body[..body.len().min(n)]),
            Encoding::Gzip => flate2::read::MultiGzDecoder::new(input).take(n as u64).read_to_end(&mut out),
            Encoding::Zstd => match zstd_decoder(input, PREFIX_WINDOW_LOG_MAX) {
                Ok(d) => d.take(n as u64).read_to_end(&mut out),
                Err(_) => Ok(0),
            },
        };
        Cow::Owned(out)
    }

    fn name(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }
}

enum Failed {
    TooLarge,
    Corrupt,
}

fn zstd_decoder(body: &[u8], window_log_max: u32) -> Result<impl Read + '_, Failed> {
    let mut decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(|_| Failed::Corrupt)?;
    decoder.window_log_max(window_log_max).map_err(|_| Failed::Corrupt)?;
    Ok(decoder)
}

/// Reads `reader` to its end, or fails once it yields more than `cap` bytes. The buffer
/// starts at a guess from the compressed size and never holds more than `cap` bytes of
/// capacity, whatever sizes the data declares.
fn read_capped(mut reader: impl Read, compressed_len: usize, cap: usize) -> Result<Vec<u8>, Failed> {
    let mut out = Vec::with_capacity(compressed_len.saturating_mul(8).min(cap));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let k = match reader.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Failed::Corrupt),
        };
        if out.len() + k > cap {
            return Err(Failed::TooLarge);
        }
        if out.capacity() - out.len() < k {
            let target = out.capacity().saturating_mul(2).max(out.len() + k).min(cap);
            out.reserve_exact(target - out.len());
        }
        out.extend_from_slice(&buf[..k]);
    }
}

fn unsupported(what: &str) -> Problem {
    problems::unsupported_encoding(what, SUPPORTED)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use lambda_http::http::HeaderValue;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::CONTENT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn encodings_are_read_from_the_header() {
        assert_eq!(Encoding::of(&headers(&[])).unwrap(), Encoding::Identity);
        assert_eq!(Encoding::of(&headers(&["identity"])).unwrap(), Encoding::Identity);
        assert_eq!(Encoding::of(&headers(&["GZip"])).unwrap(), Encoding::Gzip);
        assert_eq!(Encoding::of(&headers(&["x-gzip"])).unwrap(), Encoding::Gzip);
        assert_eq!(Encoding::of(&headers(&[" zstd "])).unwrap(), Encoding::Zstd);
        for bad in [&["br"][..], &["gzip, gzip"], &["gzip", "gzip"], &["deflate"]] {
            let p = Encoding::of(&headers(bad)).unwrap_err();
            assert_eq!(p.status, 415, "{bad:?}");
            assert!(p.detail.contains("gzip, zstd"), "{}", p.detail);
        }
    }

    #[test]
    fn gzip_and_zstd_bodies_decode_and_bombs_stop_at_the_cap() {
        let data = b"{\"call_id\":\"x\"}".repeat(1000);
        assert_eq!(Encoding::Gzip.decode(&gzip(&data), 1 << 20).unwrap(), &data[..]);
        let z = zstd::encode_all(&data[..], 3).unwrap();
        assert_eq!(Encoding::Zstd.decode(&z, 1 << 20).unwrap(), &data[..]);
        // Exactly the cap passes, one byte more is 413.
        assert_eq!(Encoding::Gzip.decode(&gzip(&data), data.len()).unwrap().len(), data.len());
        assert_eq!(Encoding::Gzip.decode(&gzip(&data), data.len() - 1).unwrap_err().status, 413);
        assert_eq!(Encoding::Zstd.decode(&z, data.len() - 1).unwrap_err().status, 413);
        // A bomb: 64 MiB of zeros in a few hundred KB at most.
        let bomb = gzip(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 1_000_000, "a bomb of {} bytes", bomb.len());
        assert_eq!(Encoding::Gzip.decode(&bomb, 32 << 20).unwrap_err().status, 413);
        // The prefix costs what it reads.
        assert_eq!(Encoding::Gzip.prefix(&bomb, 4096).len(), 4096);
    }

    #[test]
    fn a_prefix_reads_a_bounded_part_of_the_body_whatever_it_holds() {
        // Empty gzip members (each costs the decoder a reset) past the prefix's input,
        // then the data: the prefix never reaches it; the body decodes in full.
        let empty = gzip(b"");
        let mut body = empty.repeat(PREFIX_INPUT / empty.len() + 1);
        body.extend(gzip(b"{\"agentId\":\"a\"}"));
        assert!(Encoding::Gzip.prefix(&body, 4096).is_empty());
        assert_eq!(Encoding::Gzip.decode(&body, 1 << 20).unwrap(), &b"{\"agentId\":\"a\"}"[..]);
        // A zstd frame declaring a 32 MiB window: no prefix (no 32 MiB buffer for an
        // anonymous caller), decoded in full once the caller is known.
        let data = b"{\"agentId\":\"a\"}".repeat(100);
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.window_log(25).unwrap();
        e.write_all(&data).unwrap();
        let wide = e.finish().unwrap();
        assert!(Encoding::Zstd.prefix(&wide, 4096).is_empty());
        assert_eq!(Encoding::Zstd.decode(&wide, 1 << 20).unwrap(), &data[..]);
        // A usual stream gives its prefix.
        assert_eq!(&Encoding::Zstd.prefix(&zstd::encode_all(&data[..], 3).unwrap(), 10)[..], &data[..10]);
    }

    #[test]
    fn the_buffer_never_grows_past_the_cap() {
        // Compresses far more than 8×: the first guess is too small and the buffer grows.
        let data = vec![b' '; 3_000_000];
        let out = Encoding::Gzip.decode(&gzip(&data), 3_000_000).unwrap().into_owned();
        assert_eq!(out.len(), 3_000_000);
        assert!(out.capacity() <= 3_000_000, "capacity {}", out.capacity());
    }

    #[test]
    fn corrupt_and_truncated_data_is_400() {
        let good = gzip(b"{\"a\":1}");
        let truncated = &good[..good.len() - 5];
        let mut flipped = good.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0xff;
        for body in [&b""[..], b"{\"a\":1}", truncated, &flipped] {
            let p = Encoding::Gzip.decode(body, 1 << 20).unwrap_err();
            assert_eq!(p.status, 400, "{body:?}");
        }
        assert_eq!(Encoding::Zstd.decode(b"not zstd", 1 << 20).unwrap_err().status, 400);
    }
}
