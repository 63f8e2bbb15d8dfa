//! Test support: a local DynamoDB (moto, from the project's `.venv`) shared by a whole test
//! binary, clients pointed at it, and uniquely named tables.
//!
//! Set `AWS_ENDPOINT_URL_DYNAMODB` to use a server you started yourself instead. The server
//! started here stops when the test binary exits (it watches its stdin pipe).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::Client;
use call_ingest::config::{dynamodb_client_with, Config};
use call_ingest::http::App;
use call_ingest::store::tables;

struct Server {
    endpoint: String,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
}

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
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
        .arg(root().join("scripts/local_dynamodb.py"))
        .args(["--port", "0", "--watch-stdin"])
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
    dynamodb_client_with(Some(endpoint), "us-east-1", Credentials::new("test", "test", None, None, "tests"))
}

/// A fresh pair of tables, named uniquely for this test.
pub struct Tables {
    pub client: Client,
    pub calls: String,
    pub directory: String,
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
        Tables { client, calls, directory }
    }

    /// Configuration pointing at these tables; `extra` overrides other variables.
    pub fn config(&self, extra: &[(&str, &str)]) -> Config {
        let calls = self.calls.clone();
        let directory = self.directory.clone();
        let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(move |name| match name {
            "CALLS_TABLE" => Some(calls.clone()),
            "DIRECTORY_TABLE" => Some(directory.clone()),
            _ => extra.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
        })
        .expect("test configuration")
    }

    /// An app (store, directory) over these tables.
    pub fn app(&self, extra: &[(&str, &str)]) -> App {
        App::new(self.config(extra), self.client.clone())
    }

    /// Every item of a table.
    pub async fn scan(&self, table: &str) -> Vec<call_ingest::store::item::Item> {
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

    /// Removes the tables.
    pub async fn delete(self) {
        for t in [&self.calls, &self.directory] {
            let _ = self.client.delete_table().table_name(t).send().await;
        }
    }
}
