//! otel-traces: OpenTelemetry's OTLP/HTTP receiver, `POST /otel/v1/traces` (and `/logs`,
//! `/metrics`, answered as not kept). A thin entry point; the handler lives in
//! call-ingest-http.

use call_ingest_http::{serve, start, Endpoint};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    serve(start().await?, Endpoint::Otel).await
}
