//! A hello-world `lambda_http` function, built with the same profile as ours, so that
//! `scripts/startup_time.py` can compare their start-up times with a baseline.

use lambda_http::{service_fn, Body, Error, Request, Response};

async fn hello(_: Request) -> Result<Response<Body>, Error> {
    Ok(Response::new(Body::from("hello")))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(hello)).await
}
