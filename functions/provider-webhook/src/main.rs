//! provider-webhook: providers' own end-of-call webhooks, `POST /v1/webhooks/{provider}/{hook_id}`
//! (Vapi, Retell, ElevenLabs). A thin entry point; the handler lives in call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::Webhook).await
}
