//! erase-call: erasing a call, `DELETE /api/v1/public/call/{id}`. A thin entry point; the handler lives in the shared crate.

use call_ingest::http::{serve, App, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(App::from_env().await?, Endpoint::EraseCall).await
}
