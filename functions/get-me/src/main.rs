//! get-me: who the credential is, `GET /api/v1/public/me` (its workspaces and scopes; for
//! an API key, its public id). A thin entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::Me).await
}
