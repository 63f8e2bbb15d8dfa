//! Compressed request bodies: `Content-Encoding: gzip` or `zstd`, decompressed as a stream
//! into a buffer that never grows past a cap (`MAX_DECOMPRESSED_BYTES`), whatever sizes
//! the compressed data declares. What is stored as the call's exact body is the
//! decompressed body.

use std::borrow::Cow;
use std::io::Read;

use lambda_http::http::{header, HeaderMap};

use crate::api::Problem;

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
            Encoding::Zstd => zstd_decoder(body).and_then(|d| read_capped(d, body.len(), cap)),
        };
        match read {
            Ok(out) => Ok(Cow::Owned(out)),
            Err(Failed::TooLarge) => Err(Problem::new(
                413,
                "payload-too-large",
                "Request body too large",
                format!("the decompressed body must be at most {cap} bytes"),
            )),
            Err(Failed::Corrupt) => Err(Problem::new(
                400,
                "bad-encoding",
                "Body cannot be decompressed",
                format!("the body is not valid {} data (corrupt or truncated)", self.name()),
            )),
        }
    }

    /// The first `n` bytes of the decompressed body, or as many as precede an error:
    /// reading them costs `n` bytes of output, whatever the body's size.
    pub fn prefix<'b>(self, body: &'b [u8], n: usize) -> Cow<'b, [u8]> {
        let mut out = Vec::new();
        let _ = match self {
            Encoding::Identity => return Cow::Borrowed(&body[..body.len().min(n)]),
            Encoding::Gzip => flate2::read::MultiGzDecoder::new(body).take(n as u64).read_to_end(&mut out),
            Encoding::Zstd => match zstd_decoder(body) {
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

fn zstd_decoder(body: &[u8]) -> Result<impl Read + '_, Failed> {
    let mut decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(|_| Failed::Corrupt)?;
    decoder.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(|_| Failed::Corrupt)?;
    Ok(decoder)
}

/// Reads `reader` to its end, or fails once it yields more than `cap` bytes. The buffer
/// starts at a guess from the compressed size (call JSON compresses 5–10×), never from a
/// size the data declares.
fn read_capped(reader: impl Read, compressed_len: usize, cap: usize) -> Result<Vec<u8>, Failed> {
    let mut out = Vec::with_capacity(compressed_len.saturating_mul(8).min(cap));
    reader.take(cap as u64 + 1).read_to_end(&mut out).map_err(|_| Failed::Corrupt)?;
    if out.len() > cap {
        return Err(Failed::TooLarge);
    }
    Ok(out)
}

fn unsupported(what: &str) -> Problem {
    Problem::new(
        415,
        "unsupported-encoding",
        "Unsupported content encoding",
        format!("Content-Encoding {what} is not supported: send the body as is, or with one of {SUPPORTED}"),
    )
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
