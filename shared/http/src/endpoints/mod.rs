//! One file per endpoint: each takes its request after the method check and answers it or
//! a problem. Operation A and B share `ingest`.

pub(crate) mod call_trace;
pub(crate) mod erase_call;
pub(crate) mod event_endpoints;
pub(crate) mod get_call;
pub(crate) mod ingest;
pub(crate) mod list_calls;
pub(crate) mod me;
pub(crate) mod otel;
pub(crate) mod raw;
pub(crate) mod revisions;
pub(crate) mod webhook;
