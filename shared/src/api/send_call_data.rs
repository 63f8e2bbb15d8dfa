//! Operation A's request body (Send Call Data), as sent.

use super::number::Number;
use crate::record;
use crate::validate::rules;

record! {
    /// The body of `POST /v1/calls`.
    pub struct SendCallData {
        #[garde(required, length(chars, min = 1, max = 200))]
        "agentId" agent_id: String,
        #[garde(required, length(chars, min = 1, max = 200))]
        "callId" call_id: String,
        #[garde(required, dive)]
        "transcript" transcript: Vec<TranscriptItem>,
        #[garde(skip)]
        "startedAt" started_at: String,
        #[garde(skip)]
        "endedAt" ended_at: String,
        #[garde(dive)]
        "metadata" metadata: SimpleMetadata,
    }
}

record! {
    /// One message of operation A's transcript.
    pub struct TranscriptItem {
        #[garde(required, length(min = 1))]
        "role" role: String,
        #[garde(required)]
        "content" content: String,
        #[garde(skip)]
        "timestamp" timestamp: String,
    }
}

record! {
    /// Operation A's small metadata object.
    pub struct SimpleMetadata {
        #[garde(custom(rules::non_negative))]
        "durationSeconds" duration_seconds: Number,
        #[garde(skip)]
        "callDirection" call_direction: String,
        #[garde(skip)]
        "callerPhone" caller_phone: String,
        #[garde(skip)]
        "outcome" outcome: String,
    }
}
