//! Validation of both request bodies, table-driven: every rule of the contract's
//! Validation section and of the specification's sections 2.3 and 8, with boundary cases
//! on both sides of every limit. Each case is a valid base body plus one mutation and the
//! exact outcome: accepted, 400 (unreadable), or 422 with the exact set of
//! (pointer, code) pairs. Here: the table's harness and what both operations share; the
//! cases are in [`create_call`] (operation B) and [`send_call_data`] (operation A).

mod create_call;
mod send_call_data;

use call_ingest_core::api::{Code, Violation};
use call_ingest_core::call::{ingest, Rejection};
use call_ingest_core::Operation;
use serde_json::{json, Value};
use Code::{Format, Length, OneOf, Range, Required, Type};

/// What `ingest` should answer.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Valid: normalised into a document.
    Ok,
    /// 400: not JSON, or not a JSON object.
    Unreadable,
    /// 422 with exactly these (pointer, code) pairs, sorted.
    Invalid(Vec<(String, Code)>),
}

struct Case {
    name: String,
    op: Operation,
    body: Vec<u8>,
    expect: Outcome,
}

/// A case being written: a base body and the mutations applied to it so far.
struct Draft {
    name: String,
    op: Operation,
    body: Value,
}

/// Operation B, from the valid base body.
fn b(name: impl Into<String>) -> Draft {
    Draft { name: name.into(), op: Operation::CreateCall, body: base_create_call() }
}

/// Operation A, from the valid base body.
fn a(name: impl Into<String>) -> Draft {
    Draft { name: name.into(), op: Operation::SendCallData, body: base_send_call_data() }
}

/// A case whose body is given as raw bytes.
fn raw(name: &str, op: Operation, body: &[u8], expect: Outcome) -> Case {
    Case { name: name.to_owned(), op, body: body.to_vec(), expect }
}

impl Draft {
    /// Sets the value at `pointer` (the member or element is created when its parent exists).
    fn set(mut self, pointer: &str, value: Value) -> Self {
        set_at(&mut self.body, pointer, value);
        self
    }

    /// Removes the member or element at `pointer`.
    fn remove(mut self, pointer: &str) -> Self {
        remove_at(&mut self.body, pointer);
        self
    }

    /// Replaces the whole body.
    fn body(mut self, body: Value) -> Self {
        self.body = body;
        self
    }

    fn case(self, expect: Outcome) -> Case {
        let body = serde_json::to_vec(&self.body).expect("a Value serialises");
        Case { name: self.name, op: self.op, body, expect }
    }

    fn ok(self) -> Case {
        self.case(Outcome::Ok)
    }

    fn invalid(self, errors: &[(&str, Code)]) -> Case {
        self.case(invalid(errors))
    }
}

fn invalid(errors: &[(&str, Code)]) -> Outcome {
    let mut list: Vec<(String, Code)> = errors.iter().map(|(p, c)| ((*p).to_owned(), *c)).collect();
    list.sort();
    Outcome::Invalid(list)
}

fn set_at(body: &mut Value, pointer: &str, value: Value) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_else(|| panic!("not a pointer: {pointer:?}"));
    let last = last.replace("~1", "/").replace("~0", "~");
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
        }
        Some(Value::Array(items)) => {
            let i: usize = last.parse().unwrap_or_else(|_| panic!("not an index in {pointer:?}"));
            if i == items.len() {
                items.push(value);
            } else {
                items[i] = value;
            }
        }
        _ => panic!("the parent of {pointer:?} is not an object or array in the base body"),
    }
}

fn remove_at(body: &mut Value, pointer: &str) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_else(|| panic!("not a pointer: {pointer:?}"));
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            assert!(map.remove(last).is_some(), "nothing to remove at {pointer:?}");
        }
        Some(Value::Array(items)) => {
            items.remove(last.parse().unwrap_or_else(|_| panic!("not an index in {pointer:?}")));
        }
        _ => panic!("the parent of {pointer:?} is not an object or array in the base body"),
    }
}

const SEGS: &str = "/transcript_with_tool_calls";

/// The pointer of segment `i`'s `rest` (`""` for the segment).
fn seg(i: usize, rest: &str) -> String {
    format!("{SEGS}/{i}{rest}")
}

/// `n` copies of `c`.
fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// A valid operation B body with every kind of segment:
/// 0 agent timed by words, 1 user with start/end, 2 tool call, 3 tool result,
/// 4 node transition, 5 agent with start + duration.
fn base_create_call() -> Value {
    json!({
        "call_id": "call_base_0001",
        "call_type": "phone_call",
        "transcript_with_tool_calls": [
            {"role": "agent", "text": "Hello, how can I help?", "words": [
                {"word": "Hello,", "start_ms": 0, "end_ms": 300, "confidence": 0.98},
                {"word": "how", "start_ms": 350, "end_ms": 500, "confidence": 0.97},
                {"word": "can", "start_ms": 520, "end_ms": 640, "confidence": 0.99},
                {"word": "I", "start_ms": 650, "end_ms": 700, "confidence": 0.99},
                {"word": "help?", "start_ms": 720, "end_ms": 1000, "confidence": 0.95}
            ], "metadata": {"e2e_latency": 820.5, "interrupted": false}},
            {"role": "user", "text": "Where is my order?", "start_ms": 1500, "end_ms": 2600,
             "metadata": {"transcript_confidence": 0.93, "stt_node_ttfb": 210.0}},
            {"role": "agent_function", "text": "", "start_ms": 2700,
             "tool": {"name": "get_order_status", "request_id": "req_1", "params": {"order": "A1"}, "start_ms": 2700}},
            {"role": "agent_result", "text": "", "start_ms": 3100,
             "tool": {"name": "get_order_status", "request_id": "req_1", "result": {"status": "shipped"},
                      "is_error": false, "start_ms": 2700, "end_ms": 3100}},
            {"role": "node_transition", "text": "", "start_ms": 3200,
             "node": {"from": "greeting", "to": "lookup", "reason": "condition met"}},
            {"role": "agent", "text": "It has shipped.", "start_ms": 3300, "duration_ms": 900}
        ],
        "start_timestamp": 1_763_700_000,
        "end_timestamp": 1_763_700_005,
        "recording_url": "https://recordings.example.com/call_base_0001.wav"
    })
}

/// A valid operation A body.
fn base_send_call_data() -> Value {
    json!({
        "agentId": "agt_demo",
        "callId": "call_a_0001",
        "transcript": [
            {"role": "agent", "content": "Hello, how can I help?", "timestamp": "2026-11-21T10:00:01Z"},
            {"role": "user", "content": "Where is my order?", "timestamp": "2026-11-21T10:00:04Z"}
        ],
        "startedAt": "2026-11-21T10:00:00Z",
        "endedAt": "2026-11-21T10:05:00Z",
        "metadata": {"durationSeconds": 300, "callDirection": "inbound", "callerPhone": "+14155550123", "outcome": "resolved"}
    })
}
/// 400 for bodies that are not JSON or not a JSON object.
fn unreadable_cases(op: Operation, prefix: &str) -> Vec<Case> {
    let bodies: [(&str, &[u8]); 14] = [
        ("empty_body", b""),
        ("white_space", b"  \n "),
        ("plain_text", b"call_id=1"),
        ("truncated_object", b"{\"call_id\": \"x\""),
        ("missing_value", b"{\"call_id\": }"),
        ("trailing_comma", b"{\"call_id\": \"x\",}"),
        ("trailing_garbage", b"{} x"),
        ("invalid_utf8", b"{\"call_id\": \"\xff\"}"),
        ("array", b"[]"),
        ("array_of_objects", b"[{\"call_id\": \"x\"}]"),
        ("string", b"\"{}\""),
        ("number", b"42"),
        ("null", b"null"),
        ("boolean", b"true"),
    ];
    bodies
        .into_iter()
        .map(|(name, body)| raw(&format!("{prefix}_{name}_is_unreadable"), op, body, Outcome::Unreadable))
        .collect()
}

/// What `ingest` answered, in the form of an [`Outcome`], plus the raw violations.
fn run(case: &Case) -> (Outcome, Vec<Violation>) {
    match ingest(case.op, &case.body) {
        Ok(_) => (Outcome::Ok, Vec::new()),
        Err(Rejection::Unreadable(_)) => (Outcome::Unreadable, Vec::new()),
        Err(Rejection::OverLimit(v)) => (Outcome::Invalid(vec![(v.pointer.clone(), v.code)]), vec![v]),
        Err(Rejection::Invalid(list)) => {
            let mut pairs: Vec<(String, Code)> = list.iter().map(|v| (v.pointer.clone(), v.code)).collect();
            pairs.sort();
            (Outcome::Invalid(pairs), list)
        }
    }
}

/// Checks one case; `None` when it passes, else what went wrong.
fn check(case: &Case) -> Option<String> {
    let (actual, raw) = run(case);
    let mut problems = Vec::new();
    if actual != case.expect {
        problems.push(format!("expected {:?}\n      actual   {:?}", case.expect, actual));
    }
    if let Outcome::Invalid(pairs) = &actual {
        if pairs.is_empty() {
            problems.push("422 with no violation".to_owned());
        }
        let mut sorted = raw.clone();
        sorted.sort();
        sorted.dedup();
        if sorted != raw {
            problems.push("violations are not sorted and unique".to_owned());
        }
        for v in &raw {
            if v.message.is_empty() || v.message.chars().count() > 200 {
                problems.push(format!("bad message at {}: {:?}", v.pointer, v.message));
            }
        }
    }
    if problems.is_empty() {
        None
    } else {
        let messages: Vec<String> = raw.iter().map(|v| format!("{} {:?}: {}", v.pointer, v.code, v.message)).collect();
        Some(format!("{}: {}\n      violations: {messages:#?}", case.name, problems.join("; ")))
    }
}

fn run_table(cases: &[Case]) {
    let mut names = std::collections::HashSet::new();
    for c in cases {
        assert!(names.insert(c.name.as_str()), "case name used twice: {}", c.name);
    }
    let failures: Vec<String> = cases.iter().filter_map(check).collect();
    println!("{} cases, {} failed", cases.len(), failures.len());
    assert!(failures.is_empty(), "{} of {} cases failed:\n  {}", failures.len(), cases.len(), failures.join("\n  "));
}

fn violations(op: Operation, body: &Value) -> Vec<Violation> {
    match ingest(op, &serde_json::to_vec(body).expect("JSON")) {
        Err(Rejection::Invalid(list)) => list,
        Ok(_) => panic!("accepted: {body}"),
        Err(Rejection::Unreadable(e)) => panic!("unreadable ({e}): {body}"),
        Err(Rejection::OverLimit(v)) => panic!("over a count limit ({v:?}): {body}"),
    }
}

#[test]
fn messages_quote_at_most_a_short_prefix_of_the_value() {
    let long = format!("2026-11-21T10:00:00{}", chars('Z', 5000));
    let a_body = a("").set("/startedAt", json!(long)).set("/endedAt", json!(long)).set("/agentId", json!(long)).body;
    let b_body = b("")
        .set("/call_id", json!(long))
        .set("/user_sentiment", json!(long))
        .set(&seg(0, "/role"), json!(long))
        .set("/recording_url", json!(long))
        .body;
    for (op, body, expected) in [(Operation::SendCallData, a_body, 3), (Operation::CreateCall, b_body, 5)] {
        let list = violations(op, &body);
        assert_eq!(list.len(), expected, "{list:?}");
        for v in &list {
            assert!(v.message.chars().count() < 100, "message too long at {}: {:?}", v.pointer, v.message);
            assert!(!v.message.contains(&long), "the whole value is echoed at {}", v.pointer);
            assert!(!v.message.contains(&long[..60]), "more than a short prefix is echoed at {}", v.pointer);
        }
    }
}

#[test]
fn deeply_nested_unknown_field_is_refused_without_crashing() {
    let depth = 100_000;
    let mut body = String::from("{\"call_id\": \"x\", \"deep\": ");
    body.push_str(&"[".repeat(depth));
    body.push_str(&"]".repeat(depth));
    body.push('}');
    // Refused at the nesting limit, before the parser descends (it used to be serde_json's
    // recursion limit, a 400).
    for op in [Operation::CreateCall, Operation::SendCallData] {
        match ingest(op, body.as_bytes()) {
            Err(Rejection::OverLimit(v)) => {
                assert_eq!(v.code, Code::Limit);
                assert!(v.pointer.starts_with("/deep/0/0/"), "{}", v.pointer);
            }
            other => panic!("{op:?}: expected the nesting limit, got {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn no_case_name_is_used_twice_across_both_operations() {
    let mut names = std::collections::HashSet::new();
    for c in create_call::all_cases().iter().chain(&send_call_data::cases()) {
        assert!(names.insert(c.name.clone()), "case name used twice: {}", c.name);
    }
}
