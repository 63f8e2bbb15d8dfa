//! A workspace's event endpoints over the API (issue 33), for credentials with the `manage`
//! scope (sessions hold every scope); `callctl endpoint` does the same from the operator's
//! side:
//!
//! - `GET  /api/v1/public/endpoints`: the workspace's endpoints, never their secrets;
//! - `POST /api/v1/public/endpoints` `{"url", "events"?}`: makes one (201), its `whsec_…`
//!   secret in this answer only;
//! - `GET` / `DELETE /api/v1/public/endpoints/{endpoint_id}`: one, or deleting it;
//! - `POST …/{endpoint_id}/disable`, `…/enable`, and `…/rotate` `{"overlap_seconds"?}` (a new
//!   secret, shown once; the one before signs beside it for 24 hours unless told).
//!
//! A URL is checked as `callctl` checks it (`events::target`: https, no credentials, a public
//! host, no private, loopback, link-local or metadata address in any spelling), and a name
//! again at every delivery. An endpoint of another workspace is answered as a missing one.

use lambda_http::http::{header, HeaderValue, Method, Response};
use lambda_http::{Body, Request, RequestExt};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::logging::RequestLog;
use crate::problems::{self, denied, storage_problem};
use crate::reading::admit;
use crate::{respond, Backend, Endpoint};
use call_ingest_core::api::{Code, Problem, Violation};
use call_ingest_core::events::signing::Secret;
use call_ingest_core::events::{target, EventType};
use call_ingest_core::normalize::timestamps::millis_rfc3339;
use call_ingest_store::calls::StoreError;
use call_ingest_store::directory::admin::AdminError;
use call_ingest_store::directory::credentials::Denied;
use call_ingest_store::directory::endpoints::{self, new_secret, Disabled, MAX_PER_WORKSPACE, ROTATION_OVERLAP_MS};
use call_ingest_store::directory::sealing::Sealer;

/// The largest body taken (a URL is at most 2 KB; the event types are three).
const MAX_BODY_BYTES: usize = 16 * 1024;
/// The longest a rotated-out secret may go on signing, as `callctl endpoint rotate`.
const MAX_OVERLAP_SECONDS: u64 = 30 * 86_400;

/// What a request asks, from its path and method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    List,
    Create,
    Show,
    Delete,
    Disable,
    Enable,
    Rotate,
}

/// What a path under `/api/v1/public/endpoints` names: the endpoints (`rest` none), one
/// (`{endpoint_id}`), or an action on one (`{endpoint_id}/disable`, `/enable`, `/rotate`).
/// The function takes `…/endpoints/{proxy+}` whole (three routes, not twelve: their
/// throttles share its concurrency); `None` for any other path under it.
fn path_of(rest: Option<&str>) -> Option<(Option<&str>, Option<&str>)> {
    let Some(rest) = rest.map(|r| r.trim_end_matches('/')) else { return Some((None, None)) };
    let mut parts = rest.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), None, None) => Some((None, None)),
        (Some(id), None, None) => Some((Some(id), None)),
        (Some(id), Some(verb @ ("disable" | "enable" | "rotate")), None) if !id.is_empty() => {
            Some((Some(id), Some(verb)))
        }
        _ => None,
    }
}

/// The action of `method` on the path, or the methods the path takes (for a 405).
fn route(method: &Method, endpoint_id: Option<&str>, verb: Option<&str>) -> Result<Action, &'static str> {
    match (endpoint_id.is_some(), verb, method) {
        (false, _, &Method::GET) => Ok(Action::List),
        (false, _, &Method::POST) => Ok(Action::Create),
        (false, _, _) => Err("GET, POST"),
        (true, None, &Method::GET) => Ok(Action::Show),
        (true, None, &Method::DELETE) => Ok(Action::Delete),
        (true, None, _) => Err("GET, DELETE"),
        (true, Some("disable"), &Method::POST) => Ok(Action::Disable),
        (true, Some("enable"), &Method::POST) => Ok(Action::Enable),
        (true, Some(_), &Method::POST) => Ok(Action::Rotate),
        (true, Some(_), _) => Err("POST"),
    }
}

/// An endpoint as the API shows it: never its secret.
#[derive(Debug, Serialize)]
struct EndpointBody {
    id: String,
    workspace_id: u64,
    url: String,
    /// The event types it takes; empty: every type.
    events: Vec<EventType>,
    /// `active`, `failing` (its last deliveries failed; disabled after 5 days of it) or
    /// `disabled`.
    state: &'static str,
    /// Why it is disabled: `by_hand`, `gone` (it answered 410) or `failing`.
    disabled_reason: Option<Disabled>,
    created_at: String,
    disabled_at: Option<String>,
    failing_since: Option<String>,
    /// Until when the secret before the last rotation signs too.
    previous_secret_until: Option<String>,
}

impl From<&endpoints::Endpoint> for EndpointBody {
    fn from(e: &endpoints::Endpoint) -> EndpointBody {
        let state = match (e.disabled, e.failing_since) {
            (Some(_), _) => "disabled",
            (None, Some(_)) => "failing",
            (None, None) => "active",
        };
        EndpointBody {
            id: e.id.clone(),
            workspace_id: e.workspace_id,
            url: e.url.clone(),
            events: e.events.clone(),
            state,
            disabled_reason: e.disabled,
            created_at: millis_rfc3339(e.created_at),
            disabled_at: e.disabled_at.map(millis_rfc3339),
            failing_since: e.failing_since.map(millis_rfc3339),
            previous_secret_until: e.previous_until.map(millis_rfc3339),
        }
    }
}

/// An endpoint with its new secret: the one answer that shows it.
#[derive(Debug, Serialize)]
struct WithSecret {
    endpoint: EndpointBody,
    secret: String,
}

#[derive(Debug, Serialize)]
struct Listed {
    workspace_id: u64,
    endpoints: Vec<EndpointBody>,
}

#[derive(Debug, Serialize)]
struct Deleted {
    id: String,
    deleted: bool,
}

/// Answers a request to the event endpoints.
pub async fn answer(
    backend: &Backend,
    request: &Request,
    request_id: &str,
    log: &mut RequestLog,
) -> Result<Response<Body>, Problem> {
    let params = request.path_parameters();
    let Some((endpoint_id, verb)) = path_of(params.first("proxy")) else {
        return Err(problems::endpoint_not_found());
    };
    let endpoint_id = endpoint_id.map(str::to_owned);
    let action = match route(request.method(), endpoint_id.as_deref(), verb) {
        Ok(action) => action,
        Err(allow) => return Ok(method_not_allowed(allow, request_id, log)),
    };
    let (workspace_id, ()) = admit(backend, Endpoint::ManageEndpoints, request, log, Ok(())).await?;
    let directory = backend.directory();
    let (status, body) = match (action, endpoint_id) {
        (Action::List, _) => {
            let listed = directory.list_endpoints(workspace_id).await.map_err(admin_problem)?;
            let endpoints = listed.iter().map(EndpointBody::from).collect();
            (200, to_json(&Listed { workspace_id, endpoints }))
        }
        (Action::Create, _) => {
            let (target, events) = creation(&object(request)?, backend.config.events_allow_loopback)?;
            let (sealer, secret) = sealer_and_secret(backend)?;
            let made = directory.create_endpoint(sealer, workspace_id, &target, &events, &secret).await;
            let made = made.map_err(|e| match e {
                AdminError::Limit(_) => Problem::invalid(vec![Violation::new(
                    "",
                    Code::Limit,
                    format!("a workspace has at most {MAX_PER_WORKSPACE} endpoints: delete one first"),
                )]),
                e => admin_problem(e),
            })?;
            tracing::info!(workspace_id, endpoint = %made.id, "endpoint made");
            (201, to_json(&WithSecret { endpoint: (&made).into(), secret: secret.reveal() }))
        }
        (action, Some(id)) => {
            // The workspace's own, or none: another's is answered as a missing one.
            let found =
                directory.endpoint(&id).await.map_err(|e| storage_problem(e, "the endpoint could not be read"))?;
            let found = found.filter(|e| e.workspace_id == workspace_id).ok_or_else(problems::endpoint_not_found)?;
            // What changes it finds it still there, or answers 404 (deleted meanwhile).
            let gone = |e: AdminError| match e {
                AdminError::Invalid(_) => problems::endpoint_not_found(),
                e => admin_problem(e),
            };
            match action {
                Action::Show => (200, to_json(&EndpointBody::from(&found))),
                Action::Delete => {
                    directory.delete_endpoint(&id).await.map_err(gone)?;
                    (200, to_json(&Deleted { id, deleted: true }))
                }
                Action::Disable => {
                    let e = directory.disable_endpoint(&id, Disabled::ByHand).await.map_err(gone)?;
                    (200, to_json(&EndpointBody::from(&e)))
                }
                Action::Enable => {
                    let e = directory.enable_endpoint(&id).await.map_err(gone)?;
                    (200, to_json(&EndpointBody::from(&e)))
                }
                _ => {
                    let overlap_ms = overlap(&object(request)?)?;
                    let (sealer, secret) = sealer_and_secret(backend)?;
                    let rotated = directory.rotate_endpoint(sealer, &id, &secret, overlap_ms).await;
                    // Its condition is the secret it had: deleted meanwhile (404), or rotated
                    // by another request (503: the same request again rotates it).
                    let rotated = match rotated {
                        Ok(rotated) => rotated,
                        Err(AdminError::Invalid(why)) => {
                            let read = directory.endpoint(&id).await;
                            return Err(match read {
                                Ok(None) => problems::endpoint_not_found(),
                                _ => storage_problem(StoreError::Unavailable(why), "the endpoint could not be rotated"),
                            });
                        }
                        Err(e) => return Err(admin_problem(e)),
                    };
                    (200, to_json(&WithSecret { endpoint: (&rotated).into(), secret: secret.reveal() }))
                }
            }
        }
        // `route` names an endpoint for every other action.
        (_, None) => return Err(problems::endpoint_not_found()),
    };
    Ok(respond::json(status, body, "application/json", request_id))
}

fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A 405 naming the methods of the path asked (`Allow`).
fn method_not_allowed(allow: &'static str, request_id: &str, log: &mut RequestLog) -> Response<Body> {
    let problem = problems::method_not_allowed(allow);
    log.problem = Some(problem.slug);
    let mut response = respond::problem(&problem, Endpoint::ManageEndpoints, request_id);
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// What seals a new secret, and the secret (making an endpoint, rotating one).
fn sealer_and_secret(backend: &Backend) -> Result<(&Sealer, Secret), Problem> {
    let no_kms = || storage_problem(StoreError::Internal("no KMS client".into()), "the secret could not be sealed");
    let sealer = backend.sealer().ok_or_else(no_kms)?;
    let secret = new_secret().map_err(|e| storage_problem(e, "no secret could be drawn"))?;
    Ok((sealer, secret))
}

fn admin_problem(e: AdminError) -> Problem {
    match e {
        AdminError::Store(e) => storage_problem(e, "the endpoints could not be read or changed"),
        AdminError::NoWorkspace(_) => denied(Denied::Forbidden),
        other => storage_problem(StoreError::Internal(other.to_string()), "the endpoint could not be changed"),
    }
}

/// The body as a JSON object: none (or an empty one) is `{}`; over [`MAX_BODY_BYTES`] 413;
/// anything but an object 400.
fn object(request: &Request) -> Result<Map<String, Value>, Problem> {
    let bytes: &[u8] = request.body().as_ref();
    if bytes.len() > MAX_BODY_BYTES {
        return Err(problems::endpoint_body_too_large(MAX_BODY_BYTES));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(problems::not_a_json_object("it is JSON, but not an object")),
        Err(e) => Err(problems::not_a_json_object(&e.to_string())),
    }
}

/// A new endpoint's `url` (checked: [`target::check`]) and `events` (none: every type); 422
/// listing every violation.
fn creation(body: &Map<String, Value>, allow_loopback: bool) -> Result<(target::Target, Vec<EventType>), Problem> {
    let mut violations = Vec::new();
    let target = match body.get("url") {
        None | Some(Value::Null) => {
            violations.push(Violation::new("/url", Code::Required, "is required"));
            None
        }
        Some(Value::String(url)) => match target::check(url, allow_loopback) {
            Ok(target) => Some(target),
            Err(unfit) => {
                violations.push(Violation::new("/url", Code::Format, unfit.to_string()));
                None
            }
        },
        Some(_) => {
            violations.push(Violation::new("/url", Code::Type, "must be a string"));
            None
        }
    };
    let mut events = Vec::new();
    match body.get("events") {
        None => {}
        Some(Value::Array(names)) => {
            for (i, name) in names.iter().enumerate() {
                match name.as_str().and_then(EventType::parse) {
                    Some(kind) => events.push(kind),
                    None => violations.push(Violation::new(
                        format!("/events/{i}"),
                        Code::OneOf,
                        "must be call.stored, call.revised or call.erased",
                    )),
                }
            }
        }
        Some(_) => violations.push(Violation::new("/events", Code::Type, "must be a list of event types")),
    }
    match target {
        Some(target) if violations.is_empty() => Ok((target, events)),
        _ => Err(Problem::invalid(violations)),
    }
}

/// A rotation's `overlap_seconds`: how long the secret before it still signs (default 24
/// hours; 0: not at all; at most 30 days).
fn overlap(body: &Map<String, Value>) -> Result<u64, Problem> {
    match body.get("overlap_seconds") {
        None => Ok(ROTATION_OVERLAP_MS),
        Some(value) => match value.as_u64() {
            Some(secs) if secs <= MAX_OVERLAP_SECONDS => Ok(secs * 1000),
            Some(_) => Err(Problem::invalid(vec![Violation::new(
                "/overlap_seconds",
                Code::Range,
                format!("must be at most {MAX_OVERLAP_SECONDS} (30 days)"),
            )])),
            None => Err(Problem::invalid(vec![Violation::new(
                "/overlap_seconds",
                Code::Type,
                "must be a whole number of seconds, 0 or more",
            )])),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_path_has_its_own_methods() {
        let id = Some("ep_0123456789abcdef01234567");
        assert_eq!(route(&Method::GET, None, None), Ok(Action::List));
        assert_eq!(route(&Method::POST, None, None), Ok(Action::Create));
        assert_eq!(route(&Method::DELETE, None, None), Err("GET, POST"));
        assert_eq!(route(&Method::GET, id, None), Ok(Action::Show));
        assert_eq!(route(&Method::DELETE, id, None), Ok(Action::Delete));
        assert_eq!(route(&Method::POST, id, None), Err("GET, DELETE"));
        assert_eq!(route(&Method::POST, id, Some("disable")), Ok(Action::Disable));
        assert_eq!(route(&Method::POST, id, Some("enable")), Ok(Action::Enable));
        assert_eq!(route(&Method::POST, id, Some("rotate")), Ok(Action::Rotate));
        assert_eq!(route(&Method::GET, id, Some("rotate")), Err("POST"));
    }

    #[test]
    fn a_path_names_the_endpoints_one_or_an_action_on_one_and_nothing_else() {
        assert_eq!(path_of(None), Some((None, None)));
        assert_eq!(path_of(Some("")), Some((None, None)));
        assert_eq!(path_of(Some("ep_1")), Some((Some("ep_1"), None)));
        assert_eq!(path_of(Some("ep_1/")), Some((Some("ep_1"), None)));
        assert_eq!(path_of(Some("ep_1/rotate")), Some((Some("ep_1"), Some("rotate"))));
        for other in ["ep_1/revoke", "ep_1/rotate/now", "/rotate", "ep_1//rotate", "a/b/c"] {
            assert_eq!(path_of(Some(other)), None, "{other}");
        }
    }

    #[test]
    fn a_creation_lists_every_violation() {
        let body = |v: Value| v.as_object().unwrap().clone();
        let pointers = |p: Problem| p.errors.iter().map(|v| (v.pointer.clone(), v.code)).collect::<Vec<_>>();
        let p = creation(&body(json!({"events": ["call.stored", "call.lost", 3]})), false).unwrap_err();
        assert_eq!(
            pointers(p),
            [("/events/1".into(), Code::OneOf), ("/events/2".into(), Code::OneOf), ("/url".into(), Code::Required)]
        );
        let p = creation(&body(json!({"url": "https://hooks.example.com/", "events": null})), false).unwrap_err();
        assert_eq!(pointers(p), [("/events".into(), Code::Type)]);
        let p = creation(&body(json!({"url": "http://127.0.0.1:9/x"})), false).unwrap_err();
        assert_eq!(pointers(p), [("/url".into(), Code::Format)]);
        let (target, events) =
            creation(&body(json!({"url": "https://hooks.example.com/in", "events": []})), false).unwrap();
        assert_eq!((target.url.as_str(), events.len()), ("https://hooks.example.com/in", 0));
    }

    #[test]
    fn an_overlap_is_a_whole_number_of_seconds_up_to_30_days() {
        let body = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(overlap(&Map::new()).unwrap(), ROTATION_OVERLAP_MS);
        assert_eq!(overlap(&body(json!({"overlap_seconds": 0}))).unwrap(), 0);
        assert_eq!(overlap(&body(json!({"overlap_seconds": 90}))).unwrap(), 90_000);
        let bad = [json!(null), json!(-1), json!(1.5), json!("1h"), json!(2_592_001)];
        for bad in bad {
            assert!(overlap(&body(json!({"overlap_seconds": bad}))).is_err());
        }
    }
}
