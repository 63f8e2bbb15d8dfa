//! create-call: operation B, `POST /api/v1/public/call`. A thin entry point; the handler
//! lives in call-ingest-http.

use call_ingest_http::{serve, start, Operation};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Operation::CreateCall).await
}
