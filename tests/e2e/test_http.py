"""The HTTP API as a client sees it, with several instances per function and DynamoDB's
faults injected by name (each test names the fault it needs)."""
import json
import os
import signal
import threading
import time
import uuid

from devstack import programs
from devstack.stack import ROOT, request, wait_for


# `make chaos`, for a short run of its own.
chaos = programs.load("chaos")


def body_for(stack, call_id, summary="x", **fields):
    body = json.loads(stack.callgen("--minutes", 0.3, "--seed", 3))
    body["call_id"] = call_id
    body.setdefault("call_analysis", {})["call_summary"] = summary
    body.update(fields)
    return json.dumps(body).encode()


def at_once(n, fn):
    """Runs fn(i) for i in range(n) on n threads started together; answers the results."""
    results = [None] * n
    gate = threading.Barrier(n)

    def one(i):
        gate.wait()
        results[i] = fn(i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_several_instances_serve_requests_at_the_same_time(stack):
    # Each create's reply is held for a second: one instance would take 8 s for 8 calls.
    # Each is answered 201, or 202 where its write passed the 4 s budget (an instance's first
    # call also builds its clients and takes an id block, and `make test` runs the Rust
    # tests beside these on debug builds): then it is committed within seconds. Either way
    # no call waits for another instance's.
    stack.faults.add({"op": "PutItem", "fault": "delay", "seconds": 1.0, "times": 8, "table": stack.calls_table})
    ids = [unique("parallel") for _ in range(8)]
    bodies = [body_for(stack, call_id) for call_id in ids]
    started = time.time()
    answers = at_once(8, lambda i: stack.post_create_call(bodies[i]))
    elapsed = time.time() - started
    assert {a.status for a in answers} <= {201, 202}, answers
    assert sum(a.status == 201 for a in answers) >= 4, answers
    assert elapsed < 5, f"8 requests took {elapsed:.1f} s: not served concurrently"
    for call_id, answer in zip(ids, answers):
        if answer.status == 202:
            assert wait_for(lambda: stack.get_call(call_id), 30), f"{call_id} (202) was never committed"


def test_concurrent_first_submissions_of_a_large_call_give_one_id_and_one_new(stack):
    body = json.loads(stack.callgen("--bytes", 1_800_000, "--seed", 9))
    body["call_id"] = unique("big-race")
    raw = json.dumps(body).encode()
    answers = at_once(6, lambda i: stack.post_create_call(raw, timeout=60))
    statuses = sorted(a.status for a in answers)
    assert statuses == [200] * 5 + [201], answers
    assert len({a.body["id"] for a in answers}) == 1
    assert sum(a.body["is_new"] for a in answers) == 1
    stored = stack.get_call(body["call_id"])
    assert stored["raw"].encode() == raw and stored.get("revisions") == []


def test_concurrent_revisions_are_all_kept(stack):
    call_id = unique("revisions")
    first = stack.post_create_call(body_for(stack, call_id, "v0"))
    assert first.status == 201
    bodies = [body_for(stack, call_id, f"v{i + 1}") for i in range(6)]
    answers = at_once(6, lambda i: stack.post_create_call(bodies[i]))
    # Each is stored now (200), or, when its conditional write kept meeting the others past
    # its budget (a loaded machine), kept as pending and committed within seconds (202).
    assert all(a.status in (200, 202) for a in answers), answers
    assert {a.body["id"] for a in answers if a.status == 200} == {first.body["id"]}
    everything = set(bodies) | {body_for(stack, call_id, "v0")}
    deadline = time.time() + 30
    while True:
        stored = stack.get_call(call_id)
        kept = {stored["raw"].encode()} | {r["raw"].encode() for r in stored["revisions"]}
        if kept == everything or time.time() > deadline:
            break
        time.sleep(0.5)
    assert kept == everything
    if all(a.status == 200 for a in answers):
        assert stored["current"]["revision"] == 7


def committed(stack, call_id, revision=1, within=30):
    """The call once commit-pending stored it at `revision` (it runs every few seconds
    locally), or None."""
    deadline = time.time() + within
    while time.time() < deadline:
        stored = stack.get_call(call_id)
        if stored is not None and stored["current"]["revision"] == revision:
            return stored
        time.sleep(0.5)
    return None


def test_a_call_storage_cannot_take_in_time_is_accepted_and_committed_once_it_can(stack):
    call_id = unique("transient")
    body = body_for(stack, call_id)
    for fault in ("conflict", "throttle", "not_found"):
        stack.faults.add({"op": "PutItem", "fault": fault, "times": 1000, "table": stack.calls_table})
        a = stack.post_create_call(body)
        assert (a.status, a.body) == (202, {"provider_call_id": call_id, "status": "accepted"}), (fault, a)
        assert a.headers.get("x-request-id"), (fault, a.headers)
        stack.faults.clear()
    stored = committed(stack, call_id)
    assert stored is not None and stored["raw"].encode() == body, "committed by commit-pending"
    a = stack.post_create_call(body)
    assert (a.status, a.body["is_new"], a.body["id"]) == (200, False, stored["id"])


def test_a_revision_whose_transaction_is_throttled_is_accepted_and_committed(stack):
    call_id = unique("cancelled")
    assert stack.post_create_call(body_for(stack, call_id, "one")).status == 201
    stack.faults.add({"op": "TransactWriteItems", "fault": "cancel_throttle", "item": 1, "times": 1000,
                      "table": stack.calls_table})
    a = stack.post_create_call(body_for(stack, call_id, "two"))
    assert a.status == 202, a
    stack.faults.clear()
    stored = committed(stack, call_id, revision=2)
    assert stored is not None and stored["raw"].encode() == body_for(stack, call_id, "two")


def test_a_lost_reply_to_the_create_still_answers_new(stack):
    call_id = unique("lost-reply")
    body = body_for(stack, call_id)
    stack.faults.add({"op": "PutItem", "fault": "lost_reply", "times": 1, "table": stack.calls_table})
    a = stack.post_create_call(body)
    assert (a.status, a.body["is_new"]) == (201, True), a
    again = stack.post_create_call(body)
    assert (again.status, again.body["is_new"], again.body["id"]) == (200, False, a.body["id"])


def test_a_cost_dynamodb_cannot_hold_is_stored(stack):
    call_id = unique("cost")
    a = stack.post_create_call(body_for(stack, call_id, call_cost=1e200))
    assert a.status == 201, a
    assert stack.get_call(call_id)["current"]["document"]["call"]["call_cost"] == 1e200


def test_the_same_content_under_another_agent_is_a_revision(stack):
    ws = stack.dev["workspace_id"]
    other = unique("other-agent")
    agent = stack.ctl("agent", "create", "--workspace", ws, "--remote-id", other, "--name", "Other agent")
    call_id = unique("moved")
    body = body_for(stack, call_id)
    first = stack.post_create_call(body)
    moved = stack.post_create_call(body, agent=other)
    assert (first.status, moved.status, moved.body["id"]) == (201, 200, first.body["id"])
    stored = stack.get_call(call_id)
    assert stored["agent_id"] == agent["id"] and stored["current"]["revision"] == 2


def test_a_revoked_key_stops_working_within_the_cache_bound_even_after_a_freeze(stack):
    from conftest import CACHE_TTL_SECS

    ws = stack.dev["workspace_id"]
    key = stack.ctl("key", "create", "--workspace", ws, "--name", "to-revoke")
    headers = {"Authorization": f"Bearer {key['token']}", "Content-Type": "application/json"}
    url = f"{stack.url}/api/v1/public/call?workspace_id={ws}&agent_remote_identifier={stack.dev['agent_remote_identifier']}"
    bodies = [body_for(stack, unique("revoke")) for _ in range(8)]
    # Every instance it reaches caches the key.
    assert {a.status for a in at_once(8, lambda i: request("POST", url, bodies[i], headers))} == {201}
    pids = stack.function_pids()
    assert pids, "no function processes found"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        stack.ctl("key", "revoke", key["public_id"])
        time.sleep(CACHE_TTL_SECS + 1.5)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    answers = at_once(8, lambda i: request("POST", url, bodies[i], headers))
    assert [a.status for a in answers] == [401] * 8, answers


def test_a_workspace_over_its_send_budget_loses_no_call_across_instances(stack):
    # A workspace of its own, limited to 5 sends per second by callctl (a flood would be
    # more than 50 in a second: none here is refused).
    ws = stack.ctl("workspace", "create", "--name", unique("limited"))["id"]
    stack.ctl("agent", "create", "--workspace", ws, "--remote-id", "desk")
    key = stack.ctl("key", "create", "--workspace", ws, "--name", "k")["token"]
    assert stack.ctl("workspace", "limit", "--id", ws, "--per-second", 5)["rate_limit"] == 5
    url = f"{stack.url}/api/v1/public/call?workspace_id={ws}&agent_remote_identifier=desk"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    sent = 48
    ids = [unique("limited") for _ in range(sent)]
    bodies = [body_for(stack, i) for i in ids]
    started = time.time()
    answers = at_once(sent, lambda i: request("POST", url, bodies[i], headers))
    seconds = int(time.time()) - int(started) + 1
    created = [a for a in answers if a.status == 201]
    accepted = [a for a in answers if a.status == 202]
    assert len(created) + len(accepted) == sent, [a for a in answers if a.status not in (201, 202)]
    # Stored at once: at most the budget, plus the one request each instance takes
    # uncounted, in each second they spanned; the rest accepted, to be committed at the
    # workspace's rate.
    most = (5 + stack.instances) * seconds
    assert 1 <= len(created) <= most, (len(created), seconds)
    if sent > most:
        assert accepted, "no send over the budget was accepted for later"
    for a in accepted:
        assert a.body == {"provider_call_id": a.body["provider_call_id"], "status": "accepted"}
        assert a.headers.get("x-request-id")
    # The dev workspace is not refused meanwhile (stored, or accepted when the local
    # stack, busy with the burst on two cores, cannot commit within the 4 s budget).
    other = stack.post_create_call(body_for(stack, unique("unlimited")))
    assert other.status in (201, 202), other
    # Every accepted call is committed by commit-pending, and a replay then answers 200
    # with its id.
    deadline = time.time() + 90
    while time.time() < deadline and any(stack.get_call(i, workspace=ws) is None for i in ids):
        time.sleep(1)
    stored = [stack.get_call(i, workspace=ws) for i in ids]
    assert all(stored), [i for i, c in zip(ids, stored) if c is None]
    replay = request("POST", url, bodies[0], headers)
    assert replay.status == 200 and replay.body["is_new"] is False, replay


def test_a_flood_of_sends_gets_429_with_retry_after(stack):
    ws = stack.ctl("workspace", "create", "--name", unique("flood"))["id"]
    stack.ctl("agent", "create", "--workspace", ws, "--remote-id", "desk")
    key = stack.ctl("key", "create", "--workspace", ws, "--name", "k")["token"]
    stack.ctl("workspace", "limit", "--id", ws, "--per-second", 1)
    url = f"{stack.url}/api/v1/public/call?workspace_id={ws}&agent_remote_identifier=desk"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    bodies = [body_for(stack, unique("flood")) for _ in range(48)]
    answers = at_once(48, lambda i: request("POST", url, bodies[i], headers))
    limited = [a for a in answers if a.status == 429]
    assert {a.status for a in answers} <= {201, 202, 429}, answers
    assert limited, "48 sends at once at a budget of 1 a second (10 the flood threshold) were all taken"
    for a in limited:
        assert a.headers["retry-after"] == "1"
        assert a.headers["content-type"] == "application/problem+json"
        assert a.headers.get("x-request-id")
        assert a.body["status"] == 429


def test_a_short_chaos_run_keeps_every_promise(stack):
    report, injected = chaos.run(stack, seconds=20, seed=7, workers=6)
    assert sum(injected.values()) > 0, "faults were injected"
    assert report["acknowledged"] > 0
    assert {k: report[k] for k in chaos.BROKEN} == {k: 0 for k in chaos.BROKEN}, report
