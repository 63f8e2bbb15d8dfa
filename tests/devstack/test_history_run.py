"""The history phase's driver (scripts/history_run.py) and clients (devstack/history_clients.py)
where they need no stack: a seed gives one schedule, Retell's verifier accepts our
signatures, every fault rule is one the fault layer takes, frames are read back, and a
saved history checks the same again."""
import json
import random

import zstandard

from devstack import programs
from devstack.faults import Rule
from devstack.history import Op
from devstack.history_clients import Recorder, retell_event, retell_signature
from devstack.stack import Answer

run = programs.load("history_run")

B = json.dumps({"call_id": "x", "call_type": "phone_call", "transcript_with_tool_calls": []}).encode()
A = json.dumps({"agentId": "agt_demo", "callId": "x", "transcript": [{"role": "user", "content": "hi"}]}).encode()
TEMPLATES = run.Templates(B, B, A, A)


def test_a_seed_gives_one_schedule_of_its_own_call_ids():
    first = run.plan(11, 300, TEMPLATES, "agt_1")
    assert first == run.plan(11, 300, TEMPLATES, "agt_1")
    assert first != run.plan(12, 300, TEMPLATES, "agt_1")
    assert {p.call for p in first if not p.note.startswith("shape")} <= {f"hist-11-c{i}" for i in range(4)} | {
        "hist-11-w0", "hist-11-w1", "hist-11-m0", "hist-11-m1"}
    assert {p.call for p in first if p.note.startswith("shape")} <= {f"hist-11-s{i}" for i in range(6)} | {
        f"hist-11-t{i}" for i in range(3)} | {"hist-11-p0", "hist-11-p1"}
    # The tightening shapes (issue 32): B with X-Data-Policy, then A and B again without it.
    tightened = [p for p in first if p.note == "shape: a, b tightened, a, b"]
    assert tightened and all(p.then[0].headers == (("X-Data-Policy", "metadata_only"),) for p in tightened)
    assert all(not q.headers for p in tightened for q in (p, *p.then[1:]))
    kinds = {p.kind for p in first}
    assert kinds == {"create", "send", "erase", "webhook_ended", "webhook_analyzed", "export"}, kinds
    steps = {q.kind for p in first for q in p.then}
    assert steps == {"create", "erase", "pause", "export"}, steps
    assert any(p.note == "replay" for p in first) and any(p.note == "large" for p in first)
    assert {p.client for p in first} == {"one_shot", "retrying"}


def test_each_content_carries_its_own_marker_and_a_replay_sends_the_same_bytes():
    schedule = run.plan(3, 400, TEMPLATES, "agt_1")
    pattern = run.marker_pattern(3)
    bodies = {}
    for p in (q for p in schedule for q in (p, *p.then)):
        if p.kind in ("erase", "pause"):
            assert p.marker is None and p.client in ("retrying", "")
            continue
        assert run.markers_in(p.body, pattern) == {p.marker}, p
        assert bodies.setdefault(p.marker, p.body) == p.body, "a marker is one content, byte for byte"
    sends = [json.loads(p.body) for p in schedule if p.kind == "send"]
    assert all(list(s)[0] == "agentId" and s["agentId"] == "agt_1" for s in sends), "agentId first"


def test_shapes_are_woven_in_without_changing_the_rest_of_the_schedule():
    shaped, plain = run.plan(7, 600, TEMPLATES, "agt_1"), run.plan(7, 600, TEMPLATES, "agt_1", shapes=0)
    rest = [(p.kind, p.call, p.client, p.note) for p in shaped if not p.then]
    # (Trace shapes have a rate and a generator of their own: in both.)
    assert rest == [(p.kind, p.call, p.client, p.note) for p in plain if not p.then], "the same decisions, shapes aside"
    # (Tightening shapes too: `TIGHTEN_SHAPES`, in both.)
    notes = {p.note for p in shaped
             if p.then and not p.note.startswith("shape: spans") and p.note != "shape: a, b tightened, a, b"}
    assert notes == {"shape: erase then the same", "shape: a, b, then a again", "shape: a, b, a, b",
                     "shape: a answered late, then b", "shape: a send during its erase"}, notes
    aimed = [p for p in shaped if p.arm or any(q.arm for q in p.then)]
    assert aimed, "some shapes bring their own fault"
    for p in (p for p in shaped if p.note == "shape: a, b, then a again" and p.arm):
        assert p.disarm and {r["fault"] for r in p.arm} == {"internal", "delay"}
    for p in (p for p in shaped if p.note == "shape: a send during its erase"):
        erase, during = p.then
        assert erase.kind == "erase" and erase.alongside is None and 0 <= during.alongside <= 0.05
        assert during.marker != p.marker, "different content, sent while the erase runs"
    for p in (p for p in shaped if p.note == "shape: erase then the same"):
        assert [q.kind for q in p.then] == ["erase", "create"] and p.then[1].body == p.body


def test_spans_are_exported_on_the_schedules_calls_and_trace_shapes_erase_between():
    schedule = run.plan(13, 2000, TEMPLATES, "agt_1")
    pattern = run.marker_pattern(13)
    exports = [q for p in schedule for q in (p, *p.then) if q.kind == "export"]
    assert len(exports) > 100
    traces = set()
    for p in exports:
        spans = json.loads(p.body)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        names = {a["key"]: a["value"]["stringValue"] for s in spans for a in s["attributes"] if "stringValue" in a["value"]}
        assert names.get("callingest.call_id", names.get("conversation.id")) == p.call
        assert names["history.marker"] == p.marker and run.markers_in(p.body, pattern) == {p.marker}
        traces.add((p.call, spans[0]["traceId"]))
    by_call = {}
    for call, trace in traces:
        by_call.setdefault(call, set()).add(trace)
    assert max(len(t) for t in by_call.values()) == 2, "a call's trace used again, or a new one"
    shapes = [p for p in schedule if p.note.startswith("shape: spans")]
    assert shapes and any(p.arm for p in shapes) and any(not p.arm for p in shapes)
    for p in shapes:
        assert p.kind == "export" and [q.kind for q in p.then] == ["create", "erase", "create", "export"]
        assert p.then[0].body == p.then[2].body, "the same call sent again"
        assert json.loads(p.body)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == \
            json.loads(p.then[3].body)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"], "the same trace"
        if p.arm:
            assert p.then[1].disarm and p.arm[0]["contains"] == '"{trace0}"'


def test_a_few_call_ids_get_both_create_calls_and_retells_reports():
    schedule = run.plan(9, 2000, TEMPLATES, "agt_1")
    mixed = [p for p in schedule if p.call.startswith("hist-9-m")]
    assert {p.call for p in mixed} == {"hist-9-m0", "hist-9-m1"}
    for call in ("hist-9-m0", "hist-9-m1"):
        kinds = {p.kind for p in mixed if p.call == call}
        assert {"create", "webhook_ended", "webhook_analyzed"} <= kinds, (call, kinds)
    assert any(p.note == "replay" for p in mixed)
    assert not any(p.call.startswith("hist-9-w") and p.kind == "create" for p in schedule), "the others stay apart"


def test_after_an_erase_the_call_is_created_again():
    schedule = run.plan(5, 600, TEMPLATES, "agt_1")
    for i, p in enumerate(schedule):
        if p.kind != "erase" or not p.call.startswith("hist-5-c"):
            continue
        following = next((q for q in schedule[i + 1:] if q.call == p.call and q.kind != "export"), None)
        assert following is None or following.kind in ("create", "erase"), following


def test_retells_reference_verifier_accepts_our_signature():
    from retell.lib.webhook_auth import verify

    body = retell_event("call_analyzed", "hist-1-w0", "hist-1-00001-mark")
    header = retell_signature("key_retell_history", body)["x-retell-signature"]
    assert verify(body.decode(), "key_retell_history", header)
    assert not verify(body.decode(), "another key", header)
    payload = json.loads(body)["call"]
    assert payload["call_id"] == "hist-1-w0" and "hist-1-00001-mark" in payload["call_analysis"]["call_summary"]


def test_every_fault_episode_is_rules_the_fault_layer_takes():
    for kind in run.EPISODES:
        for spec in run.episode_rules(kind, "calls", "directory", "frames"):
            Rule(spec, 1)  # raises on a fault the service cannot have
    assert run.fault_schedule(9)[:20] == run.fault_schedule(9)[:20]
    assert {k for k, _, _ in run.fault_schedule(9)} == set(run.EPISODES)


def test_markers_are_found_in_frames_of_several_zstd_frames():
    pattern = run.marker_pattern(4)
    c = zstandard.ZstdCompressor()
    data = c.compress(b'{"a":"hist-4-00001-mark"}') + c.compress(b'{"b":"hist-4-00002-mark","c":"hist-5-00003-mark"}')
    assert run.markers_in(run.unpacked(data), pattern) == {"hist-4-00001-mark", "hist-4-00002-mark"}
    assert run.markers_in(run.unpacked(b'{"raw":"hist-4-00009-mark"}'), pattern) == {"hist-4-00009-mark"}


def test_a_request_with_no_answer_is_recorded_without_an_end_and_retried():
    clock = iter(range(100))
    recorder = Recorder(clock=lambda: next(clock))
    answers = iter([OSError("timed out"), Answer(503, [("Retry-After", "0")], b"{}"), Answer(201, [], b'{"is_new":true}')])

    def send(timeout):
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    ops = recorder.retrying("create", "c1", "m1", send, random.Random(0))
    assert [(o.status, o.end is None, o.attempt) for o in ops] == [(None, True, 0), (503, False, 1), (201, False, 2)]
    assert ops[2].body == {"is_new": True} and ops[1].headers == {"retry-after": "0"}
    one = recorder.one_shot("create", "c1", "m1", lambda timeout: Answer(422, [], b"{}"))
    assert [(o.status, o.client) for o in one] == [(422, "one_shot")]


def test_a_saved_history_checks_the_same_again(tmp_path):
    ops = [Op("create", "c1", "m1", 0.0, 1.0, 201, {"is_new": True}),
           Op("create", "c1", "m2", 2.0, 3.0, 201, {"is_new": True})]
    final = {"calls": {"c1": {"revisions": [{"revision": 1, "marker": "m2", "token": "t", "current": True}],
                              "readable": True}},
             "bucket": [{"key": "frames/1/h/t-x", "prefix": "frames/", "markers": {"m2"}, "named": True, "call": "c1"}],
             "pending_left": 0, "failed_expected": False}
    path = tmp_path / "history.json"
    run.write_history(path, 8, 40.0, 2.0, ops, final)
    again = run.recheck(path, out=open(tmp_path / "out.txt", "w"))
    assert sorted(v.rule for v in again) == ["is_new_twice", "lost"]


def test_an_aimed_rule_names_its_call_only():
    class Clients:
        ws = 7
        stack = type("S", (), {"env": {"FRAMES_BUCKET": "frames-x"}, "calls_table": "calls-x"})()
    rule = {"op": "*", "fault": "internal", "rate": 1.0, "table": "{calls}", "contains": '"{pk}"'}
    assert run.aimed(rule, "hist-1-c2", Clients) == {"op": "*", "fault": "internal", "rate": 1.0, "table": "calls-x",
                                                     "contains": '"CALL#7#hist-1-c2"'}
    trace = run.aimed({"contains": '"{trace0}"'}, "hist-1-c2", Clients)["contains"]
    assert trace == f'"TRACE#7#{run.trace_of("hist-1-c2", 0)}"'
    s3 = run.aimed({"table": "{bucket}", "contains": "frames/{folder}", "times": 1}, "hist-1-c2", Clients)
    assert s3["table"] == "frames-x" and s3["contains"].startswith("frames/7/") and len(s3["contains"]) == 9 + 32
