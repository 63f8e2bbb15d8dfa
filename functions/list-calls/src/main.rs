//! list-calls: a page of a workspace's calls, `GET /api/v1/public/calls`. A thin entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::ListCalls).await
}
