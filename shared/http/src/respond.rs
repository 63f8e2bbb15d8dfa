//! Building responses: status, the headers each status carries, and the body.

use lambda_http::http::{header, HeaderValue, Response, StatusCode};
use lambda_http::Body;

use crate::{problems, Endpoint};
use call_ingest_core::api::accept_encoding::takes_gzip;
use call_ingest_core::api::Problem;

/// How long a client should wait before retrying after a 429 or a 503, in seconds.
pub const RETRY_AFTER_SECS: u32 = 1;

/// A JSON response.
pub fn json(status: u16, body: Vec<u8>, content_type: &'static str, request_id: &str) -> Response<Body> {
    let mut response = Response::new(Body::Binary(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Answers name calls and ids: no cache keeps them, no browser guesses their type.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", id);
    }
    response
}

/// A problem response, with the headers its status calls for.
pub fn problem(p: &Problem, endpoint: Endpoint, request_id: &str) -> Response<Body> {
    let mut response =
        json(p.status, p.to_json(endpoint.envelope(), request_id), "application/problem+json", request_id);
    let headers = response.headers_mut();
    match p.status {
        401 => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        405 => {
            headers.insert(header::ALLOW, HeaderValue::from_static(endpoint.allow()));
        }
        415 => {
            // The request encodings we take (RFC 7694).
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(crate::encoding::SUPPORTED));
        }
        429 | 503 => {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        _ => {}
    }
    response
}

/// Lambda's limit on a function's answer, in bytes, as it carries it: a JSON object whose
/// `body` is an escaped string (or base64, for a binary body).
pub const LAMBDA_RESPONSE_LIMIT: usize = 6 * 1024 * 1024;
/// What an answer carries besides its body (status, headers, the JSON around them).
const ENVELOPE_BYTES: usize = 4 * 1024;
/// Bodies smaller than this are sent as they are: gzip would save next to nothing.
const COMPRESS_FROM: usize = 1024;

/// A JSON answer (or a raw body, as received), gzip-compressed when the client takes gzip
/// (`Accept-Encoding`) and it is worth it. 406 when it does not fit in Lambda's answer:
/// uncompressed for a client that does not take gzip (it is told to), or either way (it is
/// told to ask for byte ranges). With `Range`, the part asked for (206), see [`ranged`].
pub fn encoded(
    status: u16,
    json: Vec<u8>,
    request: &lambda_http::http::HeaderMap,
    request_id: &str,
) -> Result<Response<Body>, Problem> {
    if status == 200 {
        match asked(request, json.len()) {
            Asked::Range(first, last) => {
                let part = json.get(first..=last).map(<[u8]>::to_vec).unwrap_or_default();
                return Ok(partial(part, first, last, json.len(), request, request_id));
            }
            Asked::Unsatisfiable => return Ok(unsatisfiable(json.len(), request_id)),
            Asked::Ignored => {}
        }
    }
    let text_fits = carried_as_text(&json) + ENVELOPE_BYTES <= LAMBDA_RESPONSE_LIMIT;
    let compressed = (accepts_gzip(request) && json.len() >= COMPRESS_FROM).then(|| gzip_bytes(&json));
    // Lambda carries a binary body as base64.
    let carried = |c: &Vec<u8>| c.len().div_ceil(3) * 4 + ENVELOPE_BYTES;
    let mut response = match compressed {
        Some(c) if carried(&c) <= LAMBDA_RESPONSE_LIMIT || !text_fits => {
            if carried(&c) > LAMBDA_RESPONSE_LIMIT {
                return Err(too_large(json.len(), Some(c.len())));
            }
            let mut response = self::json(status, c, "application/json", request_id);
            response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            response
        }
        _ => {
            if !text_fits {
                return Err(too_large(json.len(), None));
            }
            let mut response = self::json(status, Vec::new(), "application/json", request_id);
            // A body that is not UTF-8 (a raw body could be) goes as binary.
            *response.body_mut() = match String::from_utf8(json) {
                Ok(text) => Body::Text(text),
                Err(e) => Body::Binary(e.into_bytes()),
            };
            response
        }
    };
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    response.headers_mut().insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    Ok(response)
}

/// Whether `response` fits in Lambda's answer, as Lambda carries its body.
pub fn fits(response: &Response<Body>) -> bool {
    let carried = match response.body() {
        Body::Text(text) => carried_as_text(text.as_bytes()),
        Body::Binary(bytes) => bytes.len().div_ceil(3) * 4,
        _ => 0,
    };
    carried + ENVELOPE_BYTES <= LAMBDA_RESPONSE_LIMIT
}

/// Most bytes one ranged answer carries: sent as binary, Lambda carries them as base64
/// (4 MiB), well inside its 6 MB.
pub const MAX_RANGE_BYTES: usize = 3 * 1024 * 1024;

/// Most bytes of the answer one ranged answer carries gzip-compressed, for a client that
/// takes gzip: a call's JSON compresses 4 to 5 times, so 12 MiB fit; a part that does not
/// compress enough is cut to [`MAX_RANGE_BYTES`] (see [`partial`]).
pub const MAX_GZIP_RANGE_BYTES: usize = 12 * 1024 * 1024;

/// What a `Range` header asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Asked {
    /// Bytes `first` to `last`, both included, within the body (at most
    /// [`MAX_RANGE_BYTES`] of them, from [`asked`]).
    Range(usize, usize),
    /// A range that starts past the end (or a body of nothing): 416.
    Unsatisfiable,
    /// Not a single byte range we read (another unit, several ranges, bad syntax): the
    /// whole answer, as RFC 9110 14.2 lets a server do.
    Ignored,
}

/// What the request's `Range` asks of a 200 answer of `total` bytes: a part is at most
/// [`MAX_RANGE_BYTES`] long, or [`MAX_GZIP_RANGE_BYTES`] when it is sent gzip-compressed
/// (see [`gzip_parts`]; `Content-Range` says which were sent), so that an answer too large
/// for one Lambda response is read in parts.
pub fn asked(request: &lambda_http::http::HeaderMap, total: usize) -> Asked {
    // Our tags are weak and we send no Last-Modified, so an If-Range never matches strongly:
    // the whole answer (RFC 9110 13.1.5).
    if request.contains_key(header::IF_RANGE) {
        return Asked::Ignored;
    }
    let most = if gzip_parts(request) { MAX_GZIP_RANGE_BYTES } else { MAX_RANGE_BYTES };
    match request.get(header::RANGE).map(|r| byte_range(r.to_str().unwrap_or_default(), total)) {
        Some(Asked::Range(first, last)) => Asked::Range(first, last.min(first.saturating_add(most - 1))),
        Some(other) => other,
        None => Asked::Ignored,
    }
}

/// Marks a `Range` that [`range_from_query`] made from the query; never taken from a client.
const RANGE_FROM_QUERY: &str = "x-call-ingest-range-from-query";

/// The query's `bytes` (`a-b`, `a-` or `-n`) as the `Range` header `bytes=…`, when the
/// request has no `Range`: browsers send `Accept-Encoding: identity` with a `Range`
/// header, so a page reads the parts of a large answer gzip-compressed this way.
pub fn range_from_query(request: &mut lambda_http::Request) {
    use lambda_http::RequestExt;
    request.headers_mut().remove(RANGE_FROM_QUERY);
    if request.headers().contains_key(header::RANGE) {
        return;
    }
    let asked = request.query_string_parameters_ref().and_then(|q| q.first("bytes")).map(|b| format!("bytes={b}"));
    if let Some(value) = asked.and_then(|v| HeaderValue::from_str(&v).ok()) {
        request.headers_mut().insert(header::RANGE, value);
        request.headers_mut().insert(RANGE_FROM_QUERY, HeaderValue::from_static("1"));
    }
}

/// Whether a part is sent gzip-compressed: only for a range asked in the query, by a client
/// that takes gzip. A `Range` header keeps HTTP's meaning (a range of the representation
/// sent, so never compressed: RFC 9110 14.1.2); the query's parts are ranges of the
/// uncompressed answer, each compressed on its own.
fn gzip_parts(request: &lambda_http::http::HeaderMap) -> bool {
    request.contains_key(RANGE_FROM_QUERY) && accepts_gzip(request)
}

/// Reads `bytes=a-b`, `bytes=a-` or `bytes=-n` against a body of `len` bytes.
fn byte_range(header: &str, len: usize) -> Asked {
    let Some(spec) = header.trim().strip_prefix("bytes=") else { return Asked::Ignored };
    if spec.contains(',') {
        return Asked::Ignored;
    }
    let Some((from, to)) = spec.trim().split_once('-') else { return Asked::Ignored };
    let number = |s: &str| s.trim().parse::<usize>().ok();
    let (first, last) = match (from.trim().is_empty(), to.trim().is_empty()) {
        (false, false) => match (number(from), number(to)) {
            (Some(a), Some(b)) if a <= b => (a, b),
            _ => return Asked::Ignored,
        },
        (false, true) => match number(from) {
            Some(a) => (a, usize::MAX),
            None => return Asked::Ignored,
        },
        (true, false) => match number(to) {
            Some(0) => return Asked::Unsatisfiable,
            Some(n) => (len.saturating_sub(n), usize::MAX),
            None => return Asked::Ignored,
        },
        (true, true) => return Asked::Ignored,
    };
    if first >= len {
        return Asked::Unsatisfiable;
    }
    Asked::Range(first, last.min(len - 1))
}

/// 206 with `part`: bytes `first` to `last` of an uncompressed answer of `total` bytes (see
/// [`asked`]). `Content-Range` always counts the uncompressed answer's bytes. A part asked
/// in the query by a client that takes gzip is sent gzip-compressed (`Content-Encoding:
/// gzip`, undone by the client as for a whole answer), and cut to [`MAX_RANGE_BYTES`] if it
/// does not compress enough to fit. A part is bytes, not JSON (`application/octet-stream`): only the
/// parts joined in order are the JSON answer.
pub fn partial(
    mut part: Vec<u8>,
    first: usize,
    mut last: usize,
    total: usize,
    request: &lambda_http::http::HeaderMap,
    request_id: &str,
) -> Response<Body> {
    let compressed = if gzip_parts(request) && part.len() >= COMPRESS_FROM {
        let c = gzip_bytes(&part);
        if c.len().div_ceil(3) * 4 + ENVELOPE_BYTES <= LAMBDA_RESPONSE_LIMIT {
            Some(c)
        } else {
            // Barely compressible: the most an uncompressed part may be, compressed or not.
            part.truncate(MAX_RANGE_BYTES);
            last = first + part.len() - 1;
            Some(gzip_bytes(&part)).filter(|c| c.len() < part.len())
        }
    } else {
        None
    };
    let gzip = compressed.is_some();
    let mut response = json(206, compressed.unwrap_or(part), "application/octet-stream", request_id);
    let headers = response.headers_mut();
    if gzip {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Ok(range) = HeaderValue::from_str(&format!("bytes {first}-{last}/{total}")) {
        headers.insert(header::CONTENT_RANGE, range);
    }
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    response
}

/// 416: a range past the end; `Content-Range` gives the length.
pub fn unsatisfiable(total: usize, request_id: &str) -> Response<Body> {
    let problem = problems::range_not_satisfiable(total);
    let mut response = json(416, problem.to_json(false, request_id), "application/problem+json", request_id);
    if let Ok(range) = HeaderValue::from_str(&format!("bytes */{total}")) {
        response.headers_mut().insert(header::CONTENT_RANGE, range);
    }
    response
}

/// The bytes a body takes in Lambda's answer. Text is carried as a JSON string: `"` and
/// `\` gain a `\`, control characters become `\n` or `\u00XX`; anything else (not UTF-8)
/// goes as base64.
fn carried_as_text(body: &[u8]) -> usize {
    if std::str::from_utf8(body).is_err() {
        return body.len().div_ceil(3) * 4;
    }
    let escapes: usize = body
        .iter()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    body.len() + escapes
}

/// Whether `Accept-Encoding` takes gzip: `gzip` or `x-gzip` with a weight above 0, else
/// `*` with one when gzip is not named (RFC 9110 12.5.3).
pub fn accepts_gzip(request: &lambda_http::http::HeaderMap) -> bool {
    takes_gzip(request.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()))
}

fn gzip_bytes(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 6), flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

fn too_large(bytes: usize, compressed: Option<usize>) -> Problem {
    let detail = match compressed {
        None => format!(
            "the answer is {bytes} bytes of JSON, more than one response can carry uncompressed \
             (Lambda's {LAMBDA_RESPONSE_LIMIT} bytes); ask for it compressed: Accept-Encoding: gzip"
        ),
        Some(c) => format!(
            "the answer is {bytes} bytes of JSON and {c} gzip-compressed, more than one response can \
             carry (Lambda's {LAMBDA_RESPONSE_LIMIT} bytes, base64-encoded); ask for it in parts: \
             Range: bytes=0-{}, then on from where each answer's Content-Range ends",
            MAX_RANGE_BYTES - 1
        ),
    };
    problems::too_large_to_answer(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::HeaderMap;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn byte_ranges_are_read_as_rfc_9110_says() {
        assert_eq!(byte_range("bytes=0-9", 100), Asked::Range(0, 9));
        assert_eq!(byte_range("bytes=90-200", 100), Asked::Range(90, 99));
        assert_eq!(byte_range("bytes=10-", 100), Asked::Range(10, 99));
        assert_eq!(byte_range("bytes=-10", 100), Asked::Range(90, 99));
        assert_eq!(byte_range("bytes=-1000", 100), Asked::Range(0, 99));
        assert_eq!(byte_range("bytes=100-", 100), Asked::Unsatisfiable);
        assert_eq!(byte_range("bytes=-0", 100), Asked::Unsatisfiable);
        assert_eq!(byte_range("bytes=0-", 0), Asked::Unsatisfiable);
        for ignored in
            ["items=0-9", "bytes=0-9,20-29", "bytes=9-0", "bytes=a-b", "bytes=-", "bytes=18446744073709551616-"]
        {
            assert_eq!(byte_range(ignored, 100), Asked::Ignored, "{ignored}");
        }
        let mut h = HeaderMap::new();
        h.insert(header::RANGE, HeaderValue::from_static("bytes=2-"));
        let r = encoded(200, b"0123456789".to_vec(), &h, "r").unwrap();
        assert_eq!((r.status().as_u16(), r.body().as_ref()), (206, &b"23456789"[..]));
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes 2-9/10");
        h.insert(header::RANGE, HeaderValue::from_static("bytes=10-"));
        let r = encoded(200, b"0123456789".to_vec(), &h, "r").unwrap();
        assert_eq!(r.status().as_u16(), 416);
        assert_eq!(r.headers()[header::CONTENT_RANGE], "bytes */10");
        // A part is at most MAX_RANGE_BYTES, carried as base64 inside Lambda's limit.
        h.insert(header::RANGE, HeaderValue::from_static("bytes=0-"));
        let r = encoded(200, vec![b'"'; 8 * 1024 * 1024], &h, "r").unwrap();
        assert_eq!(r.body().len(), MAX_RANGE_BYTES);
        assert!(r.body().len().div_ceil(3) * 4 + ENVELOPE_BYTES <= LAMBDA_RESPONSE_LIMIT);
    }

    proptest::proptest! {
        #[test]
        fn any_range_header_reads_within_the_body(header in "\\PC{0,40}", len in 0usize..10_000) {
            let bytes = format!("bytes={header}");
            for text in [header.as_str(), bytes.as_str()] {
                if let Asked::Range(first, last) = byte_range(text, len) {
                    proptest::prop_assert!(first <= last && last < len, "{text}: {first}-{last} of {len}");
                }
            }
        }
    }

    #[test]
    fn gzip_is_taken_unless_weighted_zero() {
        for yes in ["gzip", "br, GZIP;q=0.5", "x-gzip", "*", "deflate, gzip; q=1.0"] {
            assert!(accepts_gzip(&accept(yes)), "{yes}");
        }
        for no in ["identity", "br", "gzip;q=0", "gzip; q=0.0, br", "gzip;q=0, *"] {
            assert!(!accepts_gzip(&accept(no)), "{no}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn large_answers_are_compressed_when_taken_and_refused_when_they_cannot_fit() {
        let json = serde_json::to_vec(&serde_json::json!({"text": "hello \"world\" ".repeat(200)})).unwrap();
        let r = encoded(200, json.clone(), &accept("gzip"), "r").unwrap();
        assert_eq!(r.headers()[header::CONTENT_ENCODING], "gzip");
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(r.body().as_ref()), &mut back).unwrap();
        assert_eq!(back, json);
        let r = encoded(200, json.clone(), &HeaderMap::new(), "r").unwrap();
        assert!(r.headers().get(header::CONTENT_ENCODING).is_none());
        assert!(matches!(r.body(), Body::Text(t) if t.as_bytes() == json));
        // 4 MiB of quotes: 8 MiB once escaped.
        let quotes = vec![b'"'; 4 * 1024 * 1024];
        assert_eq!(encoded(200, quotes.clone(), &HeaderMap::new(), "r").unwrap_err().status, 406);
        assert_eq!(encoded(200, quotes, &accept("gzip"), "r").unwrap().status(), 200);
        // What does not compress goes as text when only text fits.
        // 6 MB of printable ASCII (no `"` or `\\`) drawn at random: gzip keeps ~82 % of it,
        // whose base64 is over the limit; the text itself fits.
        let symbols: Vec<u8> = (b' '..=b'~').filter(|c| *c != b'"' && *c != b'\\').collect();
        let mut noise = Vec::with_capacity(6_000_000);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        while noise.len() < 6_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            noise.push(symbols[(x % symbols.len() as u64) as usize]);
        }
        let r = encoded(200, noise, &accept("gzip"), "r").unwrap();
        assert!(r.headers().get(header::CONTENT_ENCODING).is_none(), "base64 of its gzip would not fit");
    }

    #[test]
    fn a_part_asked_in_the_query_by_a_client_taking_gzip_is_compressed_larger_and_cut_when_it_does_not_compress() {
        let unzip = |r: &Response<Body>| {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(r.body().as_ref()), &mut out).unwrap();
            out
        };
        // What range_from_query makes of `?bytes=…`.
        let from_query = |h: &mut HeaderMap, range: &'static str| {
            h.insert(header::RANGE, HeaderValue::from_static(range));
            h.insert(RANGE_FROM_QUERY, HeaderValue::from_static("1"));
        };
        let mut h = accept("gzip");
        from_query(&mut h, "bytes=100-");
        // 20 MiB of JSON-like text: a 12 MiB part, compressed.
        let json: Vec<u8> = (0..20 * 1024 * 1024).map(|i| b"{\"turn\":\"hello there\"},"[i % 23]).collect();
        let r = encoded(200, json.clone(), &h, "r").unwrap();
        assert_eq!((r.status().as_u16(), r.headers()[header::CONTENT_ENCODING].to_str().unwrap()), (206, "gzip"));
        let last = 100 + MAX_GZIP_RANGE_BYTES - 1;
        assert_eq!(r.headers()[header::CONTENT_RANGE], format!("bytes 100-{last}/{}", json.len()).as_str());
        assert_eq!(unzip(&r), &json[100..=last]);
        assert!(fits(&r));
        // Without gzip: 3 MiB as they are.
        h.remove(header::ACCEPT_ENCODING);
        let r = encoded(200, json.clone(), &h, "r").unwrap();
        assert!(r.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(r.body().len(), MAX_RANGE_BYTES);
        // An If-Range never matches our weak tags: the whole answer.
        let mut h = accept("gzip");
        h.insert(header::RANGE, HeaderValue::from_static("bytes=100-"));
        h.insert(header::IF_RANGE, HeaderValue::from_static("W/\"1-1-ab\""));
        assert_eq!(asked(&h, json.len()), Asked::Ignored);
        // A Range header keeps HTTP's meaning, gzip taken or not: 3 MiB of identity bytes.
        let mut h = accept("gzip");
        h.insert(header::RANGE, HeaderValue::from_static("bytes=100-"));
        let r = encoded(200, json.clone(), &h, "r").unwrap();
        assert!(r.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(r.body().as_ref(), &json[100..100 + MAX_RANGE_BYTES]);
        // Noise barely compresses: cut to 3 MiB, and still fits.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..16 * 1024 * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        let mut h = accept("gzip");
        from_query(&mut h, "bytes=0-");
        let r = encoded(200, noise.clone(), &h, "r").unwrap();
        let range = format!("bytes 0-{}/{}", MAX_RANGE_BYTES - 1, noise.len());
        assert_eq!(r.headers()[header::CONTENT_RANGE], range.as_str());
        let body = match r.headers().get(header::CONTENT_ENCODING) {
            Some(_) => unzip(&r),
            None => r.body().to_vec(),
        };
        assert_eq!(body, &noise[..MAX_RANGE_BYTES]);
        assert!(fits(&r));
    }
}
