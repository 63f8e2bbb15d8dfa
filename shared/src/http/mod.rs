//! The HTTP side of every function: one handler that takes an `http::Request` and answers
//! an `http::Response`, so Lambda, the local API Gateway (`devstack/gateway.py`) and the tests (feeding
//! `events/*.json`) run the same code. Errors become status codes here and nowhere else.

mod app;
pub mod cursor;
mod dispatch;
pub mod encoding;
mod endpoint;
mod erase_call;
mod gate;
mod get_call;
mod ingest;
mod lambda;
mod list_calls;
pub mod logging;
mod problems;
mod raw;
mod reading;
mod respond;
mod revisions;

pub use app::App;
pub use dispatch::handle;
pub use endpoint::Endpoint;
pub use lambda::{answer, serve};
