//! call-ingest-store: everything kept in DynamoDB. The Calls table ([`calls`]: stored
//! calls, revisions, listing, erasure, rewriting), the Directory table ([`directory`]: workspaces,
//! agents, credentials, rate limits, with [`directory::admin`] for `callctl`), the tables'
//! definitions ([`calls::tables`]), the walks that bring stored calls under a changed data
//! policy ([`rewrites`]), the configuration and client ([`config`]), and what an
//! instance holds of them ([`Backend`]).
//!
//! May import call-ingest-core; never the HTTP layer (lambda_http, status codes): the
//! functions' HTTP crate and `callctl` both build on it.

pub mod backend;
pub mod calls;
pub mod config;
pub mod day;
pub mod directory;
pub mod patience;
pub mod rewrites;
pub mod sqs;
pub mod traces;

pub use backend::Backend;
