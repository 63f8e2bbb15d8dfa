//! One event sent to one endpoint, as Standard Webhooks has it: a POST of the event's body
//! with `webhook-id`, `webhook-timestamp` and `webhook-signature`.
//!
//! No SSRF: the URL is checked again (`target::check`: https only, no credentials, no
//! local names, no refused literal address), its name resolved once and every address it
//! resolves to checked (`address::refused`); the connection is made to one of those very
//! addresses (the first that takes it, in the resolver's order), TLS verified against the
//! name. No redirect is followed (a 3xx is a
//! failure like any other), at most [`ANSWER_BYTES`] of an answer are read, and the whole
//! attempt (resolving, connecting, TLS, the answer) has one timeout.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use call_ingest_core::events::address::{self, Refused};
use call_ingest_core::events::target::{self, Target, TargetHost};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use crate::resolve::Resolve;

/// The most of an answer's body read, and kept for `callctl endpoint attempts`.
pub const ANSWER_BYTES: usize = 4096;

/// One event, signed.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// `webhook-id`: the same on every attempt.
    pub id: &'a str,
    /// `webhook-timestamp`: this attempt's, unix seconds.
    pub timestamp: u64,
    pub body: &'a [u8],
    /// `webhook-signature`: `v1,<base64>`, one per secret, space-separated.
    pub signature: &'a str,
}

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The answer's status; `None` when none came.
    pub status: Option<u16>,
    pub retry_after: Option<String>,
    /// The first bytes of its body, [`ANSWER_BYTES`] at most.
    pub first_bytes: Vec<u8>,
    /// From the start of the attempt to its end.
    pub millis: u64,
    /// Why no answer came, or why nothing was sent.
    pub error: Option<String>,
    /// Nothing was sent: the URL, or an address its name resolves to, is refused.
    pub refused: bool,
}

/// Sends events. One per instance: it holds the TLS roots.
pub struct Sender {
    resolver: Arc<dyn Resolve>,
    allow_loopback: bool,
    timeout: Duration,
    tls: TlsConnector,
}

enum Failure {
    Refused(String),
    Failed(String),
}

impl Sender {
    /// A sender resolving names with `resolver`, waiting `timeout` for each attempt, and
    /// reaching loopback addresses only with `allow_loopback` (the local stack's
    /// `EVENTS_ALLOW_LOOPBACK`). TLS trusts the system's roots.
    pub fn new(resolver: Arc<dyn Resolve>, allow_loopback: bool, timeout: Duration) -> Result<Sender, String> {
        let mut roots = RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(format!("no TLS root certificates found ({} errors)", found.errors.len()));
        }
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Sender { resolver, allow_loopback, timeout, tls: TlsConnector::from(Arc::new(config)) })
    }

    /// Sends `message` to `url`, once.
    pub async fn send(&self, url: &str, message: &Message<'_>) -> Answer {
        let started = Instant::now();
        let outcome = tokio::time::timeout(self.timeout, self.attempt(url, message)).await;
        let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let failed = |error: String, refused: bool| Answer {
            status: None,
            retry_after: None,
            first_bytes: Vec::new(),
            millis,
            error: Some(error),
            refused,
        };
        match outcome {
            Ok(Ok((status, retry_after, first_bytes))) => {
                Answer { status: Some(status), retry_after, first_bytes, millis, error: None, refused: false }
            }
            Ok(Err(Failure::Refused(why))) => failed(why, true),
            Ok(Err(Failure::Failed(why))) => failed(why, false),
            Err(_) => failed(format!("no answer within {} s", self.timeout.as_secs_f32()), false),
        }
    }

    async fn attempt(&self, url: &str, message: &Message<'_>) -> Result<(u16, Option<String>, Vec<u8>), Failure> {
        let target = target::check(url, self.allow_loopback).map_err(|e| Failure::Refused(e.to_string()))?;
        let addresses = self.addresses(&target).await?;
        let request = request(&target, message)?;
        let (ip, stream) = connect(&addresses, target.port).await?;
        if !target.tls {
            return exchange(TokioIo::new(stream), request).await;
        }
        let name = match &target.host {
            TargetHost::Name(name) => ServerName::try_from(name.clone()).map_err(|e| Failure::Failed(e.to_string()))?,
            TargetHost::Address(ip) => ServerName::IpAddress((*ip).into()),
        };
        let stream =
            self.tls.connect(name, stream).await.map_err(|e| Failure::Failed(format!("TLS with {ip} failed: {e}")))?;
        exchange(TokioIo::new(stream), request).await
    }

    /// The addresses to connect to, in order: the URL's own, or those its name resolves to,
    /// once every one of them is checked.
    async fn addresses(&self, target: &Target) -> Result<Vec<IpAddr>, Failure> {
        let name = match &target.host {
            TargetHost::Address(ip) => return Ok(vec![*ip]),
            TargetHost::Name(name) => name,
        };
        let found = self
            .resolver
            .resolve(name, target.port)
            .await
            .map_err(|e| Failure::Failed(format!("{name} could not be resolved: {e}")))?;
        for ip in &found {
            if let Some(why) = self.refused(*ip) {
                return Err(Failure::Refused(format!("{name} resolves to {ip}, {}", why.as_str())));
            }
        }
        match found.is_empty() {
            true => Err(Failure::Failed(format!("{name} resolves to no address"))),
            false => Ok(found),
        }
    }

    fn refused(&self, ip: IpAddr) -> Option<Refused> {
        match address::refused(ip) {
            Some(Refused::Loopback) if self.allow_loopback => None,
            other => other,
        }
    }
}

fn request(target: &Target, message: &Message<'_>) -> Result<hyper::Request<Full<Bytes>>, Failure> {
    let host = match (&target.host, target.port, target.tls) {
        (TargetHost::Name(name), 443, true) | (TargetHost::Name(name), 80, false) => name.clone(),
        (TargetHost::Name(name), port, _) => format!("{name}:{port}"),
        (TargetHost::Address(IpAddr::V6(ip)), port, _) => format!("[{ip}]:{port}"),
        (TargetHost::Address(ip), port, _) => format!("{ip}:{port}"),
    };
    hyper::Request::post(&target.path)
        .header("host", host)
        .header("content-type", "application/json")
        .header("user-agent", "call-ingest-webhooks/1")
        .header("webhook-id", message.id)
        .header("webhook-timestamp", message.timestamp.to_string())
        .header("webhook-signature", message.signature)
        .body(Full::new(Bytes::copy_from_slice(message.body)))
        .map_err(|e| Failure::Failed(e.to_string()))
}

/// How long one address may take to connect when another is left to try (the attempt's
/// own timeout bounds the last).
const CONNECT_EACH: Duration = Duration::from_secs(5);

/// A connection to the first of `addresses` (each checked already) that takes one: a
/// name's IPv6 address unreachable from here, or one host of several down, is passed over.
async fn connect(addresses: &[IpAddr], port: u16) -> Result<(IpAddr, TcpStream), Failure> {
    let mut failures = Vec::new();
    for (i, ip) in addresses.iter().enumerate() {
        let connecting = TcpStream::connect(SocketAddr::new(*ip, port));
        let connected = match i + 1 < addresses.len() {
            true => tokio::time::timeout(CONNECT_EACH, connecting)
                .await
                .unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no connection within 5 s"))),
            false => connecting.await,
        };
        match connected {
            Ok(stream) => return Ok((*ip, stream)),
            Err(e) => failures.push(format!("{ip}: {e}")),
        }
    }
    Err(Failure::Failed(format!("could not connect to {}", failures.join("; "))))
}

/// One request on a connection of its own; the answer's first [`ANSWER_BYTES`], then the
/// connection is dropped.
async fn exchange<T>(io: T, request: hyper::Request<Full<Bytes>>) -> Result<(u16, Option<String>, Vec<u8>), Failure>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let failed = |e: hyper::Error| Failure::Failed(e.to_string());
    // The answer's head in 8 KB and 32 headers at most (hyper's least buffer; its default
    // reads up to ~400 KB of a head): a reader's find.
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(8192)
        .max_headers(32)
        .handshake(io)
        .await
        .map_err(failed)?;
    let driven = tokio::spawn(connection);
    let outcome = async {
        let response = sender.send_request(request).await.map_err(failed)?;
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let first_bytes = first_bytes(response.into_body()).await;
        Ok((status, retry_after, first_bytes))
    }
    .await;
    driven.abort();
    outcome
}

/// Up to [`ANSWER_BYTES`] of a body; whatever came, when it fails part-way.
async fn first_bytes(mut body: Incoming) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < ANSWER_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let room = ANSWER_BYTES - out.len();
                    out.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    out
}
