//! Providers' own webhooks: `POST /v1/webhooks/{provider}/{hook_id}`. The hook names the
//! workspace and the secret; the provider's signature is checked on the body as received
//! (401 when it is missing, stale or wrong, for an unknown or revoked hook too, and nothing
//! is read further); the event is mapped (`call_ingest_core::providers`) and stored
//! through the same path as operation B, durable-first included. Answers are always 200 for
//! what was taken: ElevenLabs retries anything else, and a provider's retry of a call
//! stored is a replay, answered the same.

use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;

use crate::endpoints::ingest::{body_checks, store_call, Reply};
use crate::gate::Pace;
use crate::logging::RequestLog;
use crate::problems::{self, directory_problem, storage_problem};
use crate::{respond, Backend};
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_core::call::Operation;
use call_ingest_core::providers::{self, signature, Event, Provider};
use call_ingest_store::calls::{now_ms, Owner};
use call_ingest_store::directory::hooks::Hook;
use call_ingest_store::directory::limits::{Admission, Budget};
use call_ingest_store::directory::{AgentRef, Lookup};

/// Most bytes a provider's payload may expand to: it is read whole into a JSON tree before
/// mapping (up to about 16 times its size for the densest JSON), which must stay well
/// inside the function's memory. Providers send far less (Vapi's reports are 20–90 KB, a
/// long Retell call with word timings a few MB).
const MAX_PAYLOAD_BYTES: usize = 8 << 20;

/// The answer to an event that is not a call.
#[derive(Serialize)]
struct Ignored<'a> {
    status: &'static str,
    event: &'a str,
    message: &'static str,
}

/// Answers a webhook request.
pub(crate) async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<lambda_http::http::Response<Body>, Problem> {
    let received = now_ms();
    let params = request.path_parameters();
    let provider = params.first("provider").and_then(Provider::parse);
    let hook_id = params.first("hook_id").filter(|id| Hook::well_formed(id));
    let no_hook = || problems::unauthorized("no webhook hook of this provider at this URL, or it was revoked");
    let (Some(provider), Some(hook_id)) = (provider, hook_id) else { return Err(no_hook()) };
    let checked = body_checks(backend, request);
    let hook = backend.directory().hook(hook_id).await.map_err(directory_problem)?;
    let hook = hook.filter(|h| h.provider == provider && h.revoked_at.is_none()).ok_or_else(no_hook)?;
    let sealer = backend.sealer().ok_or_else(|| {
        storage_problem(call_ingest_store::calls::StoreError::Internal("no KMS client".into()), "hooks")
    })?;
    let secrets = backend.directory().hook_secrets(sealer, &hook, received).await.map_err(directory_problem)?;
    let secrets: Vec<&[u8]> = secrets.iter().map(Vec::as_slice).collect();
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    signature::verify(provider, header, request.body().as_ref(), &secrets, received as i64)
        .map_err(|refused| problems::unauthorized(&refused.to_string()))?;
    let workspace_id = hook.workspace_id;
    log.workspace = Some(workspace_id);
    let admission = backend
        .directory()
        .count_request(&Lookup::default(), workspace_id, Budget::Sends, backend.config.rate_limit)
        .await;
    let pace = match admission {
        Admission::Admitted => Pace::Now,
        Admission::Over => Pace::Later,
        Admission::Limited { retry_after_secs } => return Err(problems::too_many_requests(retry_after_secs)),
    };
    let cap = backend.config.max_decompressed_bytes.min(MAX_PAYLOAD_BYTES);
    let body = checked?.decode(request.body().as_ref(), cap)?;
    let mapped = match providers::read(provider, &body)? {
        Event::Call(mapped) => mapped,
        Event::Ignored(kind) => {
            let answer = Ignored { status: "ignored", event: &kind, message: "not a call event: nothing stored" };
            return Ok(respond::json(
                200,
                serde_json::to_vec(&answer).unwrap_or_default(),
                "application/json",
                request_id,
            ));
        }
    };
    let named = match &mapped.agent {
        Some(remote_id) => backend
            .directory()
            .agent(AgentRef::Remote { workspace_id, remote_id }, workspace_id)
            .await
            .map_err(directory_problem)?,
        None => None,
    };
    let agent = match (named, &hook.default_agent_id) {
        (Some(agent), _) => agent,
        (None, Some(default)) => backend
            .directory()
            .agent(AgentRef::Id(default), workspace_id)
            .await
            .map_err(directory_problem)?
            .ok_or_else(|| no_agent(&mapped.agent, workspace_id, true))?,
        (None, None) => return Err(no_agent(&mapped.agent, workspace_id, false)),
    };
    let doc = providers::accept(provider, &mapped)?;
    let operation = Operation::ProviderWebhook(provider);
    let owner = Owner { workspace_id, agent_id: &agent.id };
    let reply: Reply = store_call(backend, owner, operation, pace, received, &doc, &body, log).await?;
    Ok(reply.respond(operation, request_id))
}

/// 422: no agent of the workspace takes the call.
fn no_agent(named: &Option<String>, workspace_id: u64, default_gone: bool) -> Problem {
    let message = match (named, default_gone) {
        (_, true) => "the hook's default agent was deleted; create the hook again with --agent".to_owned(),
        (Some(id), false) => format!(
            "no agent of workspace {workspace_id} has remote identifier {id:?} (the provider's agent id), and the \
             hook has no default agent: create one with that remote identifier, or give the hook --agent"
        ),
        (None, false) => {
            "the payload names no agent and the hook has no default agent: give the hook --agent".to_owned()
        }
    };
    Problem::invalid(vec![Violation::new("/agent", Code::Required, message)])
}
