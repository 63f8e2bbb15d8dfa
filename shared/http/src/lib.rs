//! call-ingest-http: the HTTP side of every function. One handler takes an
//! `http::Request` and answers an `http::Response`, so Lambda, the local API Gateway
//! (`devstack/gateway.py`) and the tests (feeding `events/*.json`) run the same code.
//! Errors become status codes here and nowhere else.
//!
//! A request passes [`lambda`] (the event) → [`dispatch`] (method, answer size) → [`gate`]
//! (credential → scope → workspace → rate) → its endpoint under [`endpoints`] → [`respond`].
//! [`problems`] is the one catalogue of every problem a client can see.
//!
//! May import call-ingest-store and call-ingest-core; nothing imports it but the functions.

mod credential;
pub mod cursor;
mod dispatch;
pub mod encoding;
mod endpoint;
mod endpoints;
mod gate;
mod lambda;
pub mod logging;
mod pii_model;
mod policy;
pub mod problems;
mod reading;
mod respond;

pub use call_ingest_core::call::Operation;
pub use call_ingest_store::calls::pending::PREFIX as PENDING_PREFIX;
pub use call_ingest_store::sqs;
pub use call_ingest_store::traces::BATCH_PREFIX as TRACE_BATCH_PREFIX;
pub use call_ingest_store::Backend;
pub use dispatch::handle;
pub use endpoint::Endpoint;
pub use lambda::{answer, serve, start};
