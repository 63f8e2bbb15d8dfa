//! Building responses: status, the headers each status carries, and the body.

use lambda_http::http::{header, HeaderValue, Response, StatusCode};
use lambda_http::Body;

use crate::api::Problem;
use crate::call::Operation;

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
pub fn problem(p: &Problem, operation: Operation, request_id: &str) -> Response<Body> {
    let mut response = json(p.status, p.to_json(operation, request_id), "application/problem+json", request_id);
    let headers = response.headers_mut();
    match p.status {
        401 => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        405 => {
            headers.insert(header::ALLOW, HeaderValue::from_static("POST"));
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
