//! list-calls: a page of a workspace's calls, `GET /api/v1/public/calls`. A thin entry point; the handler lives in the shared crate.

use call_ingest::http::{serve, App, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(App::from_env().await?, Endpoint::ListCalls).await
}
