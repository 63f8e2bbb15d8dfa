//! Providers' own webhooks: `POST /v1/webhooks/{provider}/{hook_id}`. The hook names the
//! workspace and the secret; the provider's signature is checked on the body as received
//! (401 when it is missing, stale or wrong, for an unknown or revoked hook too, and nothing
//! is read further); the event is mapped (`call_ingest_core::providers`) and stored
//! through the same path as operation B, durable-first included.
//!
//! A provider is a one-shot client: Vapi and ElevenLabs retry nothing by default (and
//! ElevenLabs disables a hook after enough failures), Retell a few times within seconds. So
//! once a signature checks out, the report is kept whatever DynamoDB does, and answered 200
//! within [`ANSWER_WITHIN`] plus S3's write (within [`ANSWER_BY`] of receipt in all):
//! - the hook and the agent come from the directory's cache, else a read bounded in time,
//!   else what this instance read in the last 15 minutes (`OUTAGE_GRACE`): only an
//!   instance that never read the hook answers 503 (with Retry-After) when the directory
//!   is down;
//! - a report whose agent is unknown (none named of the workspace, no default on the hook)
//!   or unreadable now is held in S3 (`held/`, answered `held` or `accepted`) and committed
//!   once its agent exists (`calls::held`);
//! - a call DynamoDB cannot commit in time is pending (`accepted`), as operation B's 202.
//!
//! A provider's retry of a call stored is a replay, answered the same.

use std::time::{Duration, Instant};

use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;

use crate::endpoints::ingest::{body_checks, store_call, Reply, Wait, WebhookResponse};
use crate::gate::Pace;
use crate::logging::RequestLog;
use crate::problems::{self, directory_problem, storage_problem};
use crate::{respond, Backend};
use call_ingest_core::api::Problem;
use call_ingest_core::call::{CallDocument, Operation};
use call_ingest_core::providers::{self, signature, Event, Provider};
use call_ingest_store::calls::held::Hold;
use call_ingest_store::calls::pending::Form;
use call_ingest_store::calls::{now_ms, Owner, Receipt, StoreError};
use call_ingest_store::directory::hooks::Hook;
use call_ingest_store::directory::limits::{Admission, Budget};
use call_ingest_store::directory::Lookup;

/// Most bytes a provider's payload may expand to: it is read whole into a JSON tree before
/// mapping (up to about 16 times its size for the densest JSON), which must stay well
/// inside the function's memory. Providers send far less (Vapi's reports are 20–90 KB, a
/// long Retell call with word timings a few MB).
const MAX_PAYLOAD_BYTES: usize = 8 << 20;

/// How long a report waits on DynamoDB in all (directory reads, the rate counter, the
/// commit) before it is kept in S3: the answer then comes within 2 s.
const ANSWER_WITHIN: Duration = Duration::from_millis(1500);
/// The most one directory read may take of it.
const READ_WITHIN: Duration = Duration::from_millis(400);
/// How long an instance that never read the hook waits for it: it has nothing to fall back
/// on, and the answer (a 503 when DynamoDB is down) is one the provider does not retry.
const HOOK_ALONE_WITHIN: Duration = Duration::from_secs(5);
/// The whole answer's bound from receipt, inside Retell's 10 s: S3 gets all that is left of
/// it to keep a report (pending or held), at least [`KEEP_AT_LEAST`], before the answer is
/// 503: past the SDK's 3 s attempt, so a PUT whose reply is late is tried again and hedged
/// (`ingest::keep_pending`), finding its own object.
const ANSWER_BY: Duration = Duration::from_millis(9500);
const KEEP_AT_LEAST: Duration = Duration::from_secs(2);
/// How long KMS gets to open a hook's secret that this instance has not opened lately.
const OPEN_WITHIN: Duration = Duration::from_secs(3);
/// The longest agent id looked up (operation B's `agent_remote_identifier`): a longer one
/// names no agent (and would pass DynamoDB's key size and S3's metadata limits).
const MAX_AGENT_ID_CHARS: usize = 200;

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
    let started = Instant::now();
    let deadline = started + ANSWER_WITHIN;
    let within = |cap: Duration| deadline.saturating_duration_since(Instant::now()).min(cap);
    let params = request.path_parameters();
    let provider = params.first("provider").and_then(Provider::parse);
    let hook_id = params.first("hook_id").filter(|id| Hook::well_formed(id));
    let no_hook = || problems::unauthorized("no webhook hook of this provider at this URL, or it was revoked");
    let (Some(provider), Some(hook_id)) = (provider, hook_id) else { return Err(no_hook()) };
    let checked = body_checks(backend, request);
    let hook = backend.directory().hook_for_webhook(hook_id, within(READ_WITHIN), HOOK_ALONE_WITHIN);
    let hook = hook.await.map_err(directory_problem)?;
    let hook = hook.filter(|h| h.provider == provider && h.revoked_at.is_none()).ok_or_else(no_hook)?;
    let sealer = backend.sealer().ok_or_else(|| {
        storage_problem(call_ingest_store::calls::StoreError::Internal("no KMS client".into()), "hooks")
    })?;
    let secrets = tokio::time::timeout(OPEN_WITHIN, backend.directory().hook_secrets(sealer, &hook, received))
        .await
        .unwrap_or_else(|_| Err(StoreError::Unavailable("KMS did not open the hook's secret in time".into())))
        .map_err(directory_problem)?;
    let secrets: Vec<&[u8]> = secrets.iter().map(Vec::as_slice).collect();
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    signature::verify(provider, header, request.body().as_ref(), &secrets, received as i64, hook.secret_header())
        .map_err(|refused| problems::unauthorized(&refused.to_string()))?;
    let workspace_id = hook.workspace_id;
    log.workspace = Some(workspace_id);
    let nothing_read = Lookup::default();
    let count =
        backend.directory().count_request(&nothing_read, workspace_id, Budget::Sends, backend.config.rate_limit);
    // A counter that does not answer in time paces the report, as one that fails does.
    let pace = match tokio::time::timeout(within(READ_WITHIN), count).await.unwrap_or(Admission::Over) {
        Admission::Admitted => Pace::Now,
        // A provider does not retry a 429: far over its rate, a report still waits in S3.
        Admission::Over | Admission::Limited { .. } => Pace::Later,
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
    let asked = crate::policy::asked(request)?;
    let protection = crate::policy::Protection::read(
        backend,
        &nothing_read,
        workspace_id,
        asked,
        (within(READ_WITHIN), HOOK_ALONE_WITHIN),
    )
    .await?;
    let mut doc = providers::accept(provider, &mapped)?;
    let operation = Operation::ProviderWebhook(provider);
    let named = mapped.agent.as_deref().filter(|id| !id.is_empty() && id.chars().count() <= MAX_AGENT_ID_CHARS);
    // A report's identity under a policy that changes it names no agent: a report held for
    // want of its agent has none yet when its identity is taken, and the same report sent
    // again once the agent exists (a provider's retry) must still be a replay of it. (Under
    // `everything` the digest of what is stored names the agent, for held reports too: it
    // is taken when they are committed.)
    let agent = match backend.directory().report_agent(&hook, named, within(READ_WITHIN)).await {
        Ok(Some(agent)) => {
            protection.apply(backend, &mut doc, workspace_id, "").await;
            agent
        }
        // Its agent not known yet, the report is held: under the workspace's policy too, so
        // the held copy is the document's envelope, never the body.
        Ok(None) => {
            protection.apply(backend, &mut doc, workspace_id, "").await;
            return hold(backend, &hook, named, &doc, &body, (received, started), "held", request_id, log).await;
        }
        Err(e) => {
            // Unreadable now (slow, down, or refused): the report is kept all the same.
            tracing::warn!(error = %e, "the report's agent could not be read; held");
            protection.apply(backend, &mut doc, workspace_id, "").await;
            return hold(backend, &hook, named, &doc, &body, (received, started), "accepted", request_id, log).await;
        }
    };
    let owner = Owner { workspace_id, agent_id: &agent.id };
    let wait = Wait { pace, commit: Some(within(ANSWER_WITHIN)), keep: KEEP_AT_LEAST, answer_by: Some(ANSWER_BY) };
    let reply: Reply = store_call(backend, owner, operation, wait, received, &doc, &body, log).await?;
    Ok(reply.respond(operation, request_id))
}

/// Keeps a report whose agent is not known now (`held/`, `calls::held`); answered 200 with
/// `status`: `held` when no agent takes it yet, `accepted` when the directory could not
/// say.
#[allow(clippy::too_many_arguments)]
async fn hold(
    backend: &Backend,
    hook: &Hook,
    named: Option<&str>,
    doc: &CallDocument,
    raw: &[u8],
    (received, started): (u64, Instant),
    status: &'static str,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<lambda_http::http::Response<Body>, Problem> {
    let failed = |e| storage_problem(e, "the report could not be kept");
    let receipt = Receipt::new(received).map_err(failed)?;
    let call_id = doc.call_id();
    let hold = Hold {
        workspace_id: hook.workspace_id,
        hook_id: &hook.id,
        named,
        operation: Operation::ProviderWebhook(hook.provider),
        call_id,
    };
    // Under a policy that changes the report, the held copy is its document's envelope.
    let (copy, form) = Form::copy_of(doc, raw);
    // S3 gets what is left of the answer's bound (a stored report's copy is timed the same
    // way, in `store_call`).
    let keep = ANSWER_BY.saturating_sub(started.elapsed()).max(KEEP_AT_LEAST);
    let put = super::ingest::keep_pending(keep, || backend.store().put_held_as(hold, &copy, &receipt, form)).await;
    put.unwrap_or_else(|_| Err(StoreError::Unavailable("S3 did not take the report in time".into())))
        .map_err(failed)?;
    log.accepted = true;
    let answer = WebhookResponse { status, provider_call_id: call_id, id: None };
    Ok(respond::json(200, serde_json::to_vec(&answer).unwrap_or_default(), "application/json", request_id))
}
