//! Operation B's request body (Create Call), as sent: every limit of the specification and
//! the contract is a garde rule here; the rules that span fields live in
//! [`crate::validate::checks`].

use serde_json::Value;

use super::lenient::Object;
use super::number::Number;
use super::rules;
use crate::record;

record! {
    /// The body of `POST /api/v1/public/call`.
    pub struct CreateCall {
        #[garde(required, length(chars, min = 1, max = 200))]
        "call_id" call_id: String,
        #[garde(required, length(chars, min = 1, max = 100))]
        "call_type" call_type: String,
        #[garde(required, length(min = 1), dive)]
        "transcript_with_tool_calls" transcript_with_tool_calls: Vec<Segment>,
        #[garde(required)]
        "start_timestamp" start_timestamp: Number,
        #[garde(required)]
        "end_timestamp" end_timestamp: Number,
        #[garde(required, length(chars, min = 1, max = 1024))]
        "recording_url" recording_url: String,
        #[garde(range(min = 0))]
        "agent_version" agent_version: i64,
        #[garde(skip)]
        "transcript" transcript: String,
        #[garde(range(min = 0))]
        "duration_ms" duration_ms: i64,
        #[garde(length(chars, max = 100))]
        "call_status" call_status: String,
        #[garde(length(chars, max = 100))]
        "disconnection_reason" disconnection_reason: String,
        #[garde(length(chars, max = 50))]
        "caller_phone_number" caller_phone_number: String,
        #[garde(skip)]
        "call_successful" call_successful: bool,
        #[garde(length(chars, max = 50), custom(rules::sentiment))]
        "user_sentiment" user_sentiment: String,
        #[garde(skip)]
        "in_voicemail" in_voicemail: bool,
        #[garde(skip)]
        "collected_dynamic_variables" collected_dynamic_variables: Object,
        #[garde(skip)]
        "call_cost" call_cost: Number,
        #[garde(skip)]
        "call_analysis" call_analysis: Object,
        #[garde(skip)]
        "metadata" metadata: Object,
        #[garde(skip)]
        "general_meta_data_raw" general_meta_data_raw: Object,
        #[garde(length(chars, max = 1024))]
        "recording_multi_channel_url" recording_multi_channel_url: String,
    }
}

record! {
    /// One item of the unified timeline: a message, a tool event or a node transition.
    pub struct Segment {
        #[garde(required, custom(rules::segment_role))]
        "role" role: String,
        #[garde(skip)]
        "text" text: String,
        // A word's fields are checked in `validate::checks` (garde skips each): diving
        // into thousands of words would only walk them.
        #[garde(skip)]
        "words" words: Vec<Word>,
        #[garde(custom(rules::millis))]
        "start_ms" start_ms: Number,
        #[garde(custom(rules::millis))]
        "end_ms" end_ms: Number,
        #[garde(custom(rules::millis))]
        "duration_ms" duration_ms: Number,
        #[garde(dive)]
        "node" node: Node,
        #[garde(dive)]
        "tool" tool: Tool,
        #[garde(dive)]
        "metadata" metadata: SegmentMetadata,
    }
}

record! {
    plain
    /// A word with its timing.
    pub struct Word {
        // Inline up to 24 bytes: no allocation for nearly every word.
        #[garde(skip)]
        "word" word: compact_str::CompactString,
        // Checked in `validate::checks`, within the words' budget of violations.
        #[garde(skip)]
        "start_ms" start_ms: Number,
        #[garde(skip)]
        "end_ms" end_ms: Number,
        #[garde(skip)]
        "confidence" confidence: Number,
    }
}

record! {
    /// A workflow node transition.
    pub struct Node {
        #[garde(skip)]
        "from" from: String,
        #[garde(skip)]
        "to" to: String,
        #[garde(skip)]
        "reason" reason: String,
    }
}

record! {
    /// A tool call or its result. `params` and `result` are free-form and kept as sent.
    pub struct Tool {
        #[garde(skip)]
        "name" name: String,
        #[garde(skip)]
        "request_id" request_id: String,
        #[garde(skip)]
        "params" params: Value,
        #[garde(skip)]
        "result" result: Value,
        #[garde(skip)]
        "is_error" is_error: bool,
        #[garde(skip)]
        "error" error: String,
        #[garde(custom(rules::millis))]
        "start_ms" start_ms: Number,
        #[garde(custom(rules::millis))]
        "end_ms" end_ms: Number,
    }
}

record! {
    /// Latency and quality figures of a segment.
    pub struct SegmentMetadata {
        #[garde(skip)]
        "e2e_latency" e2e_latency: Number,
        #[garde(skip)]
        "interrupted" interrupted: bool,
        #[garde(skip)]
        "llm_node_ttft" llm_node_ttft: Number,
        #[garde(skip)]
        "tts_node_ttfb" tts_node_ttfb: Number,
        #[garde(skip)]
        "transcript_confidence" transcript_confidence: Number,
        #[garde(skip)]
        "stt_node_ttfb" stt_node_ttfb: Number,
    }
}
