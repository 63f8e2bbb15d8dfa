//! create-call: operation B, `POST /api/v1/public/call`. A thin entry point; the handler
//! lives in the shared crate.

use call_ingest::http::{serve, App};
use call_ingest::Operation;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(App::from_env().await?, Operation::CreateCall).await
}
