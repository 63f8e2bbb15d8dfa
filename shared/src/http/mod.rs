//! The HTTP side of both functions: one handler that takes an `http::Request` and answers
//! an `http::Response`, so Lambda, `cargo lambda watch` and the tests (feeding
//! `events/*.json`) run the same code. Errors become status codes here and nowhere else.

mod app;
pub mod encoding;
mod handler;
pub mod logging;
mod respond;

pub use app::App;
pub use handler::handle;

use std::convert::Infallible;

use lambda_http::{service_fn, Request};

use crate::call::Operation;

/// Runs `operation`'s function on the Lambda runtime until the runtime stops it.
pub async fn serve(app: App, operation: Operation) -> Result<(), lambda_http::Error> {
    let app = &app;
    lambda_http::run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(handle(app, operation, request).await)
    }))
    .await
}
