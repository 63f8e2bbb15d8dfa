//! Success bodies of the two operations.

use serde::Serialize;

/// Operation B's answer: 201 with `is_new: true`, or 200 with `is_new: false`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateCallResponse<'a> {
    pub id: u64,
    pub provider_call_id: &'a str,
    pub is_new: bool,
}

/// Operation A's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendCallDataResponse<'a> {
    pub success: bool,
    pub call_id: &'a str,
    /// The internal id as a decimal string; `null` when the call was accepted (202) and is
    /// committed later.
    pub service_call_id: Option<String>,
    pub message: &'static str,
}

/// Operation B's answer to a call accepted and committed later (202).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AcceptedResponse<'a> {
    pub provider_call_id: &'a str,
    /// Always `"accepted"`.
    pub status: &'static str,
}
