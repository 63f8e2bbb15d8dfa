//! get-call-raw: a call's body as received, `GET /api/v1/public/call/{id}/raw`. A thin entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::GetRawCall).await
}
