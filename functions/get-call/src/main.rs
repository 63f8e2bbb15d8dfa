//! get-call: one stored call, `GET /api/v1/public/call/{id}` and
//! `GET /api/v1/public/call?provider_call_id=…`. A thin entry point; the handler lives in
//! call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::GetCall).await
}
