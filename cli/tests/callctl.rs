//! `callctl` end to end: the real binary against the local DynamoDB, its results checked
//! through call-ingest-store (the credentials it creates authenticate; the calls the
//! store holds read back exactly), and no secret left in the directory table.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use call_ingest_core::Operation;
use call_ingest_store::calls::Owner;
use call_ingest_store::directory::scopes::{Scope, Scopes};
use call_ingest_store::directory::{AgentRef, Denied, Principal, Sessions};
use serde_json::Value;

use testkit::Tables;

/// The frames' bucket every callctl here uses (`tables create` makes it).
const FRAMES: &str = "callctl-frames";

/// A Create Call body with white space, key order and an unknown field of its own, so
/// that only the exact bytes compare equal to it.
const BODY: &str = r#"{
  "call_id":   "cli-call-0001",
  "x_provider_extra": {"b": 1, "a": [true, null]},
  "call_type": "phone_call",
  "start_timestamp": 1763700000,
  "end_timestamp": 1763700094500,
  "recording_url": "pipecat://no-recording",
  "call_status": "call_ended",
  "user_sentiment": "Positive",
  "transcript_with_tool_calls": [
    {"role": "agent", "text": "Hi, this is Ava \u2013 how can I help? ✓", "start_ms": 420, "end_ms": 2800},
    {"role": "user",  "text": "I'd like to book a cleaning.", "start_ms": 3900, "end_ms": 6310}
  ]
}
"#;

/// Runs the binary against one pair of tables.
struct Callctl {
    calls: String,
    directory: String,
}

impl Callctl {
    fn new(calls: &str, directory: &str) -> Self {
        Callctl { calls: calls.to_owned(), directory: directory.to_owned() }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run callctl")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_callctl"));
        command
            .args(args)
            .env("CALLS_TABLE", &self.calls)
            .env("DIRECTORY_TABLE", &self.directory)
            .env("AWS_ENDPOINT_URL_DYNAMODB", testkit::endpoint())
            .env("AWS_ENDPOINT_URL_S3", testkit::endpoint())
            .env("FRAMES_BUCKET", FRAMES)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE");
        command
    }

    /// Runs a command that must succeed with `input` on its standard input; its JSON.
    fn json_with_stdin(&self, args: &[&str], input: &str) -> Value {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = self
            .command(&["--json"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run callctl");
        child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
        let out = child.wait_with_output().expect("callctl output");
        assert!(out.status.success(), "callctl {args:?} failed");
        serde_json::from_slice(&out.stdout).expect("one JSON document")
    }

    /// Runs a command that must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "callctl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("stdout is UTF-8")
    }

    /// Runs a command with `--json` that must succeed; its one JSON document.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let stdout = self.ok(&all);
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("callctl {args:?} printed no single JSON document ({e}): {stdout}"))
    }

    /// Runs a command that must fail with `code`; its stderr, checked to be one line.
    fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(code), "callctl {args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "callctl {args:?} printed {out:?}");
        let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
        if code == 1 {
            assert!(
                stderr.starts_with("callctl: ") && stderr.ends_with('\n') && stderr.lines().count() == 1,
                "not one line: {stderr:?}"
            );
        }
        stderr
    }
}

fn unique_names() -> (String, String) {
    static N: AtomicU64 = AtomicU64::new(0);
    let tag = format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
    (format!("callctl-calls-{tag}"), format!("callctl-directory-{tag}"))
}

fn u64_of(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or_else(|| panic!("no number {field} in {value}"))
}

fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_else(|| panic!("no string {field} in {value}"))
}

#[tokio::test]
async fn operator_workflow_end_to_end() {
    let (calls, directory) = unique_names();
    let cli = Callctl::new(&calls, &directory);

    // Tables: created once, then found.
    let first = cli.ok(&["tables", "create"]);
    for table in [&calls, &directory] {
        assert!(first.contains(&format!(" {table}: created")), "{first}");
    }
    // The bucket is shared by these tests: whichever ran first created it.
    assert!(first.contains(&format!("frames bucket {FRAMES}: ")), "{first}");
    let again = cli.json(&["tables", "create"]);
    assert_eq!(again["calls"]["status"], "exists");
    assert_eq!(again["directory"]["status"], "exists");
    assert_eq!(again["frames"]["status"], "exists");
    let moved = cli.json(&["tables", "move-frames"]);
    assert_eq!((moved["moved"].as_u64(), moved["bucket"].as_str()), (Some(0), Some(FRAMES)));
    assert_eq!(again["calls"]["table"], calls.as_str());
    let tables =
        Tables { client: testkit::client().await, calls, directory, s3: testkit::s3_client(), bucket: FRAMES.into() };

    // Workspace, agent, key.
    let workspace = cli.json(&["workspace", "create", "--name", "Acme"]);
    assert_eq!(workspace["name"], "Acme");
    let ws = u64_of(&workspace, "id");
    let ws_arg = ws.to_string();
    let ws_arg = ws_arg.as_str();
    assert_eq!(cli.json(&["workspace", "get", "--id", ws_arg])["name"], "Acme");
    assert_eq!(cli.json(&["workspace", "get", "--id", ws_arg])["rate_limit"], Value::Null);
    assert_eq!(cli.json(&["workspace", "limit", "--id", ws_arg, "--per-second", "7"])["rate_limit"], 7);
    assert!(cli.ok(&["workspace", "get", "--id", ws_arg]).contains("7 requests per second"));
    assert_eq!(cli.json(&["workspace", "limit", "--id", ws_arg, "--default"])["rate_limit"], Value::Null);
    assert!(cli.ok(&["workspace", "get", "--id", ws_arg]).contains("default (20 requests per second)"));
    for bad in [&["--per-second", "0"][..], &["--per-second", "1001"], &[], &["--per-second", "5", "--default"]] {
        cli.fails(&[&["workspace", "limit", "--id", ws_arg][..], bad].concat(), 2);
    }
    assert!(cli.fails(&["workspace", "limit", "--id", "999999", "--per-second", "5"], 1).contains("does not exist"));

    let agent =
        cli.json(&["agent", "create", "--workspace", ws_arg, "--remote-id", "front-desk", "--name", "Front desk"]);
    let agent_id = str_of(&agent, "id").to_owned();
    assert_eq!(u64_of(&agent, "workspace_id"), ws);
    assert_eq!(agent["remote_id"], "front-desk");
    let fixture =
        cli.json(&["agent", "create", "--workspace", ws_arg, "--remote-id", "night-desk", "--agent-id", "agt_fixture"]);
    assert_eq!(fixture["id"], "agt_fixture");
    let found = cli.json(&["agent", "get", "--workspace", ws_arg, "--remote-id", "front-desk"]);
    assert_eq!(found["id"], agent_id.as_str());
    let err = cli.fails(&["agent", "get", "--workspace", ws_arg, "--remote-id", "nobody"], 1);
    assert!(err.contains("no such agent"), "{err}");
    let listed = cli.json(&["agent", "list", "--workspace", ws_arg]);
    assert_eq!(listed["agents"].as_array().map(Vec::len), Some(2), "{listed}");
    assert!(cli.ok(&["agent", "list", "--workspace", ws_arg]).contains("front-desk"));

    let key = cli.json(&["key", "create", "--workspace", ws_arg, "--name", "ci"]);
    let token = str_of(&key, "token").to_owned();
    let public_id = str_of(&key, "public_id").to_owned();
    assert_eq!(u64_of(&key, "workspace_id"), ws);
    assert!(token.starts_with("cik_") && token.starts_with(&public_id), "{key}");
    let secret_part = &token[public_id.len()..];

    // The key works through the library: it authenticates to the workspace and
    // authorizes the agent.
    let backend = tables.backend(&[("DIRECTORY_CACHE_TTL_SECS", "0")]);
    let lookup = backend
        .directory()
        .lookup(&token, Some(AgentRef::Remote { workspace_id: ws, remote_id: "front-desk" }))
        .await
        .expect("lookup");
    assert_eq!(
        lookup.authenticate(Sessions::Accepted),
        Ok(Principal::ApiKey { workspace_id: ws, public_id: public_id.clone(), scopes: Scopes::DEFAULT })
    );
    assert_eq!(key["scopes"], serde_json::json!(["send"]), "a key made without --scope may send only");

    // Scopes are given at creation, repeatable, and shown by `key list`.
    let reader =
        cli.json(&["key", "create", "--workspace", ws_arg, "--name", "r", "--scope", "read", "--scope", "ERASE"]);
    assert_eq!(reader["scopes"], serde_json::json!(["read", "erase"]), "{reader}");
    let principal =
        backend.directory().lookup(str_of(&reader, "token"), None).await.unwrap().authenticate(Sessions::Accepted);
    assert_eq!(principal.map(|p| p.scopes()), Ok(Scopes::of([Scope::Read, Scope::Erase])));
    let listed = cli.json(&["key", "list", "--workspace", ws_arg]);
    let scopes: Vec<&Value> = listed["keys"].as_array().unwrap().iter().map(|k| &k["scopes"]).collect();
    assert!(scopes.contains(&&serde_json::json!(["read", "erase"])), "{listed}");
    let err = cli.fails(&["key", "create", "--workspace", ws_arg, "--scope", "admin"], 2);
    assert!(err.contains("unknown scope"), "{err}");
    assert_eq!(lookup.authorize(ws).map(|a| a.id), Ok(agent_id.clone()));

    // A call stored by the library reads back through callctl, raw bytes exact.
    let raw = BODY.as_bytes();
    let doc = call_ingest_core::call::ingest(Operation::CreateCall, raw).expect("the test body is valid");
    let owner = Owner { workspace_id: ws, agent_id: &agent_id };
    let stored = backend.store().put_call(owner, &doc, raw).await.expect("put_call");
    let id_arg = stored.id.to_string();

    let got = cli.json(&["call", "get", "--workspace", ws_arg, "--call-id", "cli-call-0001"]);
    assert_eq!(u64_of(&got, "id"), stored.id);
    assert_eq!(got["agent_id"], agent_id.as_str());
    assert_eq!(got["current"]["document"]["call"]["call_id"], "cli-call-0001");
    assert_eq!(got["current"]["document"]["call"]["user_sentiment"], "positive");
    assert!(got.get("raw").is_none() && got.get("revisions").is_none(), "{got}");

    let out = cli.run(&["call", "get", "--workspace", ws_arg, "--call-id", "cli-call-0001", "--raw"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, raw, "--raw is not the body byte for byte");
    let with_raw = cli.json(&["call", "get", "--id", &id_arg, "--raw"]);
    assert_eq!(with_raw["raw"], BODY);

    let by_id = cli.json(&["call", "get", "--id", &id_arg]);
    assert_eq!(by_id["call_id"], "cli-call-0001");
    assert_eq!(by_id["current"], got["current"]);
    let human = cli.ok(&["call", "get", "--id", &id_arg]);
    assert!(human.contains("cli-call-0001") && human.contains("\"transcript\""), "{human}");

    // A new version: the earlier one is a revision.
    let revised_body = BODY.replace("call_ended", "call_analyzed");
    let revised = call_ingest_core::call::ingest(Operation::CreateCall, revised_body.as_bytes()).expect("valid");
    backend.store().put_call(owner, &revised, revised_body.as_bytes()).await.expect("revise");
    let history = cli.json(&["call", "get", "--id", &id_arg, "--revisions", "--raw"]);
    assert_eq!(history["current"]["document"]["call"]["call_status"], "call_analyzed");
    assert_eq!(history["raw"], revised_body.as_str());
    assert_eq!(history["revisions"].as_array().map(Vec::len), Some(1), "{history}");
    assert_eq!(history["revisions"][0]["raw"], BODY);
    cli.fails(&["call", "get", "--id", &id_arg, "--revisions", "--raw"], 1);

    // Listing: the whole workspace (agents merged) and one agent, by id or remote id.
    let list = cli.json(&["call", "list", "--workspace", ws_arg]);
    assert_eq!(list["calls"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["calls"][0]["call_id"], "cli-call-0001");
    assert_eq!(u64_of(&list["calls"][0], "id"), stored.id);
    assert_eq!(list["calls"][0]["agent_id"], agent_id.as_str());
    assert_eq!(list["calls"][0]["start_ms"], 1_763_700_000_000u64);
    for agent in [agent_id.as_str(), "front-desk"] {
        let one = cli.json(&["call", "list", "--workspace", ws_arg, "--agent", agent]);
        assert_eq!(one["calls"], list["calls"]);
    }
    let none = cli.json(&["call", "list", "--workspace", ws_arg, "--agent", "agt_fixture"]);
    assert_eq!(none["calls"], Value::Array(vec![]));
    let table = cli.ok(&["call", "list", "--workspace", ws_arg, "--limit", "5"]);
    assert!(table.contains("cli-call-0001") && table.contains("2025-11-21T04:40:00Z"), "{table}");

    // Not found: exit 1, one line.
    let err = cli.fails(&["call", "get", "--workspace", ws_arg, "--call-id", "missing"], 1);
    assert!(err.contains("no such call"), "{err}");
    let err = cli.fails(&["--json", "call", "get", "--id", "999999999"], 1);
    assert!(err.contains("no such call"), "{err}");

    // Keys are listed without their secret; revoked, they stop working.
    for args in [&["key", "list", "--workspace", ws_arg][..], &["--json", "key", "list", "--workspace", ws_arg]] {
        let listing = cli.ok(args);
        assert!(listing.contains(&public_id) && listing.contains("ci"), "{listing}");
        assert!(!listing.contains(secret_part), "key list shows the secret: {listing}");
    }
    let revoked = cli.json(&["key", "revoke", &public_id]);
    assert_eq!(revoked["public_id"], public_id.as_str());
    let keys = cli.json(&["key", "list", "--workspace", ws_arg]);
    let ci_key = keys["keys"].as_array().unwrap().iter().find(|k| k["public_id"] == public_id.as_str()).unwrap();
    assert!(ci_key["revoked_at"].is_u64(), "{keys}");
    let lookup = backend.directory().lookup(&token, None).await.expect("lookup");
    assert_eq!(lookup.authenticate(Sessions::Accepted), Err(Denied::Unauthorized));
    // A key is not revoked through `session revoke`, nor a missing one at all.
    cli.fails(&["session", "revoke", &public_id], 1);
    let err = cli.fails(&["key", "revoke", "cik_00000000"], 1);
    assert!(err.contains("cik_00000000"), "{err}");

    // Sessions: the token printed once; it works for Create Call until revoked.
    let out = cli.ok(&["session", "create", "--user", "alice", "--workspace", ws_arg, "--ttl", "2h"]);
    let session = out
        .split_whitespace()
        .find(|w| w.starts_with("cis_") && w.len() > 12)
        .unwrap_or_else(|| panic!("no token in {out}"))
        .to_owned();
    assert_eq!(out.matches(&session).count(), 1, "{out}");
    assert!(out.contains("not be shown again"), "{out}");
    match backend.directory().lookup(&session, None).await.expect("lookup").authenticate(Sessions::Accepted) {
        Ok(Principal::Session { user, workspaces, .. }) => assert_eq!((user.as_str(), workspaces), ("alice", vec![ws])),
        other => panic!("session did not authenticate: {other:?}"),
    }
    let json_session = cli.json(&["session", "create", "--user", "bob", "--workspace", ws_arg, "--workspace", ws_arg]);
    let expires = u64_of(&json_session, "expires_at");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    assert!((now + 3590..=now + 3610).contains(&expires), "default ttl is not 1h: {json_session}");
    assert_eq!(json_session["workspaces"], serde_json::json!([ws]));
    // A whole token is never taken on the command line, nor echoed.
    let err = cli.fails(&["session", "revoke", &session], 1);
    assert!(!err.contains(&session[12..]), "{err}");
    let revoked = cli.json(&["session", "revoke", &session[..12]]);
    assert_eq!(revoked["public_id"], &session[..12]);
    let lookup = backend.directory().lookup(&session, None).await.expect("lookup");
    assert_eq!(lookup.authenticate(Sessions::Accepted), Err(Denied::Unauthorized));

    tables.delete().await;
}

#[tokio::test]
async fn usage_and_input_errors_fail_cleanly() {
    let tables = Tables::new().await;
    let cli = Callctl::new(&tables.calls, &tables.directory);
    // Usage errors are clap's: exit 2.
    for ttl in ["0h", "garbage", "10", "1.5h", "-1d", "400d"] {
        cli.fails(&["session", "create", "--user", "u", "--workspace", "1", "--ttl", ttl], 2);
    }
    cli.fails(&["call", "get", "--workspace", "1"], 2);
    cli.fails(&["call", "get", "--id", "1", "--workspace", "1", "--call-id", "c"], 2);
    cli.fails(&["workspace", "create", "--name", "x", "--bogus"], 2);
    cli.fails(&["agent", "list", "--workspace", "0"], 2);
    // Input the tables refuse: exit 1, one line.
    let err = cli.fails(&["agent", "create", "--workspace", "42", "--remote-id", "r"], 1);
    assert!(err.contains("workspace 42"), "{err}");
    let err = cli.fails(&["--json", "key", "list", "--workspace", "42"], 1);
    assert!(err.contains("no such workspace"), "{err}");
    let err = cli.fails(&["session", "create", "--user", "u", "--workspace", "42"], 1);
    assert!(err.contains("42"), "{err}");
    cli.fails(&["workspace", "create", "--name", "  "], 1);
    tables.delete().await;
}

#[tokio::test]
async fn no_secret_is_stored() {
    let tables = Tables::new().await;
    let cli = Callctl::new(&tables.calls, &tables.directory);
    let ws = u64_of(&cli.json(&["workspace", "create", "--name", "Secrets"]), "id").to_string();
    let mut tokens = Vec::new();
    for name in ["one", "two"] {
        let key = cli.json(&["key", "create", "--workspace", &ws, "--name", name]);
        tokens.push(str_of(&key, "token").to_owned());
    }
    let fixture = "cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6";
    let registered = cli.json_with_stdin(&["key", "create", "--workspace", &ws, "--token-file", "-"], fixture);
    assert_eq!(registered["token"], fixture);
    tokens.push(fixture.to_owned());
    let session = cli.json(&["session", "create", "--user", "carol", "--workspace", &ws, "--ttl", "30m"]);
    tokens.push(str_of(&session, "token").to_owned());
    let human = cli.ok(&["key", "create", "--workspace", &ws]);
    tokens.push(
        human
            .split_whitespace()
            .find(|w| w.starts_with("cik_") && w.len() > 12)
            .unwrap_or_else(|| panic!("no token in {human}"))
            .to_owned(),
    );
    cli.json(&["session", "revoke", str_of(&session, "public_id")]);

    let items = tables.scan(&tables.directory).await;
    assert!(!items.is_empty());
    for token in &tokens {
        let secret = &token[12..];
        for item in &items {
            let text = format!("{item:?}");
            assert!(!text.contains(secret), "the secret of {} is stored: {text}", &token[..12]);
        }
    }
    tables.delete().await;
}

#[tokio::test]
async fn tenant_strings_cannot_drive_the_operators_terminal() {
    let (calls, directory) = unique_names();
    let cli = Callctl::new(&calls, &directory);
    cli.ok(&["tables", "create"]);
    let ws = u64_of(&cli.json(&["workspace", "create", "--name", "Hostile"]), "id");
    let agent = cli.json(&["agent", "create", "--workspace", &ws.to_string(), "--remote-id", "bot"]);
    // An OSC 52 clipboard write, a bell, a right-to-left override and a forged line.
    let call_id = "call\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{202e}gpj.exe\nforged";
    let (doc, raw) = testkit::small_call(call_id, "x");
    // A small call: its frame stays inline, so the bucket is never used.
    let frames = call_ingest_store::calls::Frames::new(testkit::s3_client(), FRAMES);
    let store = call_ingest_store::calls::Store::new(testkit::client().await, frames, calls.clone(), 10);
    store.put_call(Owner { workspace_id: ws, agent_id: str_of(&agent, "id") }, &doc, &raw).await.expect("stored");
    for args in [vec!["call", "list", "--workspace", &ws.to_string()], vec!["call", "get", "--id", "1"]] {
        let text = cli.ok(&args);
        assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{args:?}: {text:?}");
        assert!(text.contains("\\u{1b}]52") && !text.contains("\nforged"), "{args:?}: {text:?}");
    }
    let json = cli.json(&["call", "get", "--id", "1"]);
    assert_eq!(json["call_id"], call_id, "--json keeps the value as it is");
    Tables { client: testkit::client().await, calls, directory, s3: testkit::s3_client(), bucket: FRAMES.into() }
        .delete()
        .await;
}

#[tokio::test]
async fn traces_that_joined_no_call_are_listed_with_their_keys_best_first() {
    use call_ingest_traces::{
        any_value, AnyValue, ExportTraceServiceRequest, KeyValue, ResourceSpans, ScopeSpans, Span,
    };
    let (calls, directory) = unique_names();
    let cli = Callctl::new(&calls, &directory);
    cli.ok(&["tables", "create"]);
    let ws = u64_of(&cli.json(&["workspace", "create", "--name", "Traced"]), "id");
    let key = |k: &str, v: &str| KeyValue {
        key: k.into(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(v.into())) }),
        ..Default::default()
    };
    let span = Span {
        trace_id: vec![7; 16],
        span_id: vec![1; 8],
        name: "turn".into(),
        attributes: vec![key("lk.room_sid", "RM_1"), key("conversation.id", "conv\u{202e}gpj")],
        ..Default::default()
    };
    let batch = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans { spans: vec![span], ..Default::default() }],
            ..Default::default()
        }],
    };
    let frames = call_ingest_store::calls::Frames::new(testkit::s3_client(), FRAMES);
    let store = call_ingest_store::calls::Store::new(testkit::client().await, frames, calls.clone(), 10);
    let kept = store.put_trace_batch(ws, 1_763_700_000_000, &batch).await.expect("kept");
    store.index_trace_batch(&kept).await.expect("indexed");
    let listed = cli.json(&["traces", "unjoined", "--workspace", &ws.to_string()]);
    assert_eq!(listed["traces"][0]["trace_id"], "07".repeat(16), "{listed}");
    assert_eq!(
        listed["traces"][0]["keys"],
        serde_json::json!(["conv\u{202e}gpj", "RM_1"]),
        "conversation.id ranks first"
    );
    assert_eq!(listed["traces"][0]["spans"], 1);
    let text = cli.ok(&["traces", "unjoined", "--workspace", &ws.to_string()]);
    assert!(
        text.contains("conv\\u{202e}gpj") && !text.contains('\u{202e}'),
        "a right-to-left override is shown escaped: {text:?}"
    );
    let other = cli.json(&["traces", "unjoined", "--workspace", &(ws + 1).to_string()]);
    assert_eq!(other["traces"], serde_json::json!([]), "another workspace's traces are not listed");
    Tables { client: testkit::client().await, calls, directory, s3: testkit::s3_client(), bucket: FRAMES.into() }
        .delete()
        .await;
}
