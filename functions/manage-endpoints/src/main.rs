//! manage-endpoints: a workspace's event endpoints over the API, `/api/v1/public/endpoints`
//! and `…/{endpoint_id}` (`/disable`, `/enable`, `/rotate`), for the `manage` scope. A thin
//! entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::ManageEndpoints).await
}
