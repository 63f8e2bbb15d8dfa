//! What the request log may never contain. Its own test binary: tracing caches whether a
//! log line is wanted per call site, process-wide, so other tests running without a
//! subscriber at the same time would silence this one.

mod requests;

use std::io::Write;
use std::sync::{Arc, Mutex};

use crate::requests::*;
use call_ingest_core::Operation;
use call_ingest_store::directory::credentials::Secret;
use call_ingest_store::directory::scopes::Scopes;
use testkit::Tables;

const EVENTS_KEY: &str = "cik_e0e0e0e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_request_log_holds_no_credential_transcript_or_phone_number() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let t = Tables::new().await;
            let backend = t.backend(&[]);
            backend.directory().create_workspace("logs").await.unwrap();
            backend.directory().create_agent(1, "events-agent", None, Some("agt_events")).await.unwrap();
            backend
                .directory()
                .register_api_key(1, "logs", Scopes::DEFAULT, Secret::from_token(EVENTS_KEY.to_owned()))
                .await
                .unwrap();
            let auth = format!("Bearer {EVENTS_KEY}");
            let q = [("workspace_id", "1"), ("agent_remote_identifier", "events-agent")];
            let a = send(
                &backend,
                Operation::CreateCall,
                request(Operation::CreateCall, Some(&auth), &q, &create_call_body("logged")),
            )
            .await;
            assert_eq!(a.status, 201);
            let a = send(
                &backend,
                Operation::SendCallData,
                request(Operation::SendCallData, Some(&auth), &[], &send_call_data_body("agt_events", "logged-a")),
            )
            .await;
            assert_eq!(a.status, 201);
            // DynamoDB refuses a write with a message quoting the request: only its code
            // may reach the log.
            t.fault(serde_json::json!({"op": "*", "fault": "invalid", "times": 1000, "table": t.calls}));
            let a = send(
                &backend,
                Operation::CreateCall,
                request(Operation::CreateCall, Some(&auth), &q, &create_call_body("refused")),
            )
            .await;
            assert_eq!(a.status, 500);
            t.clear_faults(&t.calls);
            t.delete().await;
        })
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("\"status\":201"), "the request line is logged: {log}");
    assert!(log.contains("bytes_stored"));
    assert!(log.contains("ValidationException"), "the refusal is logged by its code: {log}");
    assert!(!log.contains("parameter values were invalid"), "DynamoDB's message, which quotes the request, was logged");
    for secret in [EVENTS_KEY, &EVENTS_KEY[12..], "SECRET-TRANSCRIPT-WORDS", "+14155550199", "4155550199"] {
        assert!(!log.contains(secret), "{secret} leaked into the log");
    }
}
