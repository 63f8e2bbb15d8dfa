//! call-ingest-http's integration tests: requests through the handler, against the local
//! DynamoDB (`testkit`). One binary, a module per subject. `memory_peak` and
//! `anonymous_cost` (a global allocator) and `logging` (tracing's process-wide caches) are
//! binaries of their own.

mod accepted;
mod compressed_bodies;
mod credentials;
mod durable_path;
mod events;
mod get_call;
mod list_revisions_raw_erase;
mod me;
mod openapi;
mod rate_limits;
#[path = "../requests/mod.rs"]
mod requests;
mod retention;
mod traces;
