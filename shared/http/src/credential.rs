//! The credential a request carries, read from its headers.

use lambda_http::http::{header, HeaderMap};

use call_ingest_store::directory::credentials::API_KEY_PREFIX;
use call_ingest_store::directory::Denied;

/// The token a request carries: `Authorization: Bearer <token>` (scheme in any case,
/// spaces around ignored), else `X-API-Key: <key>` (API keys only).
pub fn token_from_headers(headers: &HeaderMap) -> Result<&str, Denied> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().map_err(|_| Denied::Unauthorized)?.trim();
        let (scheme, token) = value.split_once(char::is_whitespace).ok_or(Denied::Unauthorized)?;
        let token = token.trim();
        if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(char::is_whitespace) {
            return Err(Denied::Unauthorized);
        }
        return Ok(token);
    }
    if let Some(value) = headers.get("x-api-key") {
        let token = value.to_str().map_err(|_| Denied::Unauthorized)?.trim();
        if token.starts_with(API_KEY_PREFIX) {
            return Ok(token);
        }
    }
    Err(Denied::Unauthorized)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_spaces_are_ignored() {
        assert_eq!(token_from_headers(&headers(&[("authorization", "  bEaReR   cik_abc  ")])), Ok("cik_abc"));
        assert_eq!(token_from_headers(&headers(&[("x-api-key", " cik_abc ")])), Ok("cik_abc"));
    }

    #[test]
    fn malformed_or_missing_credentials_are_unauthorized() {
        for bad in ["Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "cik_abc", "Bearer a b"] {
            assert_eq!(token_from_headers(&headers(&[("authorization", bad)])), Err(Denied::Unauthorized), "{bad}");
        }
        assert_eq!(token_from_headers(&HeaderMap::new()), Err(Denied::Unauthorized));
        // X-API-Key carries API keys only.
        assert_eq!(token_from_headers(&headers(&[("x-api-key", "cis_abc")])), Err(Denied::Unauthorized));
    }
}
