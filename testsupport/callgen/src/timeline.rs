//! The conversation timeline shared by both operations: alternating agent/user
//! utterances with word timings, occasional tool calls and node transitions.

use crate::json::{obj, J};
use crate::rng::Rng;

/// Vocabulary, split on whitespace (as in gen_call.py).
const WORDS: &str = "yes no okay sure thanks hello hi so well I you we they it that this the a an \
    to of and in on for with about my your our order account number card payment \
    appointment tomorrow today monday friday morning afternoon evening please could \
    would can help check change cancel book confirm address email phone name date \
    time delivery refund balance plan upgrade issue problem ticket support agent \
    minute second just actually really great perfect sorry understand let me see \
    one two three four five six seven eight nine zero";
const NODES: [&str; 9] = [
    "greeting",
    "identify_caller",
    "verify_identity",
    "collect_intent",
    "lookup_account",
    "resolve_issue",
    "schedule",
    "confirm",
    "wrap_up",
];
const TOOLS: [&str; 7] = [
    "lookup_customer",
    "get_order_status",
    "book_appointment",
    "check_availability",
    "issue_refund",
    "send_sms",
    "transfer_call",
];

/// Python's `round(x, n)` for the magnitudes used here.
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

/// `n_words` timed words from `start_ms`: (text, words, end time).
fn utterance(rng: &mut Rng, vocab: &[&str], start_ms: u64, n_words: u64) -> (String, J, u64) {
    let (mut t, mut said, mut words) = (start_ms, Vec::new(), Vec::new());
    for _ in 0..n_words {
        let word = rng.choice(vocab);
        let dur = rng.randint(120, 420);
        let confidence = round(rng.uniform(0.72, 0.999), 3);
        words.push(obj! { "word": word, "start_ms": t, "end_ms": t + dur, "confidence": confidence });
        said.push(word);
        t += dur + rng.randint(0, 90);
    }
    // Python's str.capitalize(): first letter upper, the rest lower.
    let lower = said.join(" ").to_lowercase();
    let mut chars = lower.chars();
    let mut text: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    text.extend(chars);
    text.push('.');
    (text, J::Arr(words), t)
}

fn segment_metadata(rng: &mut Rng, role: &str) -> J {
    if role == "agent" {
        obj! {
            "e2e_latency": round(rng.uniform(450.0, 1800.0), 1),
            "interrupted": rng.random() < 0.08,
            "llm_node_ttft": round(rng.uniform(180.0, 900.0), 1),
            "tts_node_ttfb": round(rng.uniform(60.0, 320.0), 1),
        }
    } else {
        obj! {
            "transcript_confidence": round(rng.uniform(0.7, 0.99), 3),
            "stt_node_ttfb": round(rng.uniform(90.0, 420.0), 1),
        }
    }
}

/// Segments until `limit_ms` of call time or about `target_bytes` of JSON (whichever
/// limits are given), and the final time in ms.
pub(crate) fn timeline(rng: &mut Rng, limit_ms: Option<f64>, target: Option<usize>) -> (Vec<J>, u64) {
    let vocab: Vec<&str> = WORDS.split_whitespace().collect();
    let (mut segs, mut t, mut node, mut role, mut approx) = (Vec::new(), 0, 0, "agent", 0);
    while !(limit_ms.is_some_and(|l| t as f64 >= l) || target.is_some_and(|b| approx >= b)) {
        let n_words = rng.randint(3, 28);
        let (text, words, end) = utterance(rng, &vocab, t, n_words);
        let metadata = segment_metadata(rng, role);
        segs.push(obj! {
            "role": role, "text": text, "start_ms": t, "end_ms": end,
            "words": words, "metadata": metadata,
        });
        approx += 77 * n_words as usize + 170;
        t = end + rng.randint(200, 1400);
        if role == "agent" && rng.random() < 0.12 {
            let name = rng.choice(&TOOLS);
            let rid = format!("req_{:012x}", rng.bits(48));
            let customer_id = format!("cus_{}", rng.randint(1000, 99999));
            let date = format!("2026-11-{:02}", rng.randint(1, 28));
            let params = obj! { "customer_id": customer_id, "date": date };
            let tool_end = t + rng.randint(80, 2500);
            segs.push(obj! {
                "role": "agent_function", "text": "", "start_ms": t,
                "tool": obj! {
                    "name": name, "request_id": rid.as_str(), "params": params, "start_ms": t,
                },
                "metadata": obj! {},
            });
            let failed = rng.random() < 0.1;
            let slots: Vec<J> = (9..9 + rng.randint(0, 6)).map(|h| format!("{h}:00").into()).collect();
            let status = if failed { "error" } else { "ok" };
            let result = obj! { "status": status, "data": obj! { "slots": slots } };
            segs.push(obj! {
                "role": "agent_result", "text": "", "start_ms": tool_end,
                "tool": obj! {
                    "name": name, "request_id": rid, "result": result, "is_error": failed,
                    "error": failed.then_some("upstream timeout"),
                    "start_ms": t, "end_ms": tool_end,
                },
                "metadata": obj! {},
            });
            approx += 500;
            t = tool_end + rng.randint(100, 600);
        }
        if rng.random() < 0.06 {
            // Any node but the current one.
            let mut next = rng.randint(0, NODES.len() as u64 - 2) as usize;
            next += usize::from(next >= node);
            segs.push(obj! {
                "role": "node_transition", "text": "", "start_ms": t,
                "node": obj! { "from": NODES[node], "to": NODES[next], "reason": "condition met" },
                "metadata": obj! {},
            });
            node = next;
            approx += 150;
        }
        role = if role == "agent" { "user" } else { "agent" };
    }
    (segs, t)
}
