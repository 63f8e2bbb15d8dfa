//! The sender against receivers on loopback, and its refusals (issue 33's SSRF list). No
//! packet leaves 127.0.0.1: names are resolved from a table of the test's own (a name not
//! in it fails the test), and each refusal is checked to have sent nothing (the receiver
//! counts its connections).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use call_ingest_events::resolve::{Resolve, Resolved};
use call_ingest_events::send::{Message, Sender, ANSWER_BYTES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Names and their addresses; any other name fails the test.
struct Table(HashMap<&'static str, Vec<IpAddr>>);

impl Resolve for Table {
    fn resolve<'a>(&'a self, host: &'a str, _port: u16) -> Resolved<'a> {
        let found = self.0.get(host).cloned();
        Box::pin(async move { Ok(found.unwrap_or_else(|| panic!("{host} is not in the test's table"))) })
    }
}

fn table(entries: &[(&'static str, &[&str])]) -> Arc<Table> {
    Arc::new(Table(
        entries.iter().map(|(name, ips)| (*name, ips.iter().map(|ip| ip.parse().unwrap()).collect())).collect(),
    ))
}

/// A receiver on 127.0.0.1 that answers each request with `answer` (after `wait`), and
/// keeps what it was sent.
struct Receiver {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn receiver(answer: Vec<u8>, wait: Duration) -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (connections, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(std::sync::Mutex::new(Vec::new())));
    let (seen, kept) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            seen.fetch_add(1, Ordering::SeqCst);
            let (answer, kept) = (answer.clone(), kept.clone());
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as many bytes as it says.
                loop {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&got).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap())
                            })
                            .unwrap_or(0);
                        if got.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                kept.lock().unwrap().push(String::from_utf8_lossy(&got).to_string());
                tokio::time::sleep(wait).await;
                let _ = stream.write_all(&answer).await;
            });
        }
    });
    Receiver { port, connections, requests }
}

fn sender(resolver: Arc<Table>, allow_loopback: bool) -> Sender {
    Sender::new(resolver, allow_loopback, Duration::from_secs(5)).unwrap()
}

const MESSAGE: Message<'static> =
    Message { id: "msg_1", timestamp: 1_795_000_000, body: br#"{"type":"call.stored"}"#, signature: "v1,abc= v1,def=" };

#[tokio::test]
async fn an_event_is_posted_with_its_headers_and_the_answer_kept() {
    let r = receiver(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(), Duration::ZERO).await;
    let answer = sender(table(&[]), true).send(&format!("http://127.0.0.1:{}/in?team=7", r.port), &MESSAGE).await;
    assert_eq!(answer.status, Some(204), "{answer:?}");
    let sent = r.requests.lock().unwrap()[0].clone();
    assert!(sent.starts_with("POST /in?team=7 HTTP/1.1\r\n"), "{sent}");
    for header in [
        "webhook-id: msg_1",
        "webhook-timestamp: 1795000000",
        "webhook-signature: v1,abc= v1,def=",
        "content-type: application/json",
        &format!("host: 127.0.0.1:{}", r.port),
    ] {
        assert!(sent.to_ascii_lowercase().contains(&header.to_ascii_lowercase()), "{header} in {sent}");
    }
    assert!(sent.ends_with(r#"{"type":"call.stored"}"#), "{sent}");
}

#[tokio::test]
async fn a_name_is_resolved_once_and_reached_at_the_address_checked() {
    let r = receiver(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec(), Duration::ZERO).await;
    let names = table(&[("hooks.example.com", &["127.0.0.1"])]);
    let answer = sender(names, true).send(&format!("http://hooks.example.com:{}/x", r.port), &MESSAGE).await;
    // http to a name is refused even with loopback allowed: only https, or http to a
    // loopback address.
    assert!(answer.refused, "{answer:?}");
    assert_eq!(r.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_address_that_takes_no_connection_is_passed_over_for_the_next() {
    // The name's first address has no listener (127.0.0.2: the receiver listens on
    // 127.0.0.1 alone), the second is the receiver's: it is reached there (where TLS then
    // waits for an answer the plain receiver never gives, until the attempt's timeout).
    let r = receiver(b"HTTP/1.1 200 OK\r\n\r\n".to_vec(), Duration::ZERO).await;
    let names = table(&[("hooks.example.com", &["127.0.0.2", "127.0.0.1"])]);
    let impatient = Sender::new(names, true, Duration::from_secs(1)).unwrap();
    let answer = impatient.send(&format!("https://hooks.example.com:{}/x", r.port), &MESSAGE).await;
    assert_eq!(r.connections.load(Ordering::SeqCst), 1, "{answer:?}");
    // None taking it: each said.
    let names = table(&[("hooks.example.com", &["127.0.0.2", "127.0.0.3"])]);
    let answer = sender(names, true).send(&format!("https://hooks.example.com:{}/x", r.port), &MESSAGE).await;
    let error = answer.error.unwrap_or_default();
    assert!(error.contains("127.0.0.2:") && error.contains("127.0.0.3:"), "{error}");
}

#[tokio::test]
async fn the_ssrf_list_is_refused_and_nothing_is_sent() {
    let r = receiver(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec(), Duration::ZERO).await;
    let names = table(&[
        ("ten.example.com", &["10.0.0.1"]),
        ("meta.example.com", &["169.254.169.254"]),
        ("mapped.example.com", &["::ffff:127.0.0.1"]),
        ("mixed.example.com", &["93.184.215.14", "192.168.1.1"]),
        ("loop.example.com", &["127.0.0.1"]),
    ]);
    let strict = sender(names.clone(), false);
    for url in [
        "https://10.0.0.1/".to_owned(),
        "https://172.16.0.1/".to_owned(),
        "https://192.168.0.1/".to_owned(),
        "https://169.254.169.254/latest/meta-data/".to_owned(),
        "https://[::ffff:127.0.0.1]/".to_owned(),
        "https://[::1]/".to_owned(),
        format!("https://127.0.0.1:{}/", r.port),
        format!("http://127.0.0.1:{}/", r.port),
        "https://ten.example.com/".to_owned(),
        "https://meta.example.com/".to_owned(),
        "https://mapped.example.com/".to_owned(),
        "https://mixed.example.com/".to_owned(),
        format!("https://loop.example.com:{}/", r.port),
        "https://localhost/".to_owned(),
        "ftp://ten.example.com/".to_owned(),
        "https://user:pw@ten.example.com/".to_owned(),
    ] {
        let answer = strict.send(&url, &MESSAGE).await;
        assert!(answer.refused && answer.status.is_none(), "{url}: {answer:?}");
    }
    // Loopback allowed (the local stack): still nothing else.
    let local = sender(names, true);
    for url in ["https://ten.example.com/", "https://meta.example.com/", "https://10.0.0.1/"] {
        let answer = local.send(url, &MESSAGE).await;
        assert!(answer.refused, "{url}: {answer:?}");
    }
    assert_eq!(r.connections.load(Ordering::SeqCst), 0, "a refusal sent nothing");
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let r = receiver(
        b"HTTP/1.1 302 Found\r\nlocation: http://10.0.0.1/\r\ncontent-length: 0\r\n\r\n".to_vec(),
        Duration::ZERO,
    )
    .await;
    let answer = sender(table(&[]), true).send(&format!("http://127.0.0.1:{}/", r.port), &MESSAGE).await;
    assert_eq!(answer.status, Some(302));
    assert_eq!(r.connections.load(Ordering::SeqCst), 1, "one connection: to the endpoint");
}

#[tokio::test]
async fn at_most_4_kb_of_an_answer_is_read() {
    let body = vec![b'x'; 1 << 20];
    let mut answer = format!("HTTP/1.1 500 Oops\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes();
    answer.extend_from_slice(&body);
    let r = receiver(answer, Duration::ZERO).await;
    let got = sender(table(&[]), true).send(&format!("http://127.0.0.1:{}/", r.port), &MESSAGE).await;
    assert_eq!(got.status, Some(500));
    assert_eq!(got.first_bytes.len(), ANSWER_BYTES);
}

#[tokio::test]
async fn retry_after_is_kept_and_a_silent_receiver_times_out() {
    let r =
        receiver(b"HTTP/1.1 429 Slow\r\nretry-after: 30\r\ncontent-length: 0\r\n\r\n".to_vec(), Duration::ZERO).await;
    let got = sender(table(&[]), true).send(&format!("http://127.0.0.1:{}/", r.port), &MESSAGE).await;
    assert_eq!((got.status, got.retry_after.as_deref()), (Some(429), Some("30")));

    let r = receiver(b"HTTP/1.1 200 OK\r\n\r\n".to_vec(), Duration::from_secs(30)).await;
    let quick = Sender::new(table(&[]), true, Duration::from_millis(300)).unwrap();
    let got = quick.send(&format!("http://127.0.0.1:{}/", r.port), &MESSAGE).await;
    assert_eq!(got.status, None);
    assert!(!got.refused && got.error.as_deref().unwrap_or("").contains("no answer"), "{got:?}");
    assert!((300..2_000).contains(&got.millis), "{got:?}");
}

#[tokio::test]
async fn an_answer_with_a_huge_head_is_not_read_whole() {
    let mut answer = b"HTTP/1.1 200 OK\r\n".to_vec();
    for n in 0..1000 {
        answer.extend_from_slice(format!("x-filler-{n}: {}\r\n", "y".repeat(200)).as_bytes());
    }
    answer.extend_from_slice(b"content-length: 0\r\n\r\n");
    let r = receiver(answer, Duration::ZERO).await;
    let got = sender(table(&[]), true).send(&format!("http://127.0.0.1:{}/", r.port), &MESSAGE).await;
    assert_eq!(got.status, None, "{got:?}");
    assert!(!got.refused && got.error.is_some(), "{got:?}");
}
