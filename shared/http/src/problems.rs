//! The catalogue of every problem the HTTP layer answers: its status, `type` slug, title and
//! the endpoints that can answer it ([`CATALOGUE`]), and one constructor for each. Endpoints
//! build their problems here and nowhere else; a unit test checks that every kind declared
//! here is in the catalogue, and the openapi test walks it. Validation problems (400 `invalid-json`, 422 `validation`) are
//! built by call-ingest-core from the body and are listed here too.

use call_ingest_core::api::Problem;
use call_ingest_core::call::Operation;
use call_ingest_store::calls::StoreError;
use call_ingest_store::directory::credentials::Denied;

use crate::Endpoint;

/// One kind of problem: what a client sees, and which endpoints can answer it.
#[derive(Debug)]
pub struct ProblemKind {
    pub status: u16,
    pub slug: &'static str,
    pub title: &'static str,
    /// Whether `endpoint` can answer this problem.
    pub answered_by: fn(Endpoint) -> bool,
}

impl ProblemKind {
    fn with(&'static self, detail: impl Into<String>) -> Problem {
        Problem::new(self.status, self.slug, self.title, detail)
    }
}

fn every(_: Endpoint) -> bool {
    true
}

/// The endpoints that take a call's body: the operations and the webhooks.
fn ingest(e: Endpoint) -> bool {
    matches!(e, Endpoint::Ingest(_) | Endpoint::Webhook)
}

/// The endpoints that read a JSON body: those that take a call's, and the event
/// endpoints' (making one, rotating its secret).
fn bodies(e: Endpoint) -> bool {
    ingest(e) || e == Endpoint::ManageEndpoints
}

fn readers(e: Endpoint) -> bool {
    matches!(e, Endpoint::GetCall | Endpoint::CallRevisions | Endpoint::GetRawCall | Endpoint::CallTrace)
}

/// Every endpoint whose answer goes through `respond::encoded` (gzip, `Range`, 406).
pub(crate) fn encoded(e: Endpoint) -> bool {
    readers(e) || e == Endpoint::ListCalls
}

/// Every endpoint that names a workspace in its request: all but operation A, the
/// webhooks (a hook names its workspace) and `me` (which names them).
fn named_workspace(e: Endpoint) -> bool {
    !matches!(e, Endpoint::Ingest(Operation::SendCallData) | Endpoint::Webhook | Endpoint::Me)
}

/// Every endpoint that counts against a workspace's budget, takes a query or a body: all
/// but `me`, which only reads its credential.
fn counted(e: Endpoint) -> bool {
    e != Endpoint::Me
}

/// Every endpoint that finds a call by its `{id}`.
fn by_id(e: Endpoint) -> bool {
    readers(e) || e == Endpoint::EraseCall
}

pub const UNAUTHORIZED: ProblemKind =
    ProblemKind { status: 401, slug: "unauthorized", title: "Unauthorized", answered_by: every };
pub const FORBIDDEN: ProblemKind =
    ProblemKind { status: 403, slug: "forbidden", title: "Forbidden", answered_by: named_workspace };
pub const INSUFFICIENT_SCOPE: ProblemKind = ProblemKind {
    status: 403,
    slug: "insufficient-scope",
    title: "Forbidden",
    answered_by: |e| e != Endpoint::Webhook && e != Endpoint::Me,
};
/// Operation A's `agentId`, operation B's and the listing's `agent_remote_identifier`.
pub const AGENT_NOT_FOUND: ProblemKind = ProblemKind {
    status: 404,
    slug: "agent-not-found",
    title: "Agent not found",
    answered_by: |e| matches!(e, Endpoint::Ingest(_)) || e == Endpoint::ListCalls,
};
pub const CALL_NOT_FOUND: ProblemKind =
    ProblemKind { status: 404, slug: "call-not-found", title: "Call not found", answered_by: by_id };
/// An event endpoint's `{endpoint_id}` that names none of the workspace's.
pub const ENDPOINT_NOT_FOUND: ProblemKind = ProblemKind {
    status: 404,
    slug: "endpoint-not-found",
    title: "Endpoint not found",
    answered_by: |e| e == Endpoint::ManageEndpoints,
};
/// Every function but erase-call, which API Gateway sends DELETE only (its path's other
/// methods go to get-call).
pub const METHOD_NOT_ALLOWED: ProblemKind = ProblemKind {
    status: 405,
    slug: "method-not-allowed",
    title: "Method not allowed",
    answered_by: |e| e != Endpoint::EraseCall,
};
/// The raw reader, for a body removed past its workspace's `raw_retention_days` (the call
/// still reads).
pub const RAW_GONE: ProblemKind = ProblemKind {
    status: 410,
    slug: "raw-gone",
    title: "Raw body removed",
    answered_by: |e| e == Endpoint::GetRawCall,
};
pub const TOO_LARGE_TO_ANSWER: ProblemKind =
    ProblemKind { status: 406, slug: "too-large-to-answer", title: "Answer too large", answered_by: encoded };
pub const PAYLOAD_TOO_LARGE: ProblemKind =
    ProblemKind { status: 413, slug: "payload-too-large", title: "Request body too large", answered_by: bodies };
pub const UNSUPPORTED_MEDIA_TYPE: ProblemKind =
    ProblemKind { status: 415, slug: "unsupported-media-type", title: "Unsupported media type", answered_by: ingest };
pub const UNSUPPORTED_ENCODING: ProblemKind = ProblemKind {
    status: 415,
    slug: "unsupported-encoding",
    title: "Unsupported content encoding",
    answered_by: ingest,
};
pub const RANGE_NOT_SATISFIABLE: ProblemKind =
    ProblemKind { status: 416, slug: "range-not-satisfiable", title: "Range not satisfiable", answered_by: encoded };
pub const TOO_MANY_REQUESTS: ProblemKind = ProblemKind {
    status: 429,
    slug: "too-many-requests",
    title: "Too many requests",
    // A webhook over its workspace's rate is kept as pending: a provider does not retry a 429.
    answered_by: |e| counted(e) && e != Endpoint::Webhook,
};
pub const BAD_ENCODING: ProblemKind =
    ProblemKind { status: 400, slug: "bad-encoding", title: "Body cannot be decompressed", answered_by: ingest };
pub const INVALID_CURSOR: ProblemKind = ProblemKind {
    status: 400,
    slug: "invalid-cursor",
    title: "Invalid cursor",
    answered_by: |e| e == Endpoint::ListCalls,
};
/// An event lambda_http cannot read or turn into a request; the local gateway never sends
/// one, so no openapi example shows it, but every function can answer it.
pub const BAD_REQUEST: ProblemKind =
    ProblemKind { status: 400, slug: "bad-request", title: "Request cannot be read", answered_by: every };
/// Built by call-ingest-core (`Problem::unreadable`).
pub const INVALID_JSON: ProblemKind =
    ProblemKind { status: 400, slug: "invalid-json", title: "Request body is not a JSON object", answered_by: bodies };
/// Built by call-ingest-core (`Problem::invalid`, `Problem::over_limit`) for bodies, and
/// for query parameters by every endpoint.
pub const VALIDATION: ProblemKind =
    ProblemKind { status: 422, slug: "validation", title: "Request body is invalid", answered_by: counted };
pub const INTERNAL: ProblemKind =
    ProblemKind { status: 500, slug: "internal", title: "Internal error", answered_by: every };
pub const UNAVAILABLE: ProblemKind =
    ProblemKind { status: 503, slug: "unavailable", title: "Service unavailable", answered_by: every };

/// Every problem the API answers.
pub const CATALOGUE: &[&ProblemKind] = &[
    &UNAUTHORIZED,
    &FORBIDDEN,
    &INSUFFICIENT_SCOPE,
    &AGENT_NOT_FOUND,
    &CALL_NOT_FOUND,
    &ENDPOINT_NOT_FOUND,
    &METHOD_NOT_ALLOWED,
    &RAW_GONE,
    &TOO_LARGE_TO_ANSWER,
    &PAYLOAD_TOO_LARGE,
    &UNSUPPORTED_MEDIA_TYPE,
    &UNSUPPORTED_ENCODING,
    &RANGE_NOT_SATISFIABLE,
    &TOO_MANY_REQUESTS,
    &BAD_ENCODING,
    &INVALID_CURSOR,
    &BAD_REQUEST,
    &INVALID_JSON,
    &VALIDATION,
    &INTERNAL,
    &UNAVAILABLE,
];

/// What a credential check refused, as the contract answers it.
/// 401 for a webhook: no such hook, or its signature refused (`detail` says which).
pub(crate) fn unauthorized(detail: &str) -> Problem {
    UNAUTHORIZED.with(detail)
}

pub(crate) fn denied(d: Denied) -> Problem {
    match d {
        Denied::Unauthorized => UNAUTHORIZED.with("send a valid credential: Authorization: Bearer <API key>"),
        Denied::Forbidden => FORBIDDEN.with("the credential is not valid for this workspace"),
        Denied::AgentNotFound => AGENT_NOT_FOUND.with("no such agent in this workspace"),
        Denied::MissingScope(scope) => INSUFFICIENT_SCOPE
            .with(format!("the API key lacks the `{scope}` scope; make one with `callctl key create --scope {scope}`")),
    }
}

/// A failure reading the credential or the agent: no call was being stored yet.
pub(crate) fn directory_problem(e: StoreError) -> Problem {
    storage_problem(e, "the credential or agent could not be read")
}

/// 503 for what a retry may fix, else 500 whose detail says what `failed`.
pub(crate) fn storage_problem(e: StoreError, failed: &str) -> Problem {
    match e {
        StoreError::Unavailable(reason) => {
            tracing::warn!(%reason, "storage unavailable");
            UNAVAILABLE.with("storage is busy or unreachable; retry the same request")
        }
        StoreError::Internal(reason) => {
            tracing::error!(%reason, "storage failed");
            INTERNAL.with(format!("{failed}; quote the request id when reporting this"))
        }
    }
}

/// An answer that would not fit Lambda's response, caught at the last step.
pub(crate) fn answer_too_large() -> Problem {
    INTERNAL.with("the answer was too large to send")
}

/// 405 on a path that accepts `allow` (its methods, as `Allow` lists them).
pub(crate) fn method_not_allowed(allow: &str) -> Problem {
    METHOD_NOT_ALLOWED.with(format!("this endpoint accepts {allow} only"))
}

pub(crate) fn endpoint_not_found() -> Problem {
    ENDPOINT_NOT_FOUND.with("no such endpoint in this workspace")
}

/// 413: an endpoint's request body over `limit` bytes.
pub(crate) fn endpoint_body_too_large(limit: usize) -> Problem {
    PAYLOAD_TOO_LARGE.with(format!("the body must be at most {limit} bytes"))
}

/// 400: an endpoint's request body that is not a JSON object (`why`).
pub(crate) fn not_a_json_object(why: &str) -> Problem {
    INVALID_JSON.with(format!("the body must be a JSON object: {why}"))
}

pub(crate) fn call_not_found() -> Problem {
    CALL_NOT_FOUND.with("no such call in this workspace")
}

pub(crate) fn raw_gone(removed_at: u64) -> Problem {
    RAW_GONE.with(format!(
        "this revision's raw body was removed at {removed_at} (epoch ms), past the workspace's raw_retention_days; \
         the call itself still reads"
    ))
}

pub(crate) fn too_large_to_answer(detail: String) -> Problem {
    TOO_LARGE_TO_ANSWER.with(detail)
}

pub(crate) fn range_not_satisfiable(total: usize) -> Problem {
    RANGE_NOT_SATISFIABLE.with(format!("the answer is {total} bytes; ask for a range that starts before its end"))
}

/// A body larger than `limit` bytes as sent.
pub(crate) fn body_too_large(limit: usize) -> Problem {
    PAYLOAD_TOO_LARGE.with(format!("the body must be at most {limit} bytes as sent; send larger calls compressed"))
}

/// A compressed body that expands past `cap` bytes.
pub(crate) fn decompressed_too_large(cap: usize) -> Problem {
    PAYLOAD_TOO_LARGE.with(format!("the decompressed body must be at most {cap} bytes"))
}

pub(crate) fn not_json() -> Problem {
    UNSUPPORTED_MEDIA_TYPE.with("the body must be application/json")
}

/// `what`: the Content-Encoding refused; `supported`: the encodings taken.
pub(crate) fn unsupported_encoding(what: &str, supported: &str) -> Problem {
    UNSUPPORTED_ENCODING
        .with(format!("Content-Encoding {what} is not supported: send the body as is, or with one of {supported}"))
}

/// `encoding`: the name of the encoding whose data is corrupt or truncated.
pub(crate) fn bad_encoding(encoding: &str) -> Problem {
    BAD_ENCODING.with(format!("the body is not valid {encoding} data (corrupt or truncated)"))
}

pub(crate) fn too_many_requests(retry_after_secs: u32) -> Problem {
    TOO_MANY_REQUESTS
        .with(format!("this workspace is over its limit of requests per second; retry after {retry_after_secs} s"))
}

pub(crate) fn invalid_cursor() -> Problem {
    INVALID_CURSOR.with(
        "the cursor is not one this listing issued: pass `next_cursor` as it was given, with the same \
         workspace_id, agent_remote_identifier, started_from and started_before",
    )
}

/// 413: an OTLP export holds more than `limit` elements (spans and attributes, or traces).
pub(crate) fn too_many_elements(limit: usize) -> Problem {
    PAYLOAD_TOO_LARGE.with(format!(
        "an export may hold at most {limit} spans, attributes and objects (traces: 256): send smaller batches"
    ))
}

/// 400 saying what was wrong with the request.
pub(crate) fn bad_request(detail: &str) -> Problem {
    BAD_REQUEST.with(detail.to_owned())
}

/// 415: the body must be of `types`.
pub(crate) fn unsupported_type(types: &str) -> Problem {
    UNSUPPORTED_MEDIA_TYPE.with(format!("the body must be {types}"))
}

pub(crate) fn unreadable_event() -> Problem {
    BAD_REQUEST.with(
        "the request cannot be read (a header value with control characters, or a malformed query string or Host?)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_declared_here_is_in_the_catalogue_once() {
        let declared = include_str!("problems.rs")
            .lines()
            .filter(|line| line.starts_with("pub const ") && line.contains(": ProblemKind"))
            .count();
        assert_eq!(declared, CATALOGUE.len(), "a kind of problem is missing from CATALOGUE (or listed twice)");
        let slugs: std::collections::BTreeSet<_> = CATALOGUE.iter().map(|k| k.slug).collect();
        assert_eq!(slugs.len(), CATALOGUE.len(), "two kinds share a slug");
    }
}
