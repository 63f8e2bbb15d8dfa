//! Keeps `openapi.yaml` honest: every request example it shows is run through the real
//! parse → validate → normalise pipeline and must get the outcome it claims
//! (`x-expected-status`, and for 422 exactly the violations of `x-expected-errors`); every
//! problem of the HTTP layer's catalogue (`problems::CATALOGUE`) is documented on the
//! operations that can answer it, and no operation documents an error none can; and the
//! violation codes the document lists are exactly the codes the service sends.

use std::collections::BTreeSet;

use call_ingest_core::api::Code;
use call_ingest_core::call::{self, Operation, Rejection};
use call_ingest_http::problems::{ProblemKind, CATALOGUE};
use call_ingest_http::Endpoint;
use serde_json::{Map, Value};

const OPENAPI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.yaml");

const SEND_CALL_DATA: &str = "/v1/calls";
const CREATE_CALL: &str = "/api/v1/public/call";

/// Every operation of the document: the endpoint (function) that answers it, and whether
/// that function also answers the path's other methods (405, documented on this operation).
const OPERATIONS: [(Endpoint, &str, &str, bool); 19] = [
    (Endpoint::Ingest(Operation::SendCallData), SEND_CALL_DATA, "post", true),
    (Endpoint::Ingest(Operation::CreateCall), CREATE_CALL, "post", true),
    (Endpoint::GetCall, CREATE_CALL, "get", false),
    (Endpoint::GetCall, "/api/v1/public/call/{id}", "get", true),
    (Endpoint::EraseCall, "/api/v1/public/call/{id}", "delete", false),
    (Endpoint::ListCalls, "/api/v1/public/calls", "get", true),
    (Endpoint::CallRevisions, "/api/v1/public/call/{id}/revisions", "get", true),
    (Endpoint::CallRevisions, "/api/v1/public/call/{id}/revisions/{n}", "get", true),
    (Endpoint::GetRawCall, "/api/v1/public/call/{id}/raw", "get", true),
    (Endpoint::CallTrace, "/api/v1/public/call/{id}/trace", "get", true),
    (Endpoint::Webhook, "/v1/webhooks/{provider}/{hook_id}", "post", true),
    (Endpoint::Me, "/api/v1/public/me", "get", true),
    (Endpoint::ManageEndpoints, ENDPOINTS, "get", true),
    (Endpoint::ManageEndpoints, ENDPOINTS, "post", true),
    (Endpoint::ManageEndpoints, "/api/v1/public/endpoints/{endpoint_id}", "get", true),
    (Endpoint::ManageEndpoints, "/api/v1/public/endpoints/{endpoint_id}", "delete", true),
    (Endpoint::ManageEndpoints, "/api/v1/public/endpoints/{endpoint_id}/disable", "post", true),
    (Endpoint::ManageEndpoints, "/api/v1/public/endpoints/{endpoint_id}/enable", "post", true),
    (Endpoint::ManageEndpoints, "/api/v1/public/endpoints/{endpoint_id}/rotate", "post", true),
];

const ENDPOINTS: &str = "/api/v1/public/endpoints";

/// Whether the operation `method path` of `endpoint` can answer `kind`: every problem of its
/// endpoint, but that the event endpoints' paths differ: only those naming an endpoint can
/// find none (404), and only those that take a body (making one, rotating its secret) read
/// one (413, `invalid-json`).
fn answers(kind: &ProblemKind, endpoint: Endpoint, path: &str, method: &str) -> bool {
    if !(kind.answered_by)(endpoint) {
        return false;
    }
    if endpoint != Endpoint::ManageEndpoints {
        return true;
    }
    let takes_body = (path == ENDPOINTS && method == "post") || path.ends_with("/rotate");
    match kind.slug {
        "endpoint-not-found" => path.contains("{endpoint_id}"),
        "payload-too-large" | "invalid-json" => takes_body,
        _ => true,
    }
}

fn document() -> Value {
    let text = std::fs::read_to_string(OPENAPI).unwrap_or_else(|e| panic!("cannot read {OPENAPI}: {e}"));
    serde_norway::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{OPENAPI} is not valid YAML: {e}"))
}

/// `value`, or what its `$ref` (a local `#/...` pointer) points at, followed to the end.
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return value;
        };
        let pointer =
            reference.strip_prefix('#').unwrap_or_else(|| panic!("only local $refs are supported: {reference}"));
        value = doc.pointer(pointer).unwrap_or_else(|| panic!("dangling $ref {reference}"));
    }
    panic!("$ref chain too long")
}

/// The POST operation of `path`.
fn post<'a>(doc: &'a Value, path: &str) -> &'a Value {
    let item = doc["paths"].get(path).unwrap_or_else(|| panic!("path {path} is not documented"));
    let item = resolve(doc, item);
    item.get("post").unwrap_or_else(|| panic!("{path} has no POST operation"))
}

fn operation_of(path: &str) -> Operation {
    match path {
        SEND_CALL_DATA => Operation::SendCallData,
        CREATE_CALL => Operation::CreateCall,
        other => panic!("no operation is served at {other}"),
    }
}

/// A request example with the outcome it claims.
struct Example {
    name: String,
    value: Value,
    status: u64,
    errors: Option<BTreeSet<(String, String)>>,
}

fn request_examples(doc: &Value, path: &str) -> Vec<Example> {
    let body = resolve(doc, &post(doc, path)["requestBody"]);
    let examples = body["content"]["application/json"]["examples"]
        .as_object()
        .unwrap_or_else(|| panic!("{path}: the request body has no application/json examples"));
    examples
        .iter()
        .map(|(name, example)| {
            let example = resolve(doc, example);
            let status = example["x-expected-status"]
                .as_u64()
                .unwrap_or_else(|| panic!("{path} example {name:?}: x-expected-status missing or not an integer"));
            let errors = example.get("x-expected-errors").map(|list| {
                list.as_array()
                    .unwrap_or_else(|| panic!("{path} example {name:?}: x-expected-errors is not a list"))
                    .iter()
                    .map(|e| {
                        let field = |k: &str| {
                            e[k].as_str()
                                .unwrap_or_else(|| panic!("{path} example {name:?}: an expected error lacks {k}"))
                                .to_owned()
                        };
                        (field("pointer"), field("code"))
                    })
                    .collect()
            });
            let value = example.get("value").cloned().unwrap_or_else(|| panic!("{path} example {name:?} has no value"));
            Example { name: name.clone(), value, status, errors }
        })
        .collect()
}

/// What is wrong with `example` when run through the pipeline, or `None` when it gets
/// exactly the outcome it documents.
fn mismatch(operation: Operation, example: &Example) -> Option<String> {
    let bytes = serde_json::to_vec(&example.value).expect("a JSON value serialises");
    let outcome = call::ingest(operation, &bytes);
    let name = &example.name;
    match (example.status, outcome) {
        (201, Ok(_)) => None,
        (400, Err(Rejection::Unreadable(_))) => None,
        (422, Err(Rejection::Invalid(violations))) => {
            let Some(expected) = &example.errors else {
                return Some(format!("{name:?}: a 422 example needs x-expected-errors"));
            };
            if expected.is_empty() {
                return Some(format!("{name:?}: x-expected-errors is empty"));
            }
            let actual: BTreeSet<(String, String)> =
                violations.iter().map(|v| (v.pointer.clone(), v.code.as_str().to_owned())).collect();
            (actual != *expected).then(|| {
                format!(
                    "{name:?}: violations differ\n      documented only: {:?}\n      actual only:     {:?}\n      all actual:      {violations:?}",
                    expected.difference(&actual).collect::<Vec<_>>(),
                    actual.difference(expected).collect::<Vec<_>>(),
                )
            })
        }
        (status @ (201 | 400 | 422), outcome) => {
            Some(format!("{name:?}: documented {status}, got {}", describe(&outcome)))
        }
        (status, _) => Some(format!("{name:?}: x-expected-status {status} cannot be checked (use 201, 400 or 422)")),
    }
}

fn describe(outcome: &Result<call::CallDocument, Rejection>) -> String {
    match outcome {
        Ok(_) => "accepted (201)".to_owned(),
        Err(Rejection::Unreadable(e)) => format!("unreadable (400): {e}"),
        Err(Rejection::Invalid(v)) => format!("invalid (422): {v:?}"),
        Err(Rejection::OverLimit(v)) => format!("over a count limit (422): {v:?}"),
    }
}

/// Runs every request example of `path` and fails listing every one that does not get its
/// documented outcome. Also requires at least one example of each kind, so the check
/// cannot pass by having nothing to check.
fn check_request_examples(path: &str) {
    let doc = document();
    let examples = request_examples(&doc, path);
    let operation = operation_of(path);
    let failures: Vec<String> = examples.iter().filter_map(|e| mismatch(operation, e)).collect();
    assert!(failures.is_empty(), "{path}: examples whose documented outcome is wrong:\n  {}", failures.join("\n  "));
    for status in [201, 400, 422] {
        assert!(examples.iter().any(|e| e.status == status), "{path}: no request example documents {status}");
    }
}

#[test]
fn send_call_data_examples_get_the_status_and_violations_they_document() {
    check_request_examples(SEND_CALL_DATA);
}

#[test]
fn create_call_examples_get_the_status_and_violations_they_document() {
    check_request_examples(CREATE_CALL);
}

#[test]
fn both_operations_are_documented_as_post_with_their_operation_ids() {
    let doc = document();
    assert_eq!(doc["openapi"].as_str().unwrap_or_default(), "3.1.0");
    for (path, id) in [(SEND_CALL_DATA, "sendCallData"), (CREATE_CALL, "createCall")] {
        assert_eq!(post(&doc, path)["operationId"].as_str(), Some(id), "{path}");
    }
}

fn responses<'a>(doc: &'a Value, path: &str, method: &str) -> &'a Map<String, Value> {
    resolve(doc, &doc["paths"][path])[method]["responses"]
        .as_object()
        .unwrap_or_else(|| panic!("{method} {path}: no responses"))
}

#[test]
fn every_problem_of_the_catalogue_is_documented_on_every_operation_that_can_answer_it() {
    let doc = document();
    let mut missing = Vec::new();
    for (endpoint, path, method, other_methods) in OPERATIONS {
        let responses = responses(&doc, path, method);
        for kind in CATALOGUE.iter().filter(|k| answers(k, endpoint, path, method)) {
            if kind.status == 405 && !other_methods {
                continue;
            }
            if !responses.contains_key(&kind.status.to_string()) {
                missing.push(format!("{} {} on {method} {path}", kind.status, kind.slug));
            }
        }
    }
    assert!(missing.is_empty(), "problems the service answers but openapi.yaml does not document: {missing:?}");
}

/// The `type` slugs a documented response's examples show.
fn example_slugs(doc: &Value, response: &Value) -> Vec<String> {
    let content = &resolve(doc, response)["content"]["application/problem+json"];
    let examples = content["examples"].as_object().into_iter().flatten().map(|(_, e)| &resolve(doc, e)["value"]);
    std::iter::once(&content["example"])
        .chain(examples)
        .filter_map(|e| e["type"].as_str()?.strip_prefix("urn:call-ingest:problem:").map(str::to_owned))
        .collect()
}

#[test]
fn every_error_documented_is_a_problem_of_the_catalogue_its_operation_answers() {
    let doc = document();
    for (endpoint, path, method, other_methods) in OPERATIONS {
        for (status, response) in responses(&doc, path, method).iter().filter(|(s, _)| s.starts_with(['4', '5'])) {
            let kinds: Vec<_> = CATALOGUE
                .iter()
                .filter(|k| k.status.to_string() == *status && answers(k, endpoint, path, method))
                .filter(|k| k.status != 405 || other_methods)
                .collect();
            assert!(!kinds.is_empty(), "{method} {path} documents {status}, which no problem of {endpoint:?} has");
            let slugs = example_slugs(&doc, response);
            assert!(!slugs.is_empty(), "{method} {path} {status}: no example shows its problem type");
            for slug in slugs {
                assert!(
                    kinds.iter().any(|k| k.slug == slug),
                    "{method} {path} {status}: example type {slug} is not a {status} problem of {endpoint:?}"
                );
            }
        }
    }
}

#[test]
fn every_operation_documents_the_request_id_on_every_answer() {
    let doc = document();
    for (_, path, method, _) in OPERATIONS {
        for (status, response) in responses(&doc, path, method) {
            assert!(resolve(&doc, response)["headers"].get("X-Request-Id").is_some(), "{method} {path} {status}");
        }
    }
}

#[test]
fn every_response_documents_the_request_id_and_the_headers_its_status_requires() {
    let doc = document();
    for path in [SEND_CALL_DATA, CREATE_CALL] {
        let responses = post(&doc, path)["responses"].as_object().expect("responses");
        for (status, response) in responses {
            let headers = &resolve(&doc, response)["headers"];
            for header in required_headers(status) {
                assert!(headers.get(header).is_some(), "{path} {status}: header {header} not documented");
            }
        }
    }
}

/// The headers a response of `status` must document: the request id always, and what the
/// status calls for.
fn required_headers(status: &str) -> Vec<&'static str> {
    let mut required = vec!["X-Request-Id"];
    match status {
        "401" => required.push("WWW-Authenticate"),
        "405" => required.push("Allow"),
        "503" => required.push("Retry-After"),
        _ => {}
    }
    required
}

#[test]
fn error_responses_are_problem_json_and_operation_a_adds_its_envelope() {
    let doc = document();
    for path in [SEND_CALL_DATA, CREATE_CALL] {
        let responses = post(&doc, path)["responses"].as_object().expect("responses");
        for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('4') || s.starts_with('5')) {
            let response = resolve(&doc, response);
            let schema = response["content"]["application/problem+json"]
                .get("schema")
                .unwrap_or_else(|| panic!("{path} {status}: no application/problem+json schema"));
            let names = property_names(&doc, schema);
            for name in ["type", "title", "status", "detail", "request_id", "errors"] {
                assert!(names.contains(name), "{path} {status}: the problem schema lacks {name}");
            }
            let envelope = names.contains("success") && names.contains("message");
            assert_eq!(envelope, path == SEND_CALL_DATA, "{path} {status}: success / message envelope");
        }
    }
}

/// Property names of `schema`, through `$ref` and `allOf`.
fn property_names(doc: &Value, schema: &Value) -> BTreeSet<String> {
    let schema = resolve(doc, schema);
    let mut names: BTreeSet<String> =
        schema.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default();
    for part in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        names.extend(property_names(doc, part));
    }
    names
}

#[test]
fn create_call_query_parameters_are_required_with_their_limits() {
    let doc = document();
    let parameters = post(&doc, CREATE_CALL)["parameters"].as_array().expect("parameters");
    let find = |name: &str| {
        let p = parameters
            .iter()
            .map(|p| resolve(&doc, p))
            .find(|p| p["name"] == name && p["in"] == "query")
            .unwrap_or_else(|| panic!("query parameter {name} not documented"));
        assert_eq!(p["required"], true, "{name} must be required");
        p["schema"].clone()
    };
    let workspace = find("workspace_id");
    assert_eq!(workspace["type"], "integer");
    assert_eq!(workspace["minimum"], 1);
    let agent = find("agent_remote_identifier");
    assert_eq!(agent["type"], "string");
    assert_eq!(agent["minLength"], 1);
}

/// The name each violation code has in a response body. The match is exhaustive, so a new
/// code does not compile until it is listed here (and then in the document).
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Required => "required",
        Code::Type => "type",
        Code::Length => "length",
        Code::Range => "range",
        Code::OneOf => "one_of",
        Code::Format => "format",
        Code::Limit => "limit",
    }
}

#[test]
fn the_problem_code_enum_lists_exactly_the_codes_the_service_sends() {
    let codes = [Code::Required, Code::Type, Code::Length, Code::Range, Code::OneOf, Code::Format, Code::Limit];
    for code in codes {
        assert_eq!(code.as_str(), code_name(code), "{code:?}");
        assert_eq!(Code::parse(code_name(code)), Some(code), "{code:?}");
    }
    let sent: BTreeSet<&str> = codes.into_iter().map(code_name).collect();

    let doc = document();
    let problem = &doc["components"]["schemas"]["Problem"];
    let violation = resolve(&doc, &problem["properties"]["errors"]["items"]);
    let code = resolve(&doc, &violation["properties"]["code"]);
    let documented: BTreeSet<&str> = code["enum"]
        .as_array()
        .expect("the Problem schema's errors[].code has an enum")
        .iter()
        .map(|c| c.as_str().expect("codes are strings"))
        .collect();
    assert_eq!(documented, sent);
}

#[test]
fn reading_a_call_is_documented_with_its_operation_ids_and_validators() {
    let doc = document();
    for (path, id) in [("/api/v1/public/call/{id}", "getCall"), (CREATE_CALL, "getCallByProviderCallId")] {
        let get = &resolve(&doc, &doc["paths"][path])["get"];
        assert_eq!(get["operationId"], id, "{path}");
        for status in ["200", "304"] {
            assert!(get["responses"].get(status).is_some(), "{path}: {status} undocumented");
        }
    }
}

#[test]
fn every_reading_endpoint_is_documented_with_its_statuses_and_headers() {
    let doc = document();
    let operations = [
        ("/api/v1/public/call/{id}", "get", "getCall"),
        ("/api/v1/public/call/{id}", "delete", "eraseCall"),
        ("/api/v1/public/calls", "get", "listCalls"),
        ("/api/v1/public/call/{id}/revisions", "get", "listCallRevisions"),
        ("/api/v1/public/call/{id}/revisions/{n}", "get", "getCallRevision"),
        ("/api/v1/public/call/{id}/raw", "get", "getCallRaw"),
    ];
    for (path, method, id) in operations {
        let operation = &resolve(&doc, &doc["paths"][path])[method];
        assert_eq!(operation["operationId"], id, "{path} {method}");
        let responses = operation["responses"].as_object().unwrap_or_else(|| panic!("{id}: no responses"));
        assert!(responses.contains_key("200"), "{id}: 200 undocumented");
        for (status, response) in responses {
            let response = resolve(&doc, response);
            for header in required_headers(status) {
                assert!(response["headers"].get(header).is_some(), "{id} {status}: header {header}");
            }
            if status.starts_with('4') || status.starts_with('5') {
                assert!(response["content"]["application/problem+json"].get("schema").is_some(), "{id} {status}");
            }
        }
        let params: Vec<String> = operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| resolve(&doc, p)["name"].as_str().unwrap().to_owned())
            .collect();
        assert!(params.contains(&"workspace_id".to_owned()), "{id}: workspace_id");
        for segment in path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')) {
            assert!(params.contains(&segment.to_owned()), "{id}: path parameter {segment}");
        }
    }
    let list = &doc["paths"]["/api/v1/public/calls"]["get"];
    assert!(resolve(&doc, &list["responses"]["400"])["content"]["application/problem+json"]["example"]["type"]
        .as_str()
        .unwrap()
        .ends_with("invalid-cursor"));
}
