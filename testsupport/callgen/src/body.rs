//! The two request bodies, built like gen_call.py's `create_call` and `send_call_data`.

use crate::json::{obj, J};
use crate::rng::Rng;
use crate::timeline::{round, timeline};

/// Operation B (create-call) body.
pub(crate) fn create_call(rng: &mut Rng, limit_ms: Option<f64>, target: Option<usize>, call_id: &str) -> J {
    let (segs, end_ms) = timeline(rng, limit_ms, target);
    let start = 1_763_700_000 + rng.randint(0, 5_000_000); // seconds, Nov 2025 onwards
    obj! {
        "call_id": call_id,
        "call_type": rng.choice(&["phone_call", "web_call", "sip_call"]),
        "transcript_with_tool_calls": segs,
        "start_timestamp": start * 1000,
        "end_timestamp": start * 1000 + end_ms + 500,
        "recording_url": format!("https://recordings.example.com/{call_id}.wav"),
        "agent_version": rng.randint(0, 40),
        "call_status": "call_ended",
        "disconnection_reason": rng.choice(&["user_hangup", "agent_hangup"]),
        "caller_phone_number": format!("+1415555{:04}", rng.randint(0, 9999)),
        "call_successful": rng.random() < 0.8,
        "user_sentiment": rng.choice(&["positive", "neutral", "negative", "unknown"]),
        "in_voicemail": false,
        "collected_dynamic_variables": obj! { "customer_name": "Alex", "plan": "pro" },
        "call_cost": round(rng.uniform(2.0, 90.0), 2),
        "call_analysis": obj! {
            "call_summary": "Caller asked about an order.",
            "custom_analysis_data": obj! { "intent": "order_status" },
        },
        "metadata": obj! {
            "ai_models": obj! {
                "asr_model": "nova-3", "llm_model": "gpt-4.1-mini", "tts_model": "sonic-2",
            },
            "usage_token": obj! {
                "stt_duration_seconds": end_ms as f64 / 1000.0,
                "llm_token": rng.randint(2000, 90000),
                "tts_characters_count": rng.randint(500, 40000),
            },
        },
        "general_meta_data_raw": obj! { "campaign": "winter", "region": "us-west" },
        "recording_multi_channel_url": format!("https://recordings.example.com/{call_id}-mc.wav"),
    }
}

/// Operation A (send-call-data) body: only the spoken turns, with wall-clock stamps.
pub(crate) fn send_call_data(rng: &mut Rng, limit_ms: f64, call_id: &str) -> J {
    let (segs, end_ms) = timeline(rng, Some(limit_ms), None);
    let mut items = Vec::new();
    for s in segs {
        let (Some(J::Str(role)), Some(J::Str(text)), Some(J::Int(ms))) =
            (s.get("role"), s.get("text"), s.get("start_ms"))
        else {
            continue;
        };
        if role == "agent" || role == "user" {
            let timestamp = format!("2026-11-21T10:{:02}:{:02}Z", (ms / 60_000) % 60, (ms / 1000) % 60);
            items.push(obj! { "role": role.as_str(), "content": text.as_str(), "timestamp": timestamp });
        }
    }
    obj! {
        "agentId": "agt_demo", "callId": call_id, "transcript": items,
        "startedAt": "2026-11-21T10:00:00Z", "endedAt": "2026-11-21T11:00:00Z",
        "metadata": obj! {
            "durationSeconds": end_ms as f64 / 1000.0, "callDirection": "inbound",
            "callerPhone": "+14155550123", "outcome": "resolved",
        },
    }
}
