//! Operations A and B: credential → query → workspace → agent → body (size, type,
//! encoding) → parse → validate → normalise → store → answer.

use std::time::Duration;

use lambda_http::http::{header, Response};
use lambda_http::{Body, Request};

use crate::encoding::Encoding;
use crate::gate::{caller, enter, remote_id_param, workspace_param, Pace};
use crate::logging::RequestLog;
use crate::policy::{self, Protection};
use crate::problems::{self, denied, directory_problem, storage_problem};
use crate::respond;
use crate::{Backend, Endpoint};
use call_ingest_core::api::responses::{AcceptedResponse, CreateCallResponse, SendCallDataResponse};
use call_ingest_core::api::send_call_data::{peek_agent_id, PEEK_BYTES};
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_core::call::{self, CallDocument, Operation};
use call_ingest_core::privacy;
use call_ingest_store::calls::pending::Form;
use call_ingest_store::calls::{Outcome, Owner, Receipt, StoreError, Stored};
use call_ingest_store::directory::AgentRef;

/// How long S3 and DynamoDB get to store a call (its compression not counted) before it is
/// made durable as pending and answered 202 is `backend.patience`'s: 4 s, or 750 ms on an
/// instance whose last commit failed or was slow. With the pending write's own bound, the
/// answer comes well inside the 10 s a one-shot client waits.
/// How long S3 gets at least to take a pending submission before the answer is 503.
const PENDING_BUDGET: Duration = Duration::from_millis(2500);
/// The answer's bound from receipt, inside the 10 s a one-shot client waits (Tuner's
/// pipecat SDK): S3 gets all that is left of it for the pending copy, at least
/// [`PENDING_BUDGET`]. That is past the SDK's 3 s attempt, so a PUT that S3 answers late
/// or refuses (an outage of seconds) is tried again, and hedged ([`keep_pending`]), before
/// the answer is 503; a 503 loses a one-shot client's call, as a timeout would.
const ANSWER_BY: Duration = Duration::from_secs(9);
/// A PUT of a pending copy not answered within this long gets a second one beside it (the
/// same key and bytes, `If-None-Match: *`: whichever lands first keeps it, the other finds
/// it there): S3's slow tail (a reply held up, a connection stuck) costs the hedge's wait,
/// not an attempt's timeout. At most [`HEDGES`] at once.
const HEDGE_AFTER: Duration = Duration::from_millis(1200);
const HEDGES: usize = 3;
/// How long the workspace's data policy may take to read when it is not cached.
const POLICY_WITHIN: Duration = Duration::from_secs(2);

/// A stored or accepted call, to answer with.
pub(crate) struct Reply {
    /// `None`: accepted (durable in S3 as pending), committed later.
    stored: Option<Stored>,
    call_id: String,
}

impl Reply {
    pub(crate) fn respond(self, operation: Operation, request_id: &str) -> Response<Body> {
        let status = match self.stored {
            // Providers want 200: Vapi and ElevenLabs retry nothing by default, and ElevenLabs
            // disables a hook after enough failures; Retell retries a few times.
            _ if matches!(operation, Operation::ProviderWebhook(_)) => 200,
            None => 202,
            Some(stored) if stored.is_new() => 201,
            Some(_) => 200,
        };
        let body = match (operation, self.stored) {
            (Operation::CreateCall, Some(stored)) => serde_json::to_vec(&CreateCallResponse {
                id: stored.id,
                provider_call_id: &self.call_id,
                is_new: stored.is_new(),
            }),
            (Operation::CreateCall, None) => {
                serde_json::to_vec(&AcceptedResponse { provider_call_id: &self.call_id, status: "accepted" })
            }
            (Operation::ProviderWebhook(_), stored) => serde_json::to_vec(&WebhookResponse {
                status: match stored.map(|s| s.outcome) {
                    None => "accepted",
                    Some(Outcome::Created) => "stored",
                    Some(Outcome::Unchanged) => "unchanged",
                    Some(Outcome::Revised) => "revised",
                },
                provider_call_id: &self.call_id,
                id: stored.map(|s| s.id),
            }),
            (Operation::SendCallData, stored) => serde_json::to_vec(&SendCallDataResponse {
                success: true,
                call_id: &self.call_id,
                service_call_id: stored.map(|s| s.id.to_string()),
                message: match stored.map(|s| s.outcome) {
                    None => "Call accepted; it is stored within a minute",
                    Some(Outcome::Created) => "Call stored",
                    Some(Outcome::Unchanged) => "Call already stored; nothing changed",
                    Some(Outcome::Revised) => "Call already stored; its content was updated",
                },
            }),
        };
        respond::json(status, body.unwrap_or_default(), "application/json", request_id)
    }
}

/// A webhook's answer: what became of the call (`accepted`: durable, committed within a
/// minute; `held`: durable, committed once its agent exists).
#[derive(serde::Serialize)]
pub(crate) struct WebhookResponse<'a> {
    pub status: &'static str,
    pub provider_call_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
}

/// Operations A and B, after the method check.
pub(crate) async fn process(
    backend: &Backend,
    operation: Operation,
    request: &Request,
    log: &mut RequestLog,
) -> Result<Reply, Problem> {
    let raw = request.body().as_ref();
    // When it arrived: a pending copy carries it, and an erase after it wins.
    let received = call_ingest_store::calls::now_ms();
    // Judged now, told only to an authenticated caller.
    let checked = body_checks(backend, request);
    let endpoint = Endpoint::Ingest(operation);
    let (workspace_id, agent, pace, doc, body) = match operation {
        Operation::ProviderWebhook(_) => unreachable!("webhooks are answered by endpoints::webhook"),
        Operation::CreateCall => {
            let query = query(request);
            let agent = query
                .as_ref()
                .ok()
                .map(|(workspace_id, remote_id)| AgentRef::Remote { workspace_id: *workspace_id, remote_id });
            let (lookup, principal) = caller(backend, endpoint, request, agent).await?;
            let (workspace_id, _) = query.map_err(Problem::invalid)?;
            let (workspace_id, pace) = enter(backend, &lookup, &principal, Some(workspace_id), endpoint, log).await?;
            let agent = backend.directory().authorize(&lookup, workspace_id).map_err(denied)?;
            let asked = policy::asked(request)?;
            let protection =
                Protection::read(backend, &lookup, workspace_id, asked, (POLICY_WITHIN, POLICY_WITHIN)).await?;
            let body = checked?.decode(raw, backend.config.max_decompressed_bytes)?;
            let parsed = call::parse_create_call(&body)?;
            let mut doc = call::accept_create_call(parsed).map_err(Problem::invalid)?;
            protection.apply(backend, &mut doc, workspace_id, &agent.id).await;
            (workspace_id, agent, pace, doc, body)
        }
        Operation::SendCallData => {
            // The agent is named in the body. Only its first bytes are read (and
            // decompressed) before the credential is known, so an anonymous request costs
            // no parse; when they name the agent, the credential and the agent cost one
            // round trip together.
            let prefix = checked.as_ref().map(|e| e.prefix(raw, PEEK_BYTES)).unwrap_or_default();
            let peeked = peek_agent_id(&prefix);
            let (lookup, principal) = caller(backend, endpoint, request, peeked.map(AgentRef::Id)).await?;
            // No workspace asked for: the API key's own (sessions were refused).
            let (workspace_id, pace) = enter(backend, &lookup, &principal, None, endpoint, log).await?;
            let asked = policy::asked(request)?;
            let protection =
                Protection::read(backend, &lookup, workspace_id, asked, (POLICY_WITHIN, POLICY_WITHIN)).await?;
            let body = checked?.decode(raw, backend.config.max_decompressed_bytes)?;
            let parsed = call::parse_send_call_data(&body)?;
            let agent_id = parsed.agent_id.as_deref().filter(|id| !id.is_empty() && id.chars().count() <= 200);
            let agent = match agent_id {
                Some(id) => {
                    let lookup = match peeked == Some(id) {
                        true => lookup,
                        false => {
                            backend.directory().with_agent(lookup, AgentRef::Id(id)).await.map_err(directory_problem)?
                        }
                    };
                    Some(backend.directory().authorize(&lookup, workspace_id).map_err(denied)?)
                }
                None => None,
            };
            let mut doc = call::accept_send_call_data(parsed).map_err(Problem::invalid)?;
            let agent = agent
                .ok_or_else(|| Problem::invalid(vec![Violation::new("/agentId", Code::Required, "is required")]))?;
            protection.apply(backend, &mut doc, workspace_id, &agent.id).await;
            (workspace_id, agent, pace, doc, body)
        }
    };
    let owner = Owner { workspace_id, agent_id: &agent.id };
    let wait = Wait { pace, commit: None, keep: PENDING_BUDGET, answer_by: Some(ANSWER_BY) };
    store_call(backend, owner, operation, wait, received, &doc, &body, log).await
}

/// How a send waits: paced or not, at most `commit` (besides the instance's patience) for
/// DynamoDB, and `keep` for S3 to take its pending copy before the answer is 503.
pub(crate) struct Wait {
    pub pace: Pace,
    pub commit: Option<Duration>,
    pub keep: Duration,
    /// When set, S3 gets what is left of this bound from receipt, if more than `keep`.
    pub answer_by: Option<Duration>,
}

/// Stores the call; its reply, or the problem storing it. When DynamoDB cannot commit it
/// within its budget (down, throttled, slow), or its workspace is over its send
/// budget ([`Pace::Later`]), the call is made durable in S3 as pending and accepted (202),
/// to be committed later; only when S3 cannot take it either is the answer 503. A write
/// still in flight when the budget ends may be applied meanwhile: committing the pending
/// copy then finds it, and changes nothing. A webhook waits less for DynamoDB (its answer
/// comes within 2 s) and more for S3 ([`Wait`]).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn store_call(
    backend: &Backend,
    owner: Owner<'_>,
    operation: Operation,
    Wait { pace, commit: within, keep, answer_by }: Wait,
    received: u64,
    doc: &CallDocument,
    raw: &[u8],
    log: &mut RequestLog,
) -> Result<Reply, Problem> {
    let call_id = doc.call_id().to_owned();
    // Under a policy that changes the call, the request body is never written: what is
    // stored is the document (and a pending copy its envelope, `Form::copy_of`).
    let stored_raw = privacy::stored_raw(doc, raw);
    // This submission's identity, for the direct write and its pending copy alike: the copy
    // of a write applied late (after the budget ran out) changes nothing when committed.
    let receipt = Receipt::new(received).map_err(|e| storage_problem(e, "the call could not be stored"))?;
    let failed = match pace {
        Pace::Later => StoreError::Unavailable("the workspace is over its send budget".into()),
        Pace::Now => {
            let started = std::time::Instant::now();
            let budget = within.map_or(backend.patience.budget(), |w| w.min(backend.patience.budget()));
            let committed = backend.store().put_call_within(owner, doc, &stored_raw, &receipt, budget).await;
            backend.patience.record(started.elapsed(), committed.is_ok());
            match committed {
                Ok(stored) => {
                    log.stored = Some(stored);
                    return Ok(Reply { stored: Some(stored), call_id });
                }
                Err(e @ StoreError::Internal(_)) => return Err(storage_problem(e, "the call could not be stored")),
                Err(e @ StoreError::Unavailable(_)) => e,
            }
        }
    };
    tracing::warn!(reason = %failed, "call not committed now; kept as pending");
    let elapsed = Duration::from_millis(call_ingest_store::calls::now_ms().saturating_sub(received));
    let keep = answer_by.map_or(keep, |by| by.saturating_sub(elapsed).max(keep));
    let paced = pace == Pace::Later;
    let (copy, form) = Form::copy_of(doc, raw);
    let pending =
        keep_pending(keep, || backend.store().put_pending_as(owner, operation, &call_id, &copy, &receipt, paced, form));
    match pending.await {
        Ok(Ok(_)) => {
            log.accepted = true;
            Ok(Reply { stored: None, call_id })
        }
        Ok(Err(e)) => Err(storage_problem(e, "the call could not be stored")),
        Err(_) => Err(storage_problem(failed, "the call could not be stored")),
    }
}

/// Runs `put` (a pending copy's PUT, idempotent: its key is its submission's) until it
/// succeeds, fails for good, or `keep` runs out (`Err(Elapsed)`): tried again after S3
/// answered "unavailable" (the SDK's own three attempts end within a second, and S3's
/// outages last seconds), and hedged: an attempt not answered within [`HEDGE_AFTER`] gets
/// another beside it, up to [`HEDGES`] at once, the first success answering.
pub(crate) async fn keep_pending<F, Fut>(
    keep: Duration,
    mut put: F,
) -> Result<Result<String, StoreError>, tokio::time::error::Elapsed>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<String, StoreError>>,
{
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let deadline = tokio::time::Instant::now() + keep;
    tokio::time::timeout_at(deadline, async {
        let mut attempts = FuturesUnordered::new();
        attempts.push(put());
        let mut hedge = tokio::time::Instant::now() + HEDGE_AFTER;
        let mut pause = Duration::from_millis(250);
        loop {
            tokio::select! {
                Some(answer) = attempts.next() => match answer {
                    Err(StoreError::Unavailable(_)) if attempts.is_empty() => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(1));
                        attempts.push(put());
                        hedge = tokio::time::Instant::now() + HEDGE_AFTER;
                    }
                    // Another attempt is still under way: its answer decides.
                    Err(StoreError::Unavailable(_)) => {}
                    other => return other,
                },
                _ = tokio::time::sleep_until(hedge), if attempts.len() < HEDGES => {
                    attempts.push(put());
                    hedge = tokio::time::Instant::now() + HEDGE_AFTER;
                }
            }
        }
    })
    .await
}

/// The checks on a body before it is read, only told to an authenticated caller: 413 for
/// more bytes than `MAX_BODY_BYTES` (received, before decompression), 415 for a type that
/// is not JSON or an encoding we do not take. Answers the body's encoding.
pub(crate) fn body_checks(backend: &Backend, request: &Request) -> Result<Encoding, Problem> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let limit = backend.config.max_body_bytes;
    if request.body().len() > limit || declared.is_some_and(|d| d > limit as u64) {
        return Err(problems::body_too_large(limit));
    }
    if let Some(content_type) = request.headers().get(header::CONTENT_TYPE) {
        if !is_json(content_type.to_str().unwrap_or_default()) {
            return Err(problems::not_json());
        }
    }
    Encoding::of(request.headers())
}

/// `application/json`, or any `+json` type, parameters ignored.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Operation B's query: a positive integer `workspace_id` and an `agent_remote_identifier`
/// of 1 to 200 characters.
fn query(request: &Request) -> Result<(u64, String), Vec<Violation>> {
    let workspace = workspace_param(request);
    let remote = remote_id_param(request)
        .and_then(|r| r.ok_or_else(|| Violation::new("/query/agent_remote_identifier", Code::Required, "is required")));
    match (workspace, remote) {
        (Ok(w), Ok(r)) => Ok((w, r)),
        (w, r) => Err(w.err().into_iter().chain(r.err()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_json, keep_pending, Duration, StoreError};

    #[test]
    fn json_media_types_are_recognised() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/problem+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-www-form-urlencoded"));
    }

    /// S3's slow tail: the first PUT is held up (its reply would come after the answer's
    /// bound), a hedge beside it lands, and the copy is kept well inside the bound.
    #[tokio::test]
    async fn a_pending_copy_whose_put_hangs_is_kept_by_a_hedge() {
        let tries = std::sync::atomic::AtomicUsize::new(0);
        let started = std::time::Instant::now();
        let kept = keep_pending(Duration::from_secs(6), || {
            let n = tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if n == 0 {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok(format!("attempt {n}"))
            }
        })
        .await;
        assert_eq!(kept.unwrap().unwrap(), "attempt 1");
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    }

    /// S3 refusing (503 SlowDown) is tried again within the bound; an error for good ends it.
    #[tokio::test]
    async fn a_refused_put_is_tried_again_and_a_failure_for_good_ends_it() {
        let tries = std::sync::atomic::AtomicUsize::new(0);
        let kept = keep_pending(Duration::from_secs(6), || {
            let n = tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                match n {
                    0 | 1 => Err(StoreError::Unavailable("SlowDown".into())),
                    _ => Ok("kept".to_owned()),
                }
            }
        })
        .await;
        assert_eq!(kept.unwrap().unwrap(), "kept");
        let failed =
            keep_pending(Duration::from_secs(6), || async { Err(StoreError::Internal("denied".into())) }).await;
        assert!(matches!(failed, Ok(Err(StoreError::Internal(_)))));
        let never = keep_pending(Duration::from_millis(300), || async {
            Err::<String, _>(StoreError::Unavailable("SlowDown".into()))
        })
        .await;
        assert!(never.is_err(), "out of time: the answer is 503");
    }
}
