//! Building responses: status, the headers each status carries, and the body.

use lambda_http::http::{header, HeaderValue, Response, StatusCode};
use lambda_http::Body;

use super::Endpoint;
use crate::api::Problem;

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
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(super::encoding::SUPPORTED));
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

/// A JSON answer (or a raw body, as received), gzip-compressed when the client takes gzip (`Accept-Encoding`) and it is
/// worth it. 406 when it does not fit in Lambda's answer: uncompressed for a client that
/// does not take gzip (it is told to), or either way.
pub fn encoded(
    status: u16,
    json: Vec<u8>,
    request: &lambda_http::http::HeaderMap,
    request_id: &str,
) -> Result<Response<Body>, Problem> {
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
    Ok(response)
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
    let (mut named, mut any) = (None::<bool>, false);
    let codings = request.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok());
    for coding in codings.flat_map(|v| v.split(',')) {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let weight = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match name.as_str() {
            "gzip" | "x-gzip" => named = Some(named.unwrap_or(false) || weight > 0.0),
            "*" => any = weight > 0.0,
            _ => {}
        }
    }
    named.unwrap_or(any)
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
             carry (Lambda's {LAMBDA_RESPONSE_LIMIT} bytes, base64-encoded)"
        ),
    };
    Problem::new(406, "too-large-to-answer", "Answer too large", detail)
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
}
