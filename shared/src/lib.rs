//! call-ingest's shared library: everything the functions and `callctl` have in common.
//!
//! A request flows one way: credential ([`directory`]) → parse ([`api`]) → validate
//! ([`validate`]) → normalise ([`normalize`]) into a [`call::CallDocument`] → store
//! ([`store`]) → response ([`http`]). Each step is a plain function that can be tested
//! without the next. Without the default `aws` feature the crate is only the pure
//! parse / validate / normalise core, which is what the fuzzers build.

pub mod api;
pub mod call;
pub mod normalize;
pub mod validate;

#[cfg(feature = "aws")]
pub mod config;
#[cfg(feature = "aws")]
pub mod directory;
#[cfg(feature = "aws")]
pub mod http;
#[cfg(feature = "aws")]
pub mod store;

pub use call::{CallDocument, Operation};
