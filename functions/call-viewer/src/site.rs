//! What `/app/…` answers: the page for every path of the app (it routes in the browser),
//! the embedded assets by content hash, and the security headers on all of them.

use std::io::Write as _;

use call_ingest_core::api::accept_encoding::takes_gzip;
use lambda_http::http::{header, HeaderValue, Method, StatusCode};
use lambda_http::{Body, Request, Response};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// Where the app lives; `/app` itself redirects to the calls list.
const HOME: &str = "/app/calls";

/// The site, with its Content-Security-Policy built once.
pub struct Site {
    csp: HeaderValue,
}

impl Site {
    /// `VIEWER_MEDIA_SOURCES`: origins recordings may also come from besides `https:` (the
    /// local stack's, in development), separated by spaces. A token that is not a plain
    /// source expression is dropped, so the variable cannot add a directive.
    pub fn from_env() -> Site {
        Site::new(&std::env::var("VIEWER_MEDIA_SOURCES").unwrap_or_default())
    }

    pub fn new(media_sources: &str) -> Site {
        let extra: Vec<&str> = media_sources.split_whitespace().filter(|s| is_source(s)).collect();
        let media = std::iter::once("'self' https:").chain(extra.iter().copied()).collect::<Vec<_>>().join(" ");
        let csp = format!(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             media-src {media}; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
             require-trusted-types-for 'script'; trusted-types 'none'"
        );
        Site { csp: HeaderValue::from_str(&csp).unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'")) }
    }

    /// The answer to one request.
    pub fn answer(&self, request: &Request) -> Response<Body> {
        let gzip = accepts_gzip(request);
        let mut response = match (request.method(), app_path(request)) {
            (m, _) if m != Method::GET && m != Method::HEAD => {
                let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
                r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
                r
            }
            (_, Some((stage, "/app" | "/app/"))) => {
                let mut r = text(StatusCode::PERMANENT_REDIRECT, "");
                if let Ok(home) = HeaderValue::from_str(&format!("{stage}{HOME}")) {
                    r.headers_mut().insert(header::LOCATION, home);
                }
                r
            }
            (_, Some((stage, path))) => match path.strip_prefix("/app/assets/") {
                Some(rest) => asset(rest, gzip),
                None => page(stage, gzip),
            },
            (_, None) => text(StatusCode::NOT_FOUND, "not found\n"),
        };
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_SECURITY_POLICY, self.csp.clone());
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
        headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
        if request.method() == Method::HEAD {
            *response.body_mut() = Body::Empty;
        }
        response
    }
}

/// A CSP source expression of the plain kind: `scheme://host`, optional port or `*`. No
/// quote, semicolon, comma or keyword can pass.
fn is_source(s: &str) -> bool {
    s.len() <= 200 && s.contains("://") && s.bytes().all(|b| b.is_ascii_alphanumeric() || b".:/*-_[]".contains(&b))
}

/// `(prefix, /app…)` of the path the client asked for (the event's `rawPath`, not the
/// path lambda_http rebuilds: that one names the stage even behind a custom domain, where
/// the browser's path does not). The prefix is the request's named stage when the path
/// starts with it (`/prod/app/calls`; a stage may even be called `app`), else whatever one
/// segment stands before `/app` (a custom domain's mapping), else nothing.
fn app_path(request: &Request) -> Option<(&str, &str)> {
    use lambda_http::request::RequestContext;
    use lambda_http::RequestExt;
    // Empty for a request that did not come from an event.
    let path = Some(request.raw_http_path()).filter(|p| !p.is_empty()).unwrap_or_else(|| request.uri().path());
    let stage = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(c)) => c.stage.as_deref(),
        Some(RequestContext::ApiGatewayV1(c)) => c.stage.as_deref(),
        _ => None,
    };
    let staged = stage.filter(|s| *s != "$default").and_then(|s| {
        let rest = path.strip_prefix('/')?.strip_prefix(s)?;
        is_app(rest).then(|| path.split_at(s.len() + 1))
    });
    staged.or_else(|| split_stage(path))
}

fn is_app(path: &str) -> bool {
    path == "/app" || path.starts_with("/app/")
}

/// `(prefix, /app…)` of `path`: `None` for a path outside the app or a prefix that is not
/// one segment of a stage's characters (`[A-Za-z0-9_-]{1,128}`).
fn split_stage(path: &str) -> Option<(&str, &str)> {
    let at = if is_app(path) { 0 } else { path.get(1..)?.find('/')? + 1 };
    let (stage, rest) = path.split_at(at);
    let stage_ok = stage.is_empty()
        || ((2..=129).contains(&stage.len())
            && stage.starts_with('/')
            && stage[1..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    (stage_ok && is_app(rest)).then_some((stage, rest))
}

/// The page, its links under `stage`: `no-store`, so a new deploy's asset names are seen
/// at once.
fn page(stage: &str, gzip: bool) -> Response<Body> {
    let staged;
    let body = match stage {
        "" => embedded::PAGE,
        _ => {
            staged = String::from_utf8_lossy(embedded::PAGE).replace("\"/app/", &format!("\"{stage}/app/"));
            staged.as_bytes()
        }
    };
    let mut r = bytes(StatusCode::OK, body, "text/html; charset=utf-8", gzip);
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `<version>/<name>`: the asset, immutable; another version's, or no such name, is 404
/// (the page that asked is older than this deploy and is never cached).
fn asset(rest: &str, gzip: bool) -> Response<Body> {
    let found = rest
        .split_once('/')
        .filter(|(version, _)| *version == embedded::VERSION)
        .and_then(|(_, name)| embedded::ASSETS.iter().find(|(n, _, _)| *n == name));
    match found {
        Some((_, content_type, body)) => {
            let mut r = bytes(StatusCode::OK, body, content_type, gzip);
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
            r
        }
        None => {
            let mut r = text(StatusCode::NOT_FOUND, "no such asset\n");
            r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
    }
}

fn accepts_gzip(request: &Request) -> bool {
    takes_gzip(request.headers().get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()))
}

fn bytes(status: StatusCode, body: &[u8], content_type: &'static str, gzip: bool) -> Response<Body> {
    let mut r = Response::new(Body::Empty);
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    let compressed = gzip.then(|| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(body).and_then(|()| encoder.finish()).ok()
    });
    *r.body_mut() = match compressed.flatten() {
        Some(z) => {
            r.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            Body::Binary(z)
        }
        None => Body::Binary(body.to_vec()),
    };
    r
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::Text(body.to_owned()));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(site: &Site, method: Method, path: &str, accept: Option<&str>) -> Response<Body> {
        let mut builder = lambda_http::http::Request::builder().method(method).uri(format!("https://h{path}"));
        if let Some(a) = accept {
            builder = builder.header(header::ACCEPT_ENCODING, a);
        }
        site.answer(&builder.body(Body::Empty).unwrap())
    }

    fn body(r: &Response<Body>) -> Vec<u8> {
        match r.body() {
            Body::Binary(b) => b.clone(),
            Body::Text(t) => t.clone().into_bytes(),
            Body::Empty => Vec::new(),
            _ => unreachable!(),
        }
    }

    fn header<'a>(r: &'a Response<Body>, name: &str) -> &'a str {
        r.headers().get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
    }

    #[test]
    fn every_app_path_is_the_page_never_stored() {
        let site = Site::new("");
        for path in ["/app/calls", "/app/calls/12", "/app/anything/at/all"] {
            let r = get(&site, Method::GET, path, None);
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(header(&r, "cache-control"), "no-store");
            assert!(header(&r, "content-type").starts_with("text/html"));
            let page = String::from_utf8(body(&r)).unwrap();
            assert!(page.contains(&format!("/app/assets/{}/js/main.js", embedded::VERSION)), "{page}");
            assert!(!page.contains("{{assets}}"));
        }
        let r = get(&site, Method::GET, "/app", None);
        assert_eq!((r.status().as_u16(), header(&r, "location")), (308, HOME));
        for outside in
            ["/", "/apps", "/api/v1/public/me", "/a/b/app/calls", "/pr%22od/app/calls", "/prod/apps", "//app"]
        {
            assert_eq!(get(&site, Method::GET, outside, None).status(), 404, "{outside}");
        }
    }

    #[test]
    fn under_a_stage_the_page_names_the_stage() {
        // lambda_http keeps a named stage in the path (`/prod/app/calls`).
        let site = Site::new("");
        let r = get(&site, Method::GET, "/prod/app/calls/3", None);
        assert_eq!(r.status(), 200);
        let page = String::from_utf8(body(&r)).unwrap();
        assert!(page.contains(&format!("\"/prod/app/assets/{}/js/main.js\"", embedded::VERSION)), "{page}");
        assert!(page.contains("href=\"/prod/app/calls\""), "{page}");
        assert!(!page.contains("\"/app/"), "{page}");
        let r = get(&site, Method::GET, &format!("/prod/app/assets/{}/app.css", embedded::VERSION), None);
        assert_eq!(r.status(), 200);
        let r = get(&site, Method::GET, "/prod/app", None);
        assert_eq!(header(&r, "location"), "/prod/app/calls");
    }

    /// The page of an API Gateway event in `events/call-viewer/`, and its asset URL prefix.
    fn page_of_event(file: &str) -> (Response<Body>, String) {
        let path = format!("{}/../../events/call-viewer/{file}", env!("CARGO_MANIFEST_DIR"));
        let request = lambda_http::request::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let r = Site::new("").answer(&request);
        let page = String::from_utf8(body(&r)).unwrap();
        let src = page.split("<script type=\"module\" src=\"").nth(1).unwrap().split("/app/assets/").next().unwrap();
        (r, src.to_owned())
    }

    #[test]
    fn the_page_names_its_assets_under_the_path_the_browser_used() {
        // A named stage on the execute-api host: the browser's path starts with it.
        let (r, prefix) = page_of_event("page-named-stage.json");
        assert_eq!((r.status().as_u16(), prefix.as_str()), (200, "/prod"));
        // A stage called `app` is still the stage.
        let (r, prefix) = page_of_event("page-stage-called-app.json");
        assert_eq!((r.status().as_u16(), prefix.as_str()), (200, "/app"));
        // A custom domain: no stage in the browser's path, whatever the event's stage.
        let (r, prefix) = page_of_event("page-custom-domain.json");
        assert_eq!((r.status().as_u16(), prefix.as_str()), (200, ""));
    }

    #[test]
    fn assets_are_immutable_under_their_hash_and_others_missing() {
        let site = Site::new("");
        let r = get(&site, Method::GET, &format!("/app/assets/{}/js/main.js", embedded::VERSION), None);
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "cache-control"), "public, max-age=31536000, immutable");
        assert!(header(&r, "content-type").starts_with("text/javascript"));
        for missing in
            ["/app/assets/0123456789abcdef/js/main.js", &format!("/app/assets/{}/nope.js", embedded::VERSION)]
        {
            assert_eq!(get(&site, Method::GET, missing, None).status(), 404, "{missing}");
        }
    }

    #[test]
    fn the_policy_is_strict_and_cannot_be_widened_by_the_environment() {
        let site = Site::new("http://127.0.0.1:* 'unsafe-inline'; script-src * http://localhost:9001");
        let r = get(&site, Method::GET, "/app/calls", None);
        let csp = header(&r, "content-security-policy");
        assert!(csp.starts_with("default-src 'self'; script-src 'self';"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"));
        assert!(csp.contains("media-src 'self' https: http://127.0.0.1:* http://localhost:9001;"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(csp.matches("script-src").count(), 1, "{csp}");
        assert_eq!(header(&r, "x-content-type-options"), "nosniff");
    }

    #[test]
    fn gzip_when_asked_and_only_then() {
        let site = Site::new("");
        let plain = body(&get(&site, Method::GET, "/app/calls", None));
        let r = get(&site, Method::GET, "/app/calls", Some("br, gzip"));
        assert_eq!(header(&r, "content-encoding"), "gzip");
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body(&r)[..]), &mut unzipped).unwrap();
        assert_eq!(unzipped, plain);
        assert_eq!(header(&get(&site, Method::GET, "/app/calls", Some("gzip;q=0")), "content-encoding"), "");
    }

    #[test]
    fn only_get_and_head() {
        let site = Site::new("");
        let r = get(&site, Method::POST, "/app/calls", None);
        assert_eq!((r.status().as_u16(), header(&r, "allow")), (405, "GET, HEAD"));
        let r = get(&site, Method::HEAD, "/app/calls", None);
        assert_eq!(r.status(), 200);
        assert!(body(&r).is_empty());
    }
}
