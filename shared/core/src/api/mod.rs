//! The wire format: request bodies of both operations, success bodies, and the error body.
//!
//! Request types are read leniently (see [`lenient`]): a value of the wrong JSON type does
//! not abort parsing but is recorded, so validation can report every problem at once.

pub mod accept_encoding;
pub mod counted;
pub mod counts;
pub mod create_call;
pub mod free;
mod json_number;
pub mod lenient;
pub mod messages;
pub mod number;
pub mod plain_word;
pub mod pointer;
pub mod problem;
pub mod reader;
pub mod responses;
pub mod rules;
pub mod send_call_data;

pub use create_call::CreateCall;
pub use number::Number;
pub use problem::{BodyError, Code, Problem, Violation};
pub use send_call_data::SendCallData;
