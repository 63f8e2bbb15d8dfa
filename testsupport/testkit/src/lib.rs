//! call-ingest-testkit: what the store's, the HTTP layer's and callctl's tests share. A
//! local DynamoDB (moto, from the project's `.venv`) shared by a whole test binary, clients
//! pointed at it, uniquely named tables, the fault layer's controls, and small fixtures.
//!
//! Set `AWS_ENDPOINT_URL_DYNAMODB` to use a server you started yourself instead. The server
//! started here stops when the test binary exits (it watches its stdin pipe).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::Client;
use call_ingest_store::calls::tables;
use call_ingest_store::calls::Frames;
use call_ingest_store::config::{dynamodb_client_with, s3_client_with, Config};
use call_ingest_store::Backend;

/// The key test backends sign list cursors with.
pub const TEST_CURSOR_SECRET: &str = "test-cursor-secret-of-at-least-32-characters";

struct Server {
    endpoint: String,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
}

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The endpoint of the local DynamoDB, starting it on first use.
pub fn endpoint() -> String {
    if let Ok(e) = std::env::var("AWS_ENDPOINT_URL_DYNAMODB") {
        return e;
    }
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(start).endpoint.clone()
}

fn start() -> Server {
    let python =
        std::env::var("CALL_INGEST_PYTHON").map(PathBuf::from).unwrap_or_else(|_| root().join(".venv/bin/python"));
    let mut child = Command::new(&python)
        .args(["-m", "devstack.dynamodb", "--port", "0", "--watch-stdin"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {} (run `make venv` first): {e}", python.display()));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("local DynamoDB said nothing");
    let port = line.trim().strip_prefix("READY ").unwrap_or_else(|| panic!("local DynamoDB did not start: {line:?}"));
    let stdin = child.stdin.take().expect("piped stdin");
    Server { endpoint: format!("http://127.0.0.1:{port}"), _child: Mutex::new(child), _stdin: Mutex::new(stdin) }
}

/// A client of the local DynamoDB, with the production timeouts and retries.
pub async fn client() -> Client {
    client_at(&endpoint()).await
}

/// A client of whatever listens at `endpoint`.
pub async fn client_at(endpoint: &str) -> Client {
    dynamodb_client_with(Some(endpoint), "us-east-1", credentials())
}

/// An S3 client of the local server (the same moto, on the same port).
pub fn s3_client() -> aws_sdk_s3::Client {
    s3_client_with(Some(&endpoint()), "us-east-1", credentials())
}

fn credentials() -> Credentials {
    Credentials::new("test", "test", None, None, "tests")
}

/// A fresh pair of tables and a bucket of frames, named uniquely for this test.
pub struct Tables {
    pub client: Client,
    pub calls: String,
    pub directory: String,
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
}

impl Tables {
    pub async fn new() -> Tables {
        static N: AtomicU64 = AtomicU64::new(0);
        let tag = format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
        let client = client().await;
        let calls = format!("calls-test-{tag}");
        let directory = format!("directory-test-{tag}");
        tables::CALLS.create(&client, &calls).await.expect("create calls table");
        tables::DIRECTORY.create(&client, &directory).await.expect("create directory table");
        let s3 = s3_client();
        let bucket = format!("frames-test-{tag}");
        s3.create_bucket().bucket(&bucket).send().await.expect("create the frames bucket");
        Tables { client, calls, directory, s3, bucket }
    }

    /// The frames' bucket of these tables.
    pub fn frames(&self) -> Frames {
        Frames::new(self.s3.clone(), self.bucket.clone())
    }

    /// The keys of every object in the frames' bucket that holds something: an erased
    /// frame's empty marker (`Frames::erase`) holds nothing, and is left out.
    pub async fn objects(&self) -> Vec<String> {
        let out = self.s3.list_objects_v2().bucket(&self.bucket).send().await.expect("list the frames");
        let held = out.contents.unwrap_or_default().into_iter().filter(|o| o.size.unwrap_or_default() > 0);
        held.filter_map(|o| o.key).collect()
    }

    /// Configuration pointing at these tables (and signing cursors with
    /// [`TEST_CURSOR_SECRET`]); `extra` overrides other variables.
    pub fn config(&self, extra: &[(&str, &str)]) -> Config {
        let calls = self.calls.clone();
        let directory = self.directory.clone();
        let bucket = self.bucket.clone();
        let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(move |name| match name {
            "CALLS_TABLE" => Some(calls.clone()),
            "DIRECTORY_TABLE" => Some(directory.clone()),
            "FRAMES_BUCKET" => Some(bucket.clone()),
            _ => extra.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).or_else(|| match name {
                "CURSOR_SECRET" => Some(TEST_CURSOR_SECRET.to_owned()),
                _ => None,
            }),
        })
        .expect("test configuration")
    }

    /// A backend (store, directory) over these tables.
    pub fn backend(&self, extra: &[(&str, &str)]) -> Backend {
        Backend::new(self.config(extra), self.client.clone(), self.s3.clone())
    }

    /// Every item of a table.
    pub async fn scan(&self, table: &str) -> Vec<call_ingest_store::calls::item::Item> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self.client.scan().table_name(table).set_exclusive_start_key(start).send().await.expect("scan");
            items.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }

    /// Adds a fault rule of the local DynamoDB's fault layer (`devstack/faults.py`)
    /// for requests that name the calls table, or for an S3 rule (`"service": "s3"`) the
    /// frames' bucket (unless `rule` names another): tests that run at once never see each
    /// other's faults. Answers the rule's id.
    pub fn fault(&self, mut rule: serde_json::Value) -> u64 {
        if rule.get("table").is_none() {
            let s3 = rule.get("service").and_then(|s| s.as_str()) == Some("s3");
            rule["table"] = serde_json::Value::from(if s3 { self.bucket.clone() } else { self.calls.clone() });
        }
        let answer = faults("POST", "/_faults/rules", &rule);
        answer["id"].as_u64().unwrap_or_else(|| panic!("fault layer refused {rule}: {answer}"))
    }

    /// How often fault rule `id` fired.
    pub fn fired(&self, id: u64) -> u64 {
        let rules = faults("GET", "/_faults/rules", &serde_json::json!({}));
        rules["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == id)
            .map_or(0, |r| r["fired"].as_u64().unwrap_or(0))
    }

    /// Removes the fault rules of `table`.
    pub fn clear_faults(&self, table: &str) {
        faults("DELETE", "/_faults/rules", &serde_json::json!({ "table": table }));
    }

    /// Removes the tables (the bucket stays until the local server stops).
    pub async fn delete(self) {
        for t in [&self.calls, &self.directory] {
            let _ = self.client.delete_table().table_name(t).send().await;
        }
    }
}

/// One request to the fault layer's control endpoints (plain HTTP/1.1 on the DynamoDB port).
pub fn faults(method: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    use std::io::{Read, Write};
    let endpoint = endpoint();
    let address = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).expect("connect to the local DynamoDB");
    let body = body.to_string();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send to the fault layer");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the fault layer's answer");
    let (_, json) = answer.split_once("\r\n\r\n").unwrap_or_default();
    serde_json::from_str(json).unwrap_or_else(|_| panic!("fault layer answered {answer:?}"))
}

/// A short valid operation B call with `call_id`; `summary` makes its content differ.
pub fn small_call(call_id: &str, summary: &str) -> (call_ingest_core::call::CallDocument, Vec<u8>) {
    let mut body: serde_json::Value = serde_json::from_slice(&callgen::create_call_minutes(0.3, 11)).unwrap();
    body["call_id"] = serde_json::Value::from(call_id);
    body["call_analysis"]["call_summary"] = serde_json::Value::from(summary);
    let raw = serde_json::to_vec(&body).unwrap();
    (call_ingest_core::call::ingest(call_ingest_core::call::Operation::CreateCall, &raw).expect("valid call"), raw)
}

/// Two workspaces ("one" and "two"), each with an agent `desk` and an API key with
/// `scopes` (as `Authorization` values), and a backend over fresh tables.
pub struct TwoWorkspaces {
    pub t: Tables,
    pub backend: Backend,
    pub key1: String,
    pub key2: String,
}

/// [`TwoWorkspaces`], workspace 1 with the agents `more_agents` too; `config` as for
/// [`Tables::backend`].
pub async fn two_workspaces(
    scopes: call_ingest_store::directory::scopes::Scopes,
    more_agents: &[&str],
    config: &[(&str, &str)],
) -> TwoWorkspaces {
    let t = Tables::new().await;
    let backend = t.backend(config);
    let d = backend.directory();
    for name in ["one", "two"] {
        d.create_workspace(name).await.unwrap();
    }
    for (workspace, agent) in [(1, "desk"), (2, "desk")].into_iter().chain(more_agents.iter().map(|a| (1, *a))) {
        d.create_agent(workspace, agent, None, None).await.unwrap();
    }
    let key1 = format!("Bearer {}", d.create_api_key(1, "k1", scopes).await.unwrap().token);
    let key2 = format!("Bearer {}", d.create_api_key(2, "k2", scopes).await.unwrap().token);
    TwoWorkspaces { t, backend, key1, key2 }
}
