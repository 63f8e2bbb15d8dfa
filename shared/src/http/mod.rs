//! The HTTP side of every function: one handler that takes an `http::Request` and answers
//! an `http::Response`, so Lambda, the local API Gateway (`devstack/gateway.py`) and the tests (feeding
//! `events/*.json`) run the same code. Errors become status codes here and nowhere else.

mod app;
pub mod cursor;
pub mod encoding;
mod endpoint;
mod erase_call;
mod get_call;
mod handler;
mod lambda;
mod list_calls;
pub mod logging;
mod raw;
mod reading;
mod respond;
mod revisions;

pub use app::App;
pub use endpoint::Endpoint;
pub use handler::handle;
pub use lambda::{answer, serve};
