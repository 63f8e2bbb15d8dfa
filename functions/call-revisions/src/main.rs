//! call-revisions: a call's revisions, `GET /api/v1/public/call/{id}/revisions` and `…/revisions/{n}`. A thin entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::CallRevisions).await
}
