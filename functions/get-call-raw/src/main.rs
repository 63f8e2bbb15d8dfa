//! get-call-raw: a call's body as received, `GET /api/v1/public/call/{id}/raw`. A thin entry point; the handler lives in the shared crate.

use call_ingest::http::{serve, App, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(App::from_env().await?, Endpoint::GetRawCall).await
}
