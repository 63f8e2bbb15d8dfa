"""The clients of the `history` phase of `make chaos` (scripts/history_run.py): each request
they make, and its answer, recorded as a `devstack.history.Op`.

    recorder = Recorder()
    clients = Clients(stack, recorder, hook_url, hook_secret)
    clients.create(call_id, marker, body, "one_shot", rng)     # operation B
    clients.erase(call_id, rng)                                # find the id, then DELETE it
    clients.export(call_id, marker, body, "one_shot", rng)     # spans to /otel/v1/traces

Two kinds of client, as people run them: a one-shot client (Tuner's pipecat SDK, the
ElevenLabs sample) makes one attempt with a 10 s timeout; a retrying one makes up to 4,
again on no answer, 408, 429 or 5xx, honouring Retry-After. Retell's webhooks are signed as
Retell signs them (`retell_signature`, as tests/e2e/test_webhooks.py checks against
retell-sdk's verifier). Spans go as an OpenTelemetry exporter sends them (OTLP JSON,
`export_body`): a one-shot exporter once, a retrying one as the SDK's exporters retry (on
429, 502-504 and no answer, honouring Retry-After).
"""
import hashlib
import hmac
import http.client
import json
import os
import threading
import time

from devstack import trace_clients, webhook_clients
from devstack.history import Op
from devstack.stack import ROOT, request

ONE_SHOT_TIMEOUT = 10
# Past API Gateway's 30 s: a retrying client waits for the function's own answer.
RETRYING_TIMEOUT = 35
ATTEMPTS = 4
RETRYABLE = {408, 429}
RETELL_FIXTURES = os.path.join(ROOT, "shared", "core", "tests", "fixtures", "providers")


def retell_signature(secret, body, at_ms=None):
    """Retell's `x-retell-signature` header for `body` (webhook_clients.signed)."""
    return webhook_clients.signed("retell", secret, body, at_ms)


# Personal data in every call the history run sends (issue 32): its workspace is `redacted`,
# so none of these may be found in any item or object once the run is over (the rule
# `personal_data_stored`), in any form they could be kept in.
PLANTED = {"phone": "+16285550117", "card": "4539 1488 0373 6122", "email": "history.caller@fastmail.com",
           "ssn": "078-05-1120"}
PLANTED_NOTE = f"call back on {PLANTED['phone']} or mail {PLANTED['email']}, ssn {PLANTED['ssn']}"
PLANTED_FORMS = sorted({*PLANTED.values(), "6285550117", "4539148803736122", "078051120"})


def retell_event(event, call_id, marker):
    """Retell's `call_ended` or `call_analyzed` payload (the fixtures of the provider
    mapping's tests) for `call_id`, carrying `marker` in its metadata (kept in the stored
    document, so two markers are two contents) and, once analysed, in its summary."""
    with open(os.path.join(RETELL_FIXTURES, f"retell_{event}.json")) as f:
        payload = json.load(f)
    call = payload["call"]
    call["call_id"] = call_id
    call.setdefault("metadata", {})["history_marker"] = marker
    call["metadata"]["caller_note"] = PLANTED_NOTE
    if "call_analysis" in call:
        call["call_analysis"]["call_summary"] = f"{call['call_analysis']['call_summary']} {marker}"
    return json.dumps(payload, separators=(",", ":")).encode()


def trace_of(call, generation):
    """The trace id an agent uses for `call`: one per conversation, derived from the call id
    (as pipecat's is from `conversation_id`), so the call sent again after an erase reuses
    it (`generation` 0), unless it started another (1)."""
    return trace_clients.trace_id(f"{call}#{generation}")


def export_body(call, marker, generation, span_ids, key):
    """A batch of spans of `call`'s trace `generation`, naming the call by `key`, each span
    carrying `marker` (an attribute the receiver keeps): OTLP JSON."""
    document = trace_clients.spans_json(call, span_ids, 1, trace=trace_of(call, generation), key=key,
                                        extra=[("history.marker", marker)])
    return json.dumps(document, separators=(",", ":")).encode()


def retell_hook(stack, secret):
    """A Retell webhook of the development workspace and agent, signed with `secret`:
    its URL."""
    return webhook_clients.hook(stack, "retell", secret)[0]


class Recorder:
    """Every attempt of every client, as Ops, times in seconds since the recorder began."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.t0 = clock()
        self.lock = threading.Lock()
        self.ops = []

    def now(self):
        return self.clock() - self.t0

    def attempt(self, kind, call, marker, send, timeout, client, attempt, target=None, note=""):
        """Runs `send(timeout)` (an HTTP request answering a devstack.stack.Answer) and
        records it."""
        start = self.now()
        try:
            a = send(timeout)
            op = Op(kind, call, marker, start, self.now(), a.status, a.body, client, attempt, a.headers, target, note)
        except (OSError, http.client.HTTPException):
            op = Op(kind, call, marker, start, None, None, None, client, attempt, {}, target, note)
        with self.lock:
            self.ops.append(op)
        return op

    def one_shot(self, kind, call, marker, send, **kw):
        return [self.attempt(kind, call, marker, send, ONE_SHOT_TIMEOUT, "one_shot", 0, **kw)]

    def retrying(self, kind, call, marker, send, rng, client="retrying", deadline=None, **kw):
        """Up to 4 attempts; none starts past `deadline` (the recorder's clock)."""
        ops = []
        for attempt in range(ATTEMPTS):
            op = self.attempt(kind, call, marker, send, RETRYING_TIMEOUT, client, attempt, **kw)
            ops.append(op)
            if op.status is not None and op.status not in RETRYABLE and op.status < 500:
                break
            if deadline is not None and self.now() > deadline:
                break
            wait = float(op.headers.get("retry-after", "0") or 0) if op.status else 0.0
            time.sleep(min(max(wait, 0.1 * 2 ** attempt), 2.0) + rng.uniform(0, 0.1))
        return ops


class Clients:
    """The requests of the history phase, against one stack's development workspace."""

    def __init__(self, stack, recorder, hook_url, hook_secret):
        self.stack = stack
        self.recorder = recorder
        self.hook_url = hook_url
        self.hook_secret = hook_secret
        self.ws = stack.dev["workspace_id"]
        # No retry starts past it (the recorder's clock); None: no limit.
        self.deadline = None

    def _run(self, client, kind, call, marker, send, rng, **kw):
        if client == "one_shot":
            return self.recorder.one_shot(kind, call, marker, send, **kw)
        return self.recorder.retrying(kind, call, marker, send, rng, client=client, deadline=self.deadline, **kw)

    def create(self, call, marker, body, client, rng, note="", headers=None):
        """Operation B, with `headers` besides the credential's (`X-Data-Policy`)."""
        return self._run(client, "create", call, marker,
                         lambda timeout: self.stack.post_create_call(body, timeout=timeout, headers=headers), rng,
                         note=note)

    def send(self, call, marker, body, client, rng, note=""):
        """Operation A."""
        return self._run(client, "send", call, marker,
                         lambda timeout: self.stack.post_send_call_data(body, timeout=timeout), rng, note=note)

    def webhook(self, event, call, marker, body, client, rng, note=""):
        """Retell's `call_ended` / `call_analyzed`, signed afresh for each attempt."""
        def post(timeout):
            headers = {"Content-Type": "application/json", **retell_signature(self.hook_secret, body)}
            return request("POST", self.hook_url, body, headers, timeout=timeout)

        return self._run(client, f"webhook_{event.removeprefix('call_')}", call, marker, post, rng, note=note)

    def export(self, call, marker, body, client, rng, note=""):
        """Spans of the call, to `POST /otel/v1/traces`."""
        url = f"{self.stack.url}/otel/v1/traces"
        return self._run(client, "export", call, marker,
                         lambda timeout: request("POST", url, body, self.stack.auth(), timeout=timeout), rng, note=note)

    def read_trace(self, target, timeout=ONE_SHOT_TIMEOUT):
        """Get Call Trace by the call's id."""
        url = f"{self.stack.url}/api/v1/public/call/{target}/trace?workspace_id={self.ws}"
        return request("GET", url, None, self.stack.auth(), timeout=timeout)

    def read(self, call, timeout=ONE_SHOT_TIMEOUT):
        """Get Call by provider call id (consistent)."""
        q = f"workspace_id={self.ws}&provider_call_id={call}"
        return request("GET", f"{self.stack.url}/api/v1/public/call?{q}", None, self.stack.auth(), timeout=timeout)

    def erase(self, call, rng, client="retrying", target=None, note=""):
        """Erase Call: the call's id by provider call id (a `resolve` op), then DELETE by id,
        retried with that id (an erase cut short is finished by sending it again)."""
        if target is None:
            found = self.recorder.retrying("resolve", call, None, lambda timeout: self.read(call, timeout), rng,
                                           client=client, deadline=self.deadline)[-1]
            if found.status != 200 or not isinstance(found.body, dict) or "id" not in found.body:
                return []
            target = found.body["id"]
        url = f"{self.stack.url}/api/v1/public/call/{target}?workspace_id={self.ws}"
        return self.recorder.retrying("erase", call, None,
                                      lambda timeout: request("DELETE", url, None, self.stack.auth(), timeout=timeout),
                                      rng, client=client, deadline=self.deadline, target=target, note=note)
