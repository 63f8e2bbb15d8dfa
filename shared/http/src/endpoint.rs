//! The endpoints, one per function: what each serves, who may call it, and how its
//! problems look.

use lambda_http::http::Method;

use call_ingest_core::call::Operation;
use call_ingest_store::directory::scopes::Scope;
use call_ingest_store::directory::Sessions;

/// One endpoint of the API, served by one function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/calls` or `POST /api/v1/public/call`: storing a call.
    Ingest(Operation),
    /// `GET /api/v1/public/call/{id}` and `GET /api/v1/public/call?provider_call_id=…`:
    /// one call.
    GetCall,
    /// `GET /api/v1/public/calls`: a page of a workspace's calls.
    ListCalls,
    /// `GET /api/v1/public/call/{id}/revisions` and `…/revisions/{n}`: a call's revisions.
    CallRevisions,
    /// `GET /api/v1/public/call/{id}/raw`: a body as it was received.
    GetRawCall,
    /// `DELETE /api/v1/public/call/{id}`: erasing a call.
    EraseCall,
    /// `POST /v1/webhooks/{provider}/{hook_id}`: a provider's own end-of-call webhook.
    Webhook,
    /// `GET /api/v1/public/me`: who the credential is, its workspaces and scopes.
    Me,
    /// `POST /otel/v1/traces` (and `/logs`, `/metrics`): OpenTelemetry's OTLP/HTTP exports.
    Otel,
    /// `GET /api/v1/public/call/{id}/trace`: a call's spans and its per-turn table.
    CallTrace,
    /// `/api/v1/public/endpoints` and `…/{endpoint_id}` (`/disable`, `/enable`, `/rotate`):
    /// the workspace's event endpoints, each path with its own methods.
    ManageEndpoints,
}

impl From<Operation> for Endpoint {
    fn from(operation: Operation) -> Endpoint {
        match operation {
            Operation::ProviderWebhook(_) => Endpoint::Webhook,
            operation => Endpoint::Ingest(operation),
        }
    }
}

impl Endpoint {
    /// Its name in logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Ingest(operation) => operation.as_str(),
            Endpoint::GetCall => "get_call",
            Endpoint::ListCalls => "list_calls",
            Endpoint::CallRevisions => "call_revisions",
            Endpoint::GetRawCall => "get_raw_call",
            Endpoint::EraseCall => "erase_call",
            Endpoint::Webhook => "provider_webhook",
            Endpoint::Me => "me",
            Endpoint::Otel => "otel",
            Endpoint::CallTrace => "call_trace",
            Endpoint::ManageEndpoints => "manage_endpoints",
        }
    }

    /// The method the endpoint serves, any other being 405; `None` for one whose paths
    /// each have their own (it answers their 405s itself).
    pub fn method(self) -> Option<Method> {
        match self {
            Endpoint::Ingest(_) | Endpoint::Webhook | Endpoint::Otel => Some(Method::POST),
            Endpoint::EraseCall => Some(Method::DELETE),
            Endpoint::GetCall
            | Endpoint::ListCalls
            | Endpoint::CallRevisions
            | Endpoint::GetRawCall
            | Endpoint::Me
            | Endpoint::CallTrace => Some(Method::GET),
            Endpoint::ManageEndpoints => None,
        }
    }

    /// The methods the function's paths serve, for a 405's `Allow`: on
    /// `/api/v1/public/call` GET is the reader's and POST create-call's; on
    /// `/api/v1/public/call/{id}` GET is the reader's and DELETE the eraser's.
    pub fn allow(self) -> &'static str {
        match self {
            Endpoint::Ingest(Operation::SendCallData | Operation::ProviderWebhook(_))
            | Endpoint::Webhook
            | Endpoint::Otel => "POST",
            Endpoint::Ingest(Operation::CreateCall) => "GET, POST",
            Endpoint::GetCall | Endpoint::EraseCall => "GET, DELETE",
            Endpoint::ListCalls
            | Endpoint::CallRevisions
            | Endpoint::GetRawCall
            | Endpoint::Me
            | Endpoint::CallTrace => "GET",
            // Every method of its paths; each path's 405 names its own.
            Endpoint::ManageEndpoints => "GET, POST, DELETE",
        }
    }

    /// The scope a credential needs here; `None` where any valid credential will do (a
    /// key may ask what it may do before it does anything).
    pub fn scope(self) -> Option<Scope> {
        match self {
            // A hook's signature stands for the credential; its calls count as sends.
            Endpoint::Ingest(_) | Endpoint::Webhook => Some(Scope::Send),
            Endpoint::GetCall
            | Endpoint::ListCalls
            | Endpoint::CallRevisions
            | Endpoint::GetRawCall
            | Endpoint::CallTrace => Some(Scope::Read),
            Endpoint::Otel => Some(Scope::Traces),
            Endpoint::EraseCall => Some(Scope::Erase),
            Endpoint::ManageEndpoints => Some(Scope::Manage),
            Endpoint::Me => None,
        }
    }

    /// Whether session tokens are taken: everywhere but operation A, whose contract
    /// knows API keys only.
    pub fn sessions(self) -> Sessions {
        match self {
            // Exporters hold API keys; a session has no workspace of its own to export to.
            Endpoint::Ingest(Operation::SendCallData) | Endpoint::Otel => Sessions::Refused,
            _ => Sessions::Accepted,
        }
    }

    /// Whether problems carry operation A's `success` / `message` envelope.
    pub fn envelope(self) -> bool {
        self == Endpoint::Ingest(Operation::SendCallData)
    }
}
