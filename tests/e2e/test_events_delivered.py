"""Events out (issue 33), delivered: each call stored, revised or erased reaches the
workspace's endpoint (a loopback receiver, devstack.receiver) signed as Standard Webhooks
has it, verified with the reference library (`standardwebhooks`), never for a change that
did not happen; a failing endpoint gets the same message again (the same webhook-id) on the
schedule, a receiver's Retry-After first; 410 disables an endpoint, and so do 5 days of
failures; during a rotation both secrets sign. The stack's EVENTS_RETRY_SCALE makes the
schedule's waits a hundred times shorter (conftest)."""
import json
import os
import subprocess
import time
import uuid

import boto3
import pytest
import standardwebhooks

from devstack.receiver import Receiver
from devstack.stack import request

from test_list_erase import body_for


class Tenant:
    """A workspace with an agent, a key for everything, and an endpoint at `path` of
    `receiver` taking `events` (none: every type)."""

    def __init__(self, stack, receiver, path="/in", events=()):
        self.stack = stack
        self.ws = stack.ctl("workspace", "create", "--name", f"events-{uuid.uuid4().hex[:8]}")["id"]
        stack.ctl("agent", "create", "--workspace", self.ws, "--remote-id", "bot", "--name", "Bot")
        self.key = stack.ctl("key", "create", "--workspace", self.ws, "--name", "all",
                             "--scope", "send", "--scope", "read", "--scope", "erase")["token"]
        more = [a for e in events for a in ("--event", e)]
        made = stack.ctl("endpoint", "create", "--workspace", self.ws, "--url", receiver.url(path), *more)
        self.endpoint, self.secret = made["endpoint"]["id"], made["secret"]

    def headers(self):
        return {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}

    def post(self, body):
        url = f"{self.stack.url}/api/v1/public/call?workspace_id={self.ws}&agent_remote_identifier=bot"
        answer = request("POST", url, json.dumps(body).encode(), self.headers())
        assert answer.status in (200, 201), answer
        return answer.body

    def erase(self, call_id):
        url = f"{self.stack.url}/api/v1/public/call/{call_id}?workspace_id={self.ws}"
        answer = request("DELETE", url, None, self.headers())
        assert answer.status == 200, answer
        return answer.body

    def endpoint_state(self):
        return next(e for e in self.stack.ctl("endpoint", "list", "--workspace", self.ws)["endpoints"]
                    if e["id"] == self.endpoint)


def verified(secret, got):
    """The event `got` carried, once the reference library verified its signature."""
    return standardwebhooks.Webhook(secret).verify(got.body, got.headers)


# The npm standardwebhooks library (installed by the Makefile: tests/e2e/node).
NPM_VERIFIER = os.path.join(os.path.dirname(__file__), "node", "verify.mjs")


def npm_verified(cases):
    """What the npm `standardwebhooks` library makes of each (secret, received event): its
    event, or the error it raised, as {"ok", "event" | "error"}."""
    lines = "".join(json.dumps({"secret": secret, "body": got.body.decode(), "headers": got.headers}) + "\n"
                    for secret, got in cases)
    out = subprocess.run(["node", NPM_VERIFIER], input=lines, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def events(secret, received):
    return [(e["type"], e["data"]["id"], e["data"].get("revision")) for e in (verified(secret, g) for g in received)]


@pytest.fixture()
def receiver():
    with Receiver() as r:
        yield r


def test_each_stored_revised_and_erased_call_reaches_the_endpoint_verified(stack, receiver):
    t = Tenant(stack, receiver)
    first = t.post(body_for("ev-1", 1_763_700_000))
    t.post(body_for("ev-1", 1_763_700_000))  # a replay: no change, no event
    said = [{"role": "agent", "text": "Goodbye.", "start_ms": 0, "end_ms": 900}]
    t.post(body_for("ev-1", 1_763_700_000, transcript_with_tool_calls=said))  # a revision
    call_id = first["id"]
    assert receiver.wait(lambda got: len(got) >= 2), events(t.secret, receiver.received())
    t.erase(call_id)
    assert receiver.wait(lambda got: len(got) >= 3), events(t.secret, receiver.received())
    time.sleep(2)  # nothing more comes (the replay made none)
    got = receiver.received()
    # In any order: ordering is not promised (the queue's messages are sent at once).
    assert sorted(events(t.secret, got), key=str) == sorted(
        [("call.stored", call_id, 1), ("call.revised", call_id, 2), ("call.erased", call_id, None)], key=str)
    by_type = {verified(t.secret, g)["type"]: g for g in got}
    stored = verified(t.secret, by_type["call.stored"])
    assert stored["data"]["provider_call_id"] == "ev-1" and stored["data"]["agent_remote_identifier"] == "bot"
    assert stored["data"]["links"]["self"] == f"{stack.url}/api/v1/public/call/{call_id}?workspace_id={t.ws}"
    assert all(b"Hello" not in g.body and b"Goodbye" not in g.body for g in got), "thin: nothing a caller said"
    erased = verified(t.secret, by_type["call.erased"])
    assert set(erased["data"]) == {"id", "provider_call_id", "erased_at"}
    assert len({g.headers["webhook-id"] for g in got}) == 3


def test_an_endpoint_gets_only_the_types_it_takes(stack, receiver):
    t = Tenant(stack, receiver, events=["call.erased"])
    call_id = t.post(body_for("ev-only", 1_763_700_000))["id"]
    t.erase(call_id)
    assert receiver.wait(lambda got: len(got) >= 1)
    time.sleep(2)
    assert events(t.secret, receiver.received()) == [("call.erased", call_id, None)]


def test_a_failing_endpoint_gets_the_same_message_again_until_it_takes_it(stack, receiver):
    receiver.answer("/in", 503, 500)
    t = Tenant(stack, receiver)
    call_id = t.post(body_for("ev-retry", 1_763_700_000))["id"]
    assert receiver.wait(lambda got: any(g.status == 200 for g in got), timeout=60), \
        [(g.status, g.at) for g in receiver.received()]
    got = receiver.received()
    assert [g.status for g in got] == [503, 500, 200]
    assert len({g.headers["webhook-id"] for g in got}) == 1, "one message, one webhook-id"
    assert [verified(t.secret, g)["data"]["id"] for g in got] == [call_id] * 3, "each attempt signed afresh"
    # The attempts, as callctl shows them.
    attempts = stack.ctl("endpoint", "attempts", "--endpoint", t.endpoint)["attempts"]
    assert [(a["attempt"], a["status"]) for a in attempts] == [(1, 503), (2, 500), (3, 200)], attempts
    assert attempts[2]["answer"] == "ok" and all(a["message_id"] == got[0].headers["webhook-id"] for a in attempts)
    assert t.endpoint_state()["failing_since"] is None, "the success ended the failing streak"
    # Replayed by hand: the same message again.
    stack.ctl("endpoint", "replay", "--endpoint", t.endpoint, "--message", got[0].headers["webhook-id"])
    assert receiver.wait(lambda got: len(got) >= 4)
    again = receiver.received()[3]
    assert again.headers["webhook-id"] == got[0].headers["webhook-id"] and again.body == got[0].body


def test_our_own_failures_are_no_attempts(stack, receiver):
    """The endpoint cannot be read for two receipts of the message (every try of the SDK's
    three fails): it comes back, and its first attempt at the receiver is attempt 1, not
    the message's third receipt."""
    t = Tenant(stack, receiver)
    stack.faults.add({"op": "GetItem", "fault": "internal", "contains": t.endpoint, "times": 6})
    call_id = t.post(body_for("ev-ours", 1_763_700_000))["id"]
    assert receiver.wait(lambda got: len(got) >= 1, timeout=60)
    assert [verified(t.secret, g)["data"]["id"] for g in receiver.received()] == [call_id]
    assert sum(r["fired"] for r in stack.faults.rules()) == 6, "both receipts failed"
    attempts = stack.ctl("endpoint", "attempts", "--endpoint", t.endpoint)["attempts"]
    assert [(a["attempt"], a["status"]) for a in attempts] == [(1, 200)], attempts


def test_an_endpoint_gets_no_event_of_a_change_made_before_it(stack, receiver):
    """A change fanned out late (here the fan-out cannot list the workspace's endpoints until
    one is made): the endpoint made after it is not sent its event; the next change's it is."""
    t = Tenant(stack, receiver, path="/first")
    stack.ctl("endpoint", "delete", "--endpoint", t.endpoint)
    rule = stack.faults.add({"op": "Query", "fault": "internal", "contains": f'"WS#{t.ws}"', "times": 1000})
    call_id = t.post(body_for("ev-before", 1_763_700_000))["id"]
    time.sleep(2)  # the record is handed back meanwhile
    made = stack.ctl("endpoint", "create", "--workspace", t.ws, "--url", receiver.url("/later"))
    stack.faults.remove(rule)
    said = [{"role": "agent", "text": "Goodbye.", "start_ms": 0, "end_ms": 900}]
    t.post(body_for("ev-before", 1_763_700_000, transcript_with_tool_calls=said))
    assert receiver.wait(lambda got: len(got) >= 1)
    time.sleep(2)
    assert events(made["secret"], receiver.received()) == [("call.revised", call_id, 2)]


def test_a_retry_queued_twice_is_made_once(stack, receiver):
    """A failed attempt's next copy queued twice (SQS delivers a message twice now and then;
    an invocation that timed out after queueing it comes back and queues it again): the
    second attempt is made once, and so is each after it."""
    receiver.answer("/in", 500)
    t = Tenant(stack, receiver)
    call_id = t.post(body_for("ev-twins", 1_763_700_000))["id"]
    # The first attempt (500), then its next copy; a twin of that copy, queued beside it.
    assert receiver.wait(lambda got: len(got) >= 1)
    first = receiver.received()[0]
    event = json.loads(first.body)
    twin = {"endpoint_id": t.endpoint, "workspace_id": t.ws, "message_id": first.headers["webhook-id"],
            "type": "call.stored", "call_id": call_id, "revision": 1, "body": first.body.decode(),
            "changed_at_ms": 0, "attempts_made": 1}
    assert event["type"] == "call.stored"
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=stack.dynamodb, aws_access_key_id="local",
                       aws_secret_access_key="local")
    sqs.send_message(QueueUrl=stack.env["EVENTS_QUEUE_URL"], MessageBody=json.dumps(twin))
    assert receiver.wait(lambda got: any(g.status == 200 for g in got), timeout=30)
    time.sleep(3)
    got = receiver.received()
    assert [g.status for g in got] == [500, 200], [(g.status, g.at) for g in got]
    attempts = stack.ctl("endpoint", "attempts", "--endpoint", t.endpoint)["attempts"]
    assert [(a["attempt"], a["status"]) for a in attempts] == [(1, 500), (2, 200)], attempts


def test_a_replayed_message_has_a_schedule_of_its_own(stack, receiver):
    """A message retried until taken, then replayed by hand: the replay's own retry is not
    taken for a twin of the first run's (whose attempts claimed 2 and 3)."""
    receiver.answer("/in", 500, 500)
    t = Tenant(stack, receiver)
    t.post(body_for("ev-replayed", 1_763_700_000))
    assert receiver.wait(lambda got: [g.status for g in got] == [500, 500, 200], timeout=60)
    message = receiver.received()[0].headers["webhook-id"]
    receiver.answer("/in", 500)
    stack.ctl("endpoint", "replay", "--endpoint", t.endpoint, "--message", message)
    assert receiver.wait(lambda got: [g.status for g in got] == [500, 500, 200, 500, 200], timeout=60), \
        [g.status for g in receiver.received()]


def test_a_receivers_retry_after_is_honoured(stack, receiver):
    receiver.answer("/in", (429, {"Retry-After": "4"}))
    t = Tenant(stack, receiver)
    t.post(body_for("ev-later", 1_763_700_000))
    assert receiver.wait(lambda got: len(got) >= 2, timeout=30)
    first, second = receiver.received()[:2]
    assert first.status == 429 and second.status == 200
    # The schedule's wait is about 1 s here (5 s a hundred times shorter); Retry-After's 4 s
    # are never shortened.
    assert second.at - first.at >= 3.9, second.at - first.at


def attempts(stack, t):
    return stack.ctl("endpoint", "attempts", "--endpoint", t.endpoint)["attempts"]


def test_a_410_disables_the_endpoint(stack, receiver):
    receiver.answer("/in", 410)
    t = Tenant(stack, receiver)
    t.post(body_for("ev-gone", 1_763_700_000))
    assert receiver.wait(lambda got: len(got) >= 1)
    deadline = time.time() + 10
    while t.endpoint_state()["disabled"] is None and time.time() < deadline:
        time.sleep(0.2)
    assert t.endpoint_state()["disabled"] == "gone"
    t.post(body_for("ev-gone-2", 1_763_700_000))
    # Kept as not sent, and nothing more is sent to it.
    deadline = time.time() + 20
    while len(attempts(stack, t)) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert [a["error"] for a in attempts(stack, t)][1] == "not sent: the endpoint is disabled"
    assert len(receiver.received()) == 1, "nothing more is sent to it"
    # Once enabled, recover sends both (neither was taken).
    stack.ctl("endpoint", "enable", "--endpoint", t.endpoint)
    recovered = stack.ctl("endpoint", "recover", "--endpoint", t.endpoint, "--since", "1h")["queued"]
    assert len(recovered) == 2, recovered
    assert receiver.wait(lambda got: sum(g.status == 200 for g in got) >= 2)


def test_an_endpoint_failing_for_five_days_is_disabled(stack, receiver):
    receiver.answer("/in", *([500] * 20))
    t = Tenant(stack, receiver)
    # Its failing streak began five days and a minute ago (as if every delivery since had
    # failed).
    table = boto3.resource("dynamodb", region_name="us-east-1", endpoint_url=stack.dynamodb,
                           aws_access_key_id="local", aws_secret_access_key="local").Table(stack.env["DIRECTORY_TABLE"])
    since = int(time.time() * 1000) - 5 * 86_400_000 - 60_000
    table.update_item(Key={"pk": f"EP#{t.endpoint}", "sk": "EP"}, UpdateExpression="SET failing_since = :s",
                      ExpressionAttributeValues={":s": since})
    t.post(body_for("ev-failing", 1_763_700_000))
    assert receiver.wait(lambda got: len(got) >= 1)
    deadline = time.time() + 10
    while t.endpoint_state()["disabled"] is None and time.time() < deadline:
        time.sleep(0.2)
    state = t.endpoint_state()
    assert state["disabled"] == "failing" and state["failing_since"] == since, state
    time.sleep(3)
    assert len(receiver.received()) == 1, "no retry once disabled"


def test_during_a_rotation_both_secrets_sign(stack, receiver):
    t = Tenant(stack, receiver)
    rotated = stack.ctl("endpoint", "rotate", "--endpoint", t.endpoint)["secret"]
    t.post(body_for("ev-rotated", 1_763_700_000))
    assert receiver.wait(lambda got: len(got) >= 1)
    got = receiver.received()[0]
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    # Each secret alone verifies it: a receiver still on the old one, and one moved on.
    assert verified(t.secret, got)["type"] == "call.stored"
    assert verified(rotated, got)["type"] == "call.stored"
    stack.ctl("endpoint", "rotate", "--endpoint", t.endpoint, "--now")
    t.post(body_for("ev-rotated-2", 1_763_700_000))
    assert receiver.wait(lambda got: len(got) >= 2)
    later = receiver.received()[1]
    assert len(later.headers["webhook-signature"].split(" ")) == 1
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        verified(rotated, later)


def test_the_npm_library_verifies_every_event_and_both_secrets_of_a_rotation(stack, receiver):
    """The same events, verified by the npm `standardwebhooks` library: each type, and during
    a rotation each secret alone; a body changed on the way, or the wrong secret, refused."""
    t = Tenant(stack, receiver)
    call_id = t.post(body_for("ev-npm", 1_763_700_000))["id"]
    said = [{"role": "agent", "text": "Goodbye.", "start_ms": 0, "end_ms": 900}]
    t.post(body_for("ev-npm", 1_763_700_000, transcript_with_tool_calls=said))
    assert receiver.wait(lambda got: len(got) >= 2)
    rotated = stack.ctl("endpoint", "rotate", "--endpoint", t.endpoint)["secret"]
    t.erase(call_id)
    assert receiver.wait(lambda got: len(got) >= 3)
    got = receiver.received()
    checked = npm_verified([(t.secret, g) for g in got])
    assert all(c["ok"] for c in checked), checked
    assert sorted((c["event"]["type"], c["event"]["data"]["id"]) for c in checked) == [
        ("call.erased", call_id), ("call.revised", call_id), ("call.stored", call_id)]
    erased = next(g for g in got if json.loads(g.body)["type"] == "call.erased")
    assert len(erased.headers["webhook-signature"].split(" ")) == 2, "both secrets sign during the overlap"
    tampered = type(erased)(erased.path, erased.headers, erased.body.replace(b"call.erased", b"call.stored"), 200)
    stranger = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="  # a secret of no endpoint's
    cases = [(rotated, erased), (t.secret, erased), (rotated, tampered), (stranger, erased)]
    assert [c["ok"] for c in npm_verified(cases)] == [True, True, False, False]
