//! call-trace: a call's spans and per-turn table, `GET /api/v1/public/call/{id}/trace`. A
//! thin entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::CallTrace).await
}
