//! Reading a call back (`get-call`): by id and by provider call id, tenancy, scopes,
//! ETag / 304, gzip and the largest calls, through the handler and a real DynamoDB protocol.

use crate::requests::*;
use aws_sdk_dynamodb::types::AttributeValue;
use call_ingest_core::Operation;
use call_ingest_http::Endpoint;
use call_ingest_store::directory::credentials::digest;
use call_ingest_store::directory::scopes::{Scope, Scopes};
use serde_json::Value;
use testkit::{two_workspaces, TwoWorkspaces};

/// Both workspaces' keys may send and read.
type Fixture = TwoWorkspaces;

async fn fixture() -> Fixture {
    two_workspaces(Scopes::of([Scope::Send, Scope::Read]), &[], &[]).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn post(f: &Fixture, key: &str, workspace: &str, body: &Value) -> Answer {
    let q = [("workspace_id", workspace), ("agent_remote_identifier", "desk")];
    send(&f.backend, Operation::CreateCall, request(Operation::CreateCall, Some(key), &q, body)).await
}

async fn get(f: &Fixture, key: &str, id: Option<&str>, query: &[(&str, &str)], headers: &[(&str, &str)]) -> Answer {
    send(&f.backend, Endpoint::GetCall, get_request(id, Some(key), query, headers)).await
}

/// The answer without its request id, to compare two answers.
fn shape(a: &Answer) -> (u16, Value) {
    let mut body = a.body.clone();
    body.as_object_mut().map(|o| o.remove("request_id"));
    (a.status, body)
}

#[tokio::test]
async fn a_call_reads_back_by_id_and_by_provider_call_id() {
    let f = fixture().await;
    let created = post(&f, &f.key1, "1", &create_call_body("read-1")).await;
    assert_eq!(created.status, 201);
    let id = created.body["id"].as_u64().unwrap().to_string();
    let stored = f.backend.store().get_call(1, "read-1", false).await.unwrap().unwrap();

    let by_id = get(&f, &f.key1, Some(&id), &[("workspace_id", "1")], &[]).await;
    assert_eq!(by_id.status, 200, "{}", by_id.body);
    let b = &by_id.body;
    assert_eq!(b["id"].as_u64().unwrap().to_string(), id);
    assert_eq!(b["provider_call_id"], "read-1");
    assert_eq!(b["agent_remote_identifier"], "desk");
    assert_eq!(b["operation"], "create_call");
    assert_eq!(b["revision"], 1);
    assert_eq!(b["digest"], stored.current.digest.as_str());
    assert_eq!(b["document"], stored.current.document_value(), "the normalised document as stored");
    assert_eq!(b["document"]["call"]["caller_phone_number"], "+14155550199");
    assert!(b["created_at"].as_str().unwrap().ends_with('Z') && b["updated_at"].as_str().unwrap().contains('T'));
    assert_eq!(by_id.header("content-type"), Some("application/json"));
    assert_eq!(by_id.header("cache-control"), Some("no-store"));

    // openapi.yaml documents exactly these fields, all required.
    let spec: Value =
        serde_norway::from_str(&std::fs::read_to_string(testkit::root().join("openapi.yaml")).unwrap()).unwrap();
    let record = &spec["components"]["schemas"]["CallRecord"];
    let documented: std::collections::BTreeSet<&str> =
        record["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    let answered: std::collections::BTreeSet<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(documented, answered);
    assert_eq!(record["required"].as_array().unwrap().len(), answered.len());

    let by_provider = get(&f, &f.key1, None, &[("workspace_id", "1"), ("provider_call_id", "read-1")], &[]).await;
    assert_eq!(shape(&by_provider), shape(&by_id));

    // After a revision: the new content, revision 2, and a new ETag.
    let mut revised = create_call_body("read-1");
    revised["user_sentiment"] = "Negative".into();
    assert_eq!(post(&f, &f.key1, "1", &revised).await.status, 200);
    let again = get(&f, &f.key1, Some(&id), &[("workspace_id", "1")], &[]).await;
    assert_eq!(
        (again.body["revision"].as_u64(), again.body["document"]["call"]["user_sentiment"].as_str()),
        (Some(2), Some("negative"))
    );
    assert_ne!(again.header("etag"), by_id.header("etag"));
}

#[tokio::test]
async fn another_workspaces_call_is_answered_as_a_missing_one() {
    let f = fixture().await;
    let id = post(&f, &f.key1, "1", &create_call_body("mine")).await.body["id"].as_u64().unwrap().to_string();
    let missing_id = (id.parse::<u64>().unwrap() + 1000).to_string();
    let ws2 = [("workspace_id", "2")];
    // Workspace 2's key, in its own workspace: 404 alike for workspace 1's id and for an id
    // no call has, by id and by provider call id.
    let theirs = get(&f, &f.key2, Some(&id), &ws2, &[]).await;
    let nobody = get(&f, &f.key2, Some(&missing_id), &ws2, &[]).await;
    assert_eq!(theirs.status, 404);
    assert_eq!(shape(&theirs), shape(&nobody));
    assert!(!theirs.body.to_string().contains("mine"));
    let theirs = get(&f, &f.key2, None, &[("workspace_id", "2"), ("provider_call_id", "mine")], &[]).await;
    let nobody = get(&f, &f.key2, None, &[("workspace_id", "2"), ("provider_call_id", "nobody")], &[]).await;
    assert_eq!(shape(&theirs), shape(&nobody));
    assert_eq!(theirs.body["type"], "urn:call-ingest:problem:call-not-found");
    // Asking for workspace 1 with workspace 2's key: 403, as for sending.
    assert_eq!(get(&f, &f.key2, Some(&id), &[("workspace_id", "1")], &[]).await.status, 403);
    // Names no call can have: 404 without a read.
    for bad in ["abc", "0", "-1", "18446744073709551616"] {
        assert_eq!(get(&f, &f.key1, Some(bad), &[("workspace_id", "1")], &[]).await.status, 404, "{bad}");
    }
    let long = "x".repeat(3000);
    let a = get(&f, &f.key1, None, &[("workspace_id", "1"), ("provider_call_id", &long)], &[]).await;
    assert_eq!(a.status, 404, "a provider call id past any key's size is no call, not a 500");
}

#[tokio::test]
async fn requests_are_checked_in_the_contracts_order() {
    let f = fixture().await;
    // 401 before anything else, with or without a query.
    let a = send(&f.backend, Endpoint::GetCall, get_request(Some("1"), None, &[], &[])).await;
    assert_eq!((a.status, a.header("www-authenticate")), (401, Some("Bearer")));
    let a = send(&f.backend, Endpoint::GetCall, get_request(Some("1"), Some("Bearer cik_nope"), &[], &[])).await;
    assert_eq!(a.status, 401);
    // Then the query: workspace_id is required, and so is a call.
    let a = get(&f, &f.key1, Some("1"), &[], &[]).await;
    assert_eq!((a.status, a.body["errors"][0]["pointer"].as_str()), (422, Some("/query/workspace_id")));
    let a = get(&f, &f.key1, None, &[("workspace_id", "1")], &[]).await;
    assert_eq!((a.status, a.body["errors"][0]["pointer"].as_str()), (422, Some("/query/provider_call_id")));
    // Methods the paths do not serve: 405 with the methods they do.
    let mut r = get_request(Some("1"), Some(&f.key1), &[("workspace_id", "1")], &[]);
    *r.method_mut() = lambda_http::http::Method::PUT;
    let a = send(&f.backend, Endpoint::GetCall, r).await;
    assert_eq!((a.status, a.header("allow")), (405, Some("GET, DELETE")));
    let mut r = request(Operation::CreateCall, Some(&f.key1), &[], &Value::Null);
    *r.method_mut() = lambda_http::http::Method::PUT;
    let a = send(&f.backend, Operation::CreateCall, r).await;
    assert_eq!((a.status, a.header("allow")), (405, Some("GET, POST")), "GET on that path is get-call's");
}

#[tokio::test]
async fn scopes_decide_who_reads_and_who_sends() {
    let f = fixture().await;
    let d = f.backend.directory();
    post(&f, &f.key1, "1", &create_call_body("scoped")).await;
    let q = [("workspace_id", "1"), ("provider_call_id", "scoped")];
    let sender = d.create_api_key(1, "sender", Scopes::DEFAULT).await.unwrap();
    let reader = d.create_api_key(1, "reader", Scopes::of([Scope::Read])).await.unwrap();

    let a = get(&f, &bearer(&sender.token), None, &q, &[]).await;
    assert_eq!((a.status, a.body["type"].as_str()), (403, Some("urn:call-ingest:problem:insufficient-scope")));
    assert!(a.body["detail"].as_str().unwrap().contains("`read`"), "{}", a.body);
    assert_eq!(get(&f, &bearer(&reader.token), None, &q, &[]).await.status, 200);
    let a = post(&f, &bearer(&reader.token), "1", &create_call_body("by-reader")).await;
    assert_eq!(a.status, 403);
    assert!(a.body["detail"].as_str().unwrap().contains("`send`"), "{}", a.body);
    let a = send(
        &f.backend,
        Operation::SendCallData,
        request(Operation::SendCallData, Some(&bearer(&reader.token)), &[], &send_call_data_body("agt_x", "c")),
    )
    .await;
    assert_eq!((a.status, a.body["success"].as_bool()), (403, Some(false)));
    assert!(f.backend.store().get_call(1, "by-reader", false).await.unwrap().is_none(), "nothing written");

    // A key made before scopes existed (no `scopes` attribute) sends, and only sends.
    let old = d.create_api_key(1, "old", Scopes::DEFAULT).await.unwrap();
    f.t.client
        .update_item()
        .table_name(&f.t.directory)
        .key("pk", AttributeValue::S(format!("CRED#{}", digest(&old.token))))
        .key("sk", AttributeValue::S("CRED".into()))
        .update_expression("REMOVE scopes")
        .send()
        .await
        .unwrap();
    assert_eq!(post(&f, &bearer(&old.token), "1", &create_call_body("by-old-key")).await.status, 201);
    assert_eq!(get(&f, &bearer(&old.token), None, &q, &[]).await.status, 403);

    // A session reads the workspaces its user is a member of.
    let session = d.create_session("ann@example.com", &[1], std::time::Duration::from_secs(600)).await.unwrap();
    assert_eq!(get(&f, &bearer(&session.token), None, &q, &[]).await.status, 200);
    let q2 = [("workspace_id", "2"), ("provider_call_id", "scoped")];
    assert_eq!(get(&f, &bearer(&session.token), None, &q2, &[]).await.status, 403);
}

#[tokio::test]
async fn etags_answer_304_until_the_call_changes() {
    let f = fixture().await;
    post(&f, &f.key1, "1", &create_call_body("tagged")).await;
    let q = [("workspace_id", "1"), ("provider_call_id", "tagged")];
    let first = get(&f, &f.key1, None, &q, &[]).await;
    let etag = first.header("etag").unwrap().to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");

    for matching in [etag.clone(), etag.trim_start_matches("W/").to_owned(), format!("\"x\", {etag}"), "*".into()] {
        let response = call_ingest_http::handle(
            &f.backend,
            Endpoint::GetCall,
            get_request(None, Some(&f.key1), &q, &[("if-none-match", &matching)]),
        )
        .await;
        assert_eq!(response.status(), 304, "{matching}");
        assert!(response.body().is_empty());
        assert_eq!(response.headers()["etag"], etag.as_str());
    }
    assert_eq!(get(&f, &f.key1, None, &q, &[("if-none-match", "W/\"other\"")]).await.status, 200);

    let mut revised = create_call_body("tagged");
    revised["call_status"] = "ended".into();
    post(&f, &f.key1, "1", &revised).await;
    let after = get(&f, &f.key1, None, &q, &[("if-none-match", &etag)]).await;
    assert_eq!(after.status, 200, "the old tag no longer matches");
    assert_ne!(after.header("etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn answers_are_gzipped_when_the_client_takes_gzip() {
    let f = fixture().await;
    let mut body = create_call_body("zipped");
    body["notes"] = "a long note kept as an unknown field ".repeat(60).into();
    post(&f, &f.key1, "1", &body).await;
    let q = [("workspace_id", "1"), ("provider_call_id", "zipped")];
    let plain = get(&f, &f.key1, None, &q, &[]).await;
    let zipped = get(&f, &f.key1, None, &q, &[("accept-encoding", "br, gzip;q=0.8")]).await;
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert_eq!(zipped.header("vary"), Some("accept-encoding"));
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(shape(&zipped), shape(&plain));
    let refused = get(&f, &f.key1, None, &q, &[("accept-encoding", "gzip;q=0")]).await;
    assert_eq!(refused.header("content-encoding"), None);
    // A small answer is not worth compressing.
    post(&f, &f.key1, "1", &create_call_body("small")).await;
    let q = [("workspace_id", "1"), ("provider_call_id", "small")];
    assert_eq!(get(&f, &f.key1, None, &q, &[("accept-encoding", "gzip")]).await.header("content-encoding"), None);
}

#[tokio::test]
async fn a_58_mb_call_reads_back_whole_compressed_and_is_refused_uncompressed_with_the_reason() {
    let f = fixture().await;
    let body = callgen::create_call(&callgen::Options {
        size: callgen::Size::Bytes(5_800_000),
        seed: 58,
        call_id: Some("big-read".into()),
    });
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let mut r = request(Operation::CreateCall, Some(&f.key1), &q, &Value::Null);
    *r.body_mut() = lambda_http::Body::Binary(body.clone());
    assert_eq!(send(&f.backend, Operation::CreateCall, r).await.status, 201);

    let q = [("workspace_id", "1"), ("provider_call_id", "big-read")];
    let response = call_ingest_http::handle(
        &f.backend,
        Endpoint::GetCall,
        get_request(None, Some(&f.key1), &q, &[("accept-encoding", "gzip")]),
    )
    .await;
    assert_eq!(response.status(), 200);
    let carried = response.body().len().div_ceil(3) * 4;
    assert!(carried < 6 * 1024 * 1024, "{carried} bytes base64 fit Lambda's answer");
    let a = read(response);
    let stored = f.backend.store().get_call(1, "big-read", false).await.unwrap().unwrap();
    assert_eq!(a.body["document"], stored.current.document_value(), "the whole document");
    let sent: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        a.body["document"]["call"]["transcript_with_tool_calls"].as_array().unwrap().len(),
        sent["transcript_with_tool_calls"].as_array().unwrap().len()
    );

    let plain = get(&f, &f.key1, None, &q, &[]).await;
    assert_eq!((plain.status, plain.body["type"].as_str()), (406, Some("urn:call-ingest:problem:too-large-to-answer")));
    assert!(plain.body["detail"].as_str().unwrap().contains("Accept-Encoding: gzip"), "{}", plain.body);
}

/// How a test asks for a byte range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// `Range: bytes=a-`: parts of the identity bytes, whatever `Accept-Encoding` says.
    Header,
    /// `?bytes=a-`, as the viewer asks: gzip-compressed parts when the request takes gzip.
    Query,
}

/// Reads a whole answer of `path` through byte ranges, checking each part fits Lambda's
/// answer (gzip-compressed only when asked in the query by a request that takes gzip);
/// answers the bytes and how many parts it took.
async fn read_in_ranges(
    f: &Fixture,
    endpoint: Endpoint,
    via: Via,
    request: impl Fn() -> lambda_http::Request,
) -> (Vec<u8>, usize) {
    use lambda_http::RequestExt;
    let mut whole = Vec::new();
    let mut parts = 0;
    loop {
        let mut r = request();
        let takes_gzip = via == Via::Query && r.headers().get("accept-encoding").is_some();
        let from = format!("{}-", whole.len());
        if via == Via::Header {
            r.headers_mut().insert("range", format!("bytes={from}").parse().unwrap());
        } else {
            let mut query: std::collections::HashMap<String, Vec<String>> =
                r.query_string_parameters().iter().map(|(k, v)| (k.to_owned(), vec![v.to_owned()])).collect();
            query.insert("bytes".into(), vec![from]);
            r = r.with_query_string_parameters(query);
        }
        let response = call_ingest_http::handle(&f.backend, endpoint, r).await;
        if response.status() == 429 {
            // Each part counts its read units (1 MiB each) against the workspace's reads a
            // second: a client reading this much waits as told.
            let wait: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
            continue;
        }
        assert_eq!(response.status(), 206);
        let gzip = response.headers().get("content-encoding").is_some();
        assert!(!gzip || takes_gzip, "compressed only when asked in the query by a client taking gzip");
        assert!(response.body().len().div_ceil(3) * 4 < 6 * 1024 * 1024 - 4096, "a part fits Lambda's answer");
        let range = response.headers()["content-range"].to_str().unwrap().to_owned();
        let (span, total) = range.strip_prefix("bytes ").unwrap().split_once('/').unwrap();
        let (first, last) = span.split_once('-').unwrap();
        assert_eq!(first.parse::<usize>().unwrap(), whole.len());
        if gzip {
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(response.body().as_ref()), &mut whole)
                .unwrap();
        } else {
            whole.extend_from_slice(response.body());
        }
        parts += 1;
        assert_eq!(last.parse::<usize>().unwrap() + 1, whole.len());
        // A call's JSON compresses: every part of a MiB or more comes compressed when taken.
        let span = last.parse::<usize>().unwrap() + 1 - first.parse::<usize>().unwrap();
        assert!(gzip || !takes_gzip || span < 1 << 20, "a part of {span} bytes not compressed");
        if whole.len() == total.parse::<usize>().unwrap() {
            return (whole, parts);
        }
    }
}

#[tokio::test]
async fn the_largest_calls_read_back_whole_in_byte_ranges() {
    let f = fixture().await;
    // About 25 MB of JSON: it gets in gzip-compressed (level 9 keeps the event, base64,
    // under Lambda's 6 MB), its frame goes to S3 through the fault layer's partition and
    // transaction limits, and its answer does not fit one Lambda response even
    // gzip-compressed.
    let body = callgen::create_call(&callgen::Options {
        size: callgen::Size::Bytes(25_000_000),
        seed: 26,
        call_id: Some("huge-read".into()),
    });
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut encoder, &body).unwrap();
    let gzipped = encoder.finish().unwrap();
    let event = gzipped.len().div_ceil(3) * 4 + 8 * 1024;
    assert!(event < 6_291_456, "an event of {event} bytes: over Lambda's limit");
    let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
    let mut r = request(Operation::CreateCall, Some(&f.key1), &q, &Value::Null);
    *r.body_mut() = lambda_http::Body::Binary(gzipped);
    r.headers_mut().insert("content-encoding", "gzip".parse().unwrap());
    let created = send(&f.backend, Operation::CreateCall, r).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_u64().unwrap().to_string();

    let q = [("workspace_id", "1")];
    let whole = get(&f, &f.key1, Some(&id), &q, &[("accept-encoding", "gzip")]).await;
    assert_eq!(whole.status, 406);
    assert!(whole.body["detail"].as_str().unwrap().contains("Range: bytes=0-"), "{}", whole.body);

    let by_id = || get_request(Some(&id), Some(&f.key1), &q, &[("accept-encoding", "gzip")]);
    let (bytes, parts) = read_in_ranges(&f, Endpoint::GetCall, Via::Header, by_id).await;
    assert!(parts >= 9, "{parts} parts of at most 3 MiB");
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    let stored = f.backend.store().get_call(1, "huge-read", false).await.unwrap().unwrap();
    assert_eq!(answer["document"], stored.current.document_value(), "the whole document");
    // As the viewer reads it: gzip-compressed parts of up to 12 MiB, the same bytes.
    let (compressed, parts) = read_in_ranges(&f, Endpoint::GetCall, Via::Query, by_id).await;
    assert!((2..=3).contains(&parts), "{parts} gzip-compressed parts of at most 12 MiB");
    assert!(compressed == bytes, "the same answer");

    let raw = || {
        read_request(lambda_http::http::Method::GET, "/api/v1/public/call/{id}/raw", &[("id", &id)], Some(&f.key1), &q)
    };
    let (bytes, parts) = read_in_ranges(&f, Endpoint::GetRawCall, Via::Query, raw).await;
    assert!(bytes == body, "the raw body, byte for byte");
    assert!(parts >= 8, "{parts} parts of at most 3 MiB for a client that does not take gzip");
}

#[tokio::test]
async fn any_byte_range_is_that_slice_of_the_whole_answer_for_small_and_large_calls() {
    // Ranges, not the read budget: its 24 reads cost about 28 units (a read is charged a
    // unit per MiB it answers), past the default 20 when a second holds most of them.
    let f = two_workspaces(Scopes::of([Scope::Send, Scope::Read]), &[], &[("RATE_LIMIT_PER_SECOND", "1000")]).await;
    for (size, name) in [(20_000, "range-small"), (3_000_000, "range-large")] {
        let body = callgen::create_call(&callgen::Options {
            size: callgen::Size::Bytes(size),
            seed: 7,
            call_id: Some(name.into()),
        });
        let q = [("workspace_id", "1"), ("agent_remote_identifier", "desk")];
        let mut r = request(Operation::CreateCall, Some(&f.key1), &q, &Value::Null);
        *r.body_mut() = lambda_http::Body::Binary(body.clone());
        let created = send(&f.backend, Operation::CreateCall, r).await;
        assert_eq!(created.status, 201, "{}", created.body);
        let id = created.body["id"].as_u64().unwrap().to_string();
        let q = [("workspace_id", "1")];
        let whole =
            call_ingest_http::handle(&f.backend, Endpoint::GetCall, get_request(Some(&id), Some(&f.key1), &q, &[]))
                .await
                .body()
                .to_vec();
        serde_json::from_slice::<Value>(&whole).expect("the whole answer is JSON");
        let raw = || {
            read_request(
                lambda_http::http::Method::GET,
                "/api/v1/public/call/{id}/raw",
                &[("id", &id)],
                Some(&f.key1),
                &q,
            )
        };
        let n = whole.len();
        let doc_at = whole.windows(11).position(|w| w == b"\"document\":").unwrap() + 11;
        let ranges = [
            ("bytes=0-0".to_owned(), 0, 0),
            (format!("bytes={}-{}", doc_at - 3, doc_at + 2), doc_at - 3, doc_at + 2),
            (format!("bytes={}-{}", doc_at, doc_at), doc_at, doc_at),
            (format!("bytes={}-{}", n / 2, n / 2 + 5000), n / 2, n / 2 + 5000),
            (format!("bytes={}-", n - 3), n - 3, n - 1),
            ("bytes=-1".to_owned(), n - 1, n - 1),
            (format!("bytes={}-{}", doc_at - 1, n + 100), doc_at - 1, (doc_at - 1 + 3 * 1024 * 1024 - 1).min(n - 1)),
        ];
        for (header, first, last) in ranges {
            let mut r = get_request(Some(&id), Some(&f.key1), &q, &[]);
            r.headers_mut().insert("range", header.parse().unwrap());
            let response = call_ingest_http::handle(&f.backend, Endpoint::GetCall, r).await;
            assert_eq!(response.status(), 206, "{name} {header}");
            assert_eq!(response.headers()["content-range"], format!("bytes {first}-{last}/{n}").as_str(), "{name}");
            assert!(response.body().as_ref() == &whole[first..=last], "{name} {header}: the slice of the whole answer");
        }
        let mut r = get_request(Some(&id), Some(&f.key1), &q, &[]);
        r.headers_mut().insert("range", format!("bytes={n}-").parse().unwrap());
        let response = call_ingest_http::handle(&f.backend, Endpoint::GetCall, r).await;
        let range = response.headers().get("content-range").and_then(|v| v.to_str().ok());
        assert_eq!((response.status().as_u16(), range), (416, Some(format!("bytes */{n}").as_str())));

        for (first, last) in
            [(0, 9), (body.len() / 3, (body.len() / 3 + 100_000).min(body.len() - 1)), (body.len() - 1, body.len() - 1)]
        {
            let mut r = raw();
            r.headers_mut().insert("range", format!("bytes={first}-{last}").parse().unwrap());
            let response = call_ingest_http::handle(&f.backend, Endpoint::GetRawCall, r).await;
            assert_eq!(response.status(), 206, "{name} raw {first}-{last}");
            assert!(response.body().as_ref() == &body[first..=last], "{name} raw {first}-{last}");
        }
    }
}

#[tokio::test]
async fn the_bytes_query_is_the_range_header_for_browsers_and_gives_way_to_it() {
    let f = fixture().await;
    let body = callgen::create_call(&callgen::Options {
        size: callgen::Size::Bytes(20_000),
        seed: 8,
        call_id: Some("bytes-query".into()),
    });
    let created = post(&f, &f.key1, "1", &serde_json::from_slice(&body).unwrap()).await;
    let id = created.body["id"].as_u64().unwrap().to_string();
    let whole = call_ingest_http::handle(
        &f.backend,
        Endpoint::GetCall,
        get_request(Some(&id), Some(&f.key1), &[("workspace_id", "1")], &[]),
    )
    .await
    .body()
    .to_vec();
    let part = |query: &[(&str, &str)], headers: &[(&str, &str)]| {
        call_ingest_http::handle(&f.backend, Endpoint::GetCall, get_request(Some(&id), Some(&f.key1), query, headers))
    };
    let r = part(&[("workspace_id", "1"), ("bytes", "5-")], &[]).await;
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-range"], format!("bytes 5-{}/{}", whole.len() - 1, whole.len()).as_str());
    assert_eq!(r.body().as_ref(), &whole[5..]);
    // Taken gzip-compressed, as a browser takes it (it sends no Range header).
    let r = part(&[("workspace_id", "1"), ("bytes", "0-")], &[("accept-encoding", "gzip, br")]).await;
    let a = read(r);
    assert_eq!((a.status, a.header("content-encoding")), (206, Some("gzip")));
    assert_eq!(serde_json::to_vec(&a.body).unwrap().len(), whole.len(), "the whole answer in one part");
    // A Range header wins, and keeps HTTP's meaning: identity bytes, gzip taken or not, and
    // whatever a client says in our own marker.
    let r = part(&[("workspace_id", "1"), ("bytes", "0-")], &[("range", "bytes=0-9")]).await;
    assert_eq!(r.body().as_ref(), &whole[..10]);
    let headers = [("range", "bytes=0-"), ("accept-encoding", "gzip"), ("x-call-ingest-range-from-query", "1")];
    let r = part(&[("workspace_id", "1")], &headers).await;
    assert_eq!((r.status().as_u16(), r.headers().get("content-encoding")), (206, None));
    assert_eq!(r.body().as_ref(), &whole[..]);
    let r = part(&[("workspace_id", "1"), ("bytes", "nine\r\nx: y")], &[]).await;
    assert_eq!((r.status().as_u16(), r.body().as_ref()), (200, &whole[..]));
    f.t.delete().await;
}
