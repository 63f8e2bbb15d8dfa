//! An endpoint's URL, checked when the endpoint is made: `https` only, no credentials in
//! it, and a host that is a public name or a public address ([`super::address`]). A name
//! is resolved at each delivery, and every address it resolves to checked again there (a
//! name may point anywhere later).
//!
//! The local stack's receivers listen on loopback: with `allow_loopback` (the local stack's
//! `EVENTS_ALLOW_LOOPBACK`, never set in AWS) `http` and `https` to a loopback address are
//! allowed, and nothing else more.

use std::net::IpAddr;

use url::{Host, Url};

use super::address::{self, Refused};

/// The longest URL an endpoint may have.
pub const MAX_URL_BYTES: usize = 2048;

/// Where an endpoint is, as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as normalised (WHATWG: lower-case host, punycode, numeric hosts as addresses).
    pub url: String,
    pub host: TargetHost,
    pub port: u16,
    pub tls: bool,
    /// What a request names: the path, and `?` and the query when there is one.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetHost {
    /// Resolved at each delivery, then each address checked.
    Name(String),
    Address(IpAddr),
}

/// Why a URL cannot be an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    #[error("the URL is longer than {MAX_URL_BYTES} bytes")]
    TooLong,
    #[error("not a URL: {0}")]
    NotUrl(String),
    #[error("an endpoint's URL is https (not {0})")]
    Scheme(String),
    #[error("an endpoint's URL carries no user name or password")]
    Credentials,
    #[error("an endpoint's URL has a host")]
    NoHost,
    #[error("{host} is {}: endpoints must be public", why.as_str())]
    Address { host: String, why: Refused },
    #[error("{0} is not a public name (localhost, or a name without a dot)")]
    LocalName(String),
}

/// `raw` checked as an endpoint's URL.
pub fn check(raw: &str, allow_loopback: bool) -> Result<Target, Unfit> {
    if raw.len() > MAX_URL_BYTES {
        return Err(Unfit::TooLong);
    }
    let url = Url::parse(raw.trim()).map_err(|e| Unfit::NotUrl(e.to_string()))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(Unfit::Scheme(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Unfit::Credentials);
    }
    let host = match url.host() {
        None => return Err(Unfit::NoHost),
        Some(Host::Ipv4(ip)) => TargetHost::Address(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => TargetHost::Address(IpAddr::V6(ip)),
        Some(Host::Domain(name)) => TargetHost::Name(name.trim_end_matches('.').to_owned()),
    };
    let loopback = matches!(host, TargetHost::Address(ip) if address::refused(ip) == Some(Refused::Loopback));
    let tls = match url.scheme() {
        "https" => true,
        "http" if allow_loopback && loopback => false,
        other => return Err(Unfit::Scheme(other.to_owned())),
    };
    match &host {
        TargetHost::Address(_) if allow_loopback && loopback => {}
        TargetHost::Address(ip) => {
            if let Some(why) = address::refused(*ip) {
                return Err(Unfit::Address { host: ip.to_string(), why });
            }
        }
        TargetHost::Name(name) => {
            let local = name == "localhost" || name.ends_with(".localhost") || !name.contains('.');
            if local {
                return Err(Unfit::LocalName(name.clone()));
            }
        }
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    // Bounded as it is kept and sent, not only as given: percent-encoding can triple it.
    if url.as_str().len() > MAX_URL_BYTES {
        return Err(Unfit::TooLong);
    }
    Ok(Target { url: url.to_string(), host, port, tls, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_bounded_as_it_is_kept_not_only_as_given() {
        let given = format!("https://hooks.example.com/{}", "é".repeat(1000));
        assert!(given.len() <= MAX_URL_BYTES);
        assert_eq!(check(&given, false), Err(Unfit::TooLong), "6 KB once percent-encoded");
        assert!(check(&format!("https://hooks.example.com/{}", "é".repeat(300)), false).is_ok());
    }

    #[test]
    fn public_https_urls_are_endpoints() {
        let t = check("https://Hooks.Example.com/in?team=7", false).unwrap();
        assert_eq!(t.url, "https://hooks.example.com/in?team=7");
        assert_eq!(t.path, "/in?team=7");
        assert_eq!((t.host, t.port, t.tls), (TargetHost::Name("hooks.example.com".into()), 443, true));
        let t = check("https://8.8.8.8:8443/x", false).unwrap();
        assert_eq!((t.host, t.port), (TargetHost::Address("8.8.8.8".parse().unwrap()), 8443));
        assert!(check("https://bücher.example/", false).unwrap().url.starts_with("https://xn--bcher-kva.example/"));
    }

    #[test]
    fn other_schemes_credentials_and_local_hosts_are_refused() {
        assert_eq!(check("http://hooks.example.com/", false), Err(Unfit::Scheme("http".into())));
        assert_eq!(check("ftp://hooks.example.com/", false), Err(Unfit::Scheme("ftp".into())));
        assert_eq!(check("file:///etc/passwd", false), Err(Unfit::Scheme("file".into())));
        assert_eq!(check("https://user:pw@hooks.example.com/", false), Err(Unfit::Credentials));
        assert!(matches!(check("not a url", false), Err(Unfit::NotUrl(_))));
        assert_eq!(check(&format!("https://a.example/{}", "x".repeat(2048)), false), Err(Unfit::TooLong));
        for name in ["localhost", "api.localhost", "metadata", "intranet."] {
            assert!(matches!(check(&format!("https://{name}/"), false), Err(Unfit::LocalName(_))), "{name}");
        }
    }

    #[test]
    fn literal_addresses_are_checked_in_every_spelling() {
        for (url, why) in [
            ("https://10.0.0.1/", Refused::Private),
            ("https://169.254.169.254/latest/meta-data/", Refused::Metadata),
            ("https://[::ffff:127.0.0.1]/", Refused::Loopback),
            ("https://[::1]:8443/", Refused::Loopback),
            ("https://[fd00:ec2::254]/", Refused::Metadata),
            // Numeric hosts that are addresses in another spelling (WHATWG parses them so).
            ("https://2130706433/", Refused::Loopback),
            ("https://0x7f.1/", Refused::Loopback),
            ("https://0177.0.0.1/", Refused::Loopback),
            ("https://10.1/", Refused::Private),
        ] {
            assert!(
                matches!(check(url, false), Err(Unfit::Address { why: w, .. }) if w == why),
                "{url}: {:?}",
                check(url, false)
            );
        }
    }

    #[test]
    fn the_local_stack_may_reach_loopback_over_http_and_nothing_more() {
        let t = check("http://127.0.0.1:9000/hook", true).unwrap();
        assert_eq!((t.port, t.tls), (9000, false));
        assert!(check("http://[::1]:9000/", true).is_ok());
        assert!(matches!(check("http://10.0.0.1/", true), Err(Unfit::Scheme(_))));
        assert!(matches!(check("https://10.0.0.1/", true), Err(Unfit::Address { .. })));
        assert!(matches!(check("http://localhost:9000/", true), Err(Unfit::Scheme(_))));
        assert!(matches!(check("http://127.0.0.1:9000/", false), Err(Unfit::Scheme(_))));
    }
}
