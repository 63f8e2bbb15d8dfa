//! call-revisions: a call's revisions, `GET /api/v1/public/call/{id}/revisions` and `…/revisions/{n}`. A thin entry point; the handler lives in the shared crate.

use call_ingest::http::{serve, App, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(App::from_env().await?, Endpoint::CallRevisions).await
}
