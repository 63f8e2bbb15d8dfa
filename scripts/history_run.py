#!/usr/bin/env python3
"""`make chaos`'s `history` phase: a seeded, reproducible client schedule against the local
stack under scheduled DynamoDB and S3 faults, every request and answer recorded, then the
history checked against the state left once faults stopped (devstack/history.py).

    history_run.py [--seed N] [--operations 2000] [--seconds 300] [--workers 6]
                   [--instances 8] [--save history.json] [--shapes 0.03]
    history_run.py --recheck history.json      # the checker again on a saved history

Why: the other phases count promises per request; this one checks the order of things
across requests and erases (issue 28): content acknowledged and then lost or stored twice,
older content left current, erased content still readable (in the table or in any S3
object), two `is_new: true` for one call, pending submissions never committed, S3 objects
nothing names.

`random.Random(seed)` decides every operation in advance: a few call ids of operations A
and B (4), of Retell's webhook (2), and of both B and Retell's webhook (2), each id carrying the seed; new contents, replays of
earlier bytes, erases, the same call created again after an erase, Retell's call_ended and
call_analyzed; small calls and a few large ones (their frames go to S3); one-shot clients
(one attempt, 10 s) and retrying ones (up to 4). `random.Random(seed + 1)` decides the
faults, one episode at a time: DynamoDB `late`, `lost_reply`, `delay` (writes 4.5 s, past
the function's patience; queries 1.5 s), `throttle`, `internal`; S3 `late` on PutObject and DeleteObject,
`slowdown`, `internal`; outages of all of DynamoDB (3-8 s) or S3 (2-5 s); and once, a
commit-pending instance killed while it commits (the local gateway starts another in its
place, as Lambda does). Which thread sends
what, and when, is up to the machine: a seed replays the same schedule, not the same
interleaving.

Once the clients stop, with faults off: half-finished erases are finished (as the README
tells a client to), then until pending/ is empty (at most 60 s) and every request may have
landed (the checker's horizon), then every call is read (callctl: revisions and raw bodies;
the Calls table: each item's submission token; Get Call: readable or not) and every object
of the bucket scanned for the markers it holds.
"""
import argparse
import hashlib
import itertools
import json
import os
import random
import re
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass

from devstack import history, history_retention
from devstack.storage import aws, found_stored, unpacked
from devstack.history import HORIZON, Op, Timing
from devstack.history_clients import (PLANTED, PLANTED_FORMS, PLANTED_NOTE, Clients, Recorder, export_body, retell_event,
                                      retell_hook, trace_of)

CALLS = 4
HOOK_CALLS = 2
# Shapes act on call ids of their own: the random schedule's traffic on its few ids would
# bury the order a shape makes (an erase by another client, other content in between).
SHAPE_CALLS = 6
WORKERS = 6
OPERATIONS = 2000
SECONDS = 300
# Every 202 is committed within a minute once faults stop.
COMMIT_WITHIN = 60
HOOK_SECRET = "key_retell_history"
# The retention part's workspaces, of short days, so that its calls are due within the run.
PREPARE = history_retention.prepare
WRITES = ("PutItem", "TransactWriteItems", "UpdateItem", "DeleteItem")


def redacted_workspace(stack, seed):
    """A workspace of the run's own, `redacted`, with an agent of the development agent's
    remote id and a key of every scope: the development one's stand-in for the run (a
    fresh workspace, so that no instance holds an older policy in its cache)."""
    ws = stack.made_workspace(stack.ctl("workspace", "create", "--name", f"history-{seed}")["id"])
    stack.ctl("workspace", "policy", "--id", ws, "--storage", "redacted")
    stack.ctl("workspace", "limit", "--id", ws, "--per-second", 1000)
    agent = stack.ctl("agent", "create", "--workspace", ws, "--remote-id", stack.dev["agent_remote_identifier"],
                      "--name", "History agent")
    key = stack.ctl("key", "create", "--workspace", ws, "--name", "history", "--scope", "send", "--scope", "read",
                    "--scope", "erase", "--scope", "traces")["token"]
    return {**stack.dev, "workspace_id": ws, "agent_id": agent["id"], "api_key": key}


def personal_data(stack):
    """(where, key, value) of each planted value found stored anywhere (`personal_data_stored`)."""
    return found_stored(stack, PLANTED_FORMS)


def marker_pattern(seed):
    """The markers of a run's contents: `hist-<seed>-<n>-mark`."""
    return re.compile(rf"hist-{seed}-\d+-mark".encode())


# the schedule ---------------------------------------------------------------------------------
@dataclass
class Planned:
    kind: str  # create | send | erase | webhook_ended | webhook_analyzed | export | pause
    call: str
    marker: str | None
    body: bytes | None
    client: str
    note: str = ""
    # Operations the same client does next, in order (a shape: see `shape`).
    then: tuple = ()
    # In a shape: sent this many seconds after the step before it began, alongside it.
    alongside: float | None = None
    # In a shape: fault rules aimed at this call, armed just before this step (see `aimed`),
    # and whether every rule the shape armed is removed once this step is answered.
    arm: tuple = ()
    disarm: bool = False
    # Request headers besides the credential's (`X-Data-Policy`, see `TIGHTEN`).
    headers: tuple = ()


# A shape is a short sequence one client does on one call, in order, woven into the random
# schedule at this rate: the orders the review found broken are narrow (an erase, then the
# same bytes at once; content A accepted, B stored, then A again), and random interleaving
# alone rarely makes them. Their draws come from a generator of their own (seed + 3), so a
# seed's other operations are the same with or without them (`--shapes 0`: the schedule as
# recorded before they existed). The random schedule does not see them: its replays pick
# from its own contents.
SHAPES = 0.03
PAUSE = 3.0
# Call ids that get both Create Calls and Retell's reports, at this rate, from a generator of
# their own (seed + 5, so a seed's other operations stay as they were): the two rules of
# order (receipt, and a provider's later stage) meet there, and can go round (devstack.history
# `_Order`). Every report must still be stored once, in an order one of them allows.
MIXED = 0.05
MIXED_CALLS = 2
# Spans (issue 31), from a generator of their own (seed + 7): exports of a call's trace at
# this rate on the schedule's call ids, naming the call by `callingest.call_id` or pipecat's
# `conversation.id`, on one of two trace ids per call (the agent's trace used again after an
# erase, or a new one); and trace shapes on call ids of their own.
EXPORTS = 0.12
TRACE_SHAPES = 0.015
TRACE_CALLS = 3
# Tightening shapes (issue 32, `tighten_shape`) at this rate on call ids of their own, from a
# generator of their own (seed + 9, so a seed's other operations stay as they were). Create
# Call's contents carry their marker in `disconnection_reason` too, which metadata_only keeps,
# so the checker sees them stored.
TIGHTEN_SHAPES = 0.012
TIGHTEN_CALLS = 2
TIGHTENED = (("X-Data-Policy", "metadata_only"),)


def shape(rng, call, markers, templates):
    """One shape on `call`, each starting with a new create A (large, mostly):
    - its erase, and the same bytes again at once (a late S3 delete of the erased frame must
      not reach the call stored again);
    - B, a pause for commits, and A again (A accepted, committed below B, then sent again,
      is new content again);
    - B, A, B at once (replays and pending copies of two contents, in turns);
    - its erase, with B sent 0-50 ms after the erase began (a send the erase may or may not
      remove: either way, whole).
    Half of each bring the fault their order needs, aimed at this call through the fault
    layer's `contains` (a rule the episodes do not clear): the erase's S3 marker over the
    frame applied 3 s late; A's DynamoDB requests failing until A is answered (202) and its
    commit reading its copy 2 s late, so that B is stored first; in place of the third, A's
    write applied but its reply held 4.5 s (202), then B, then a pause; or the first S3
    write under the call's frames after the erase began applied 3 s late."""
    first_marker = next(markers)
    large = rng.random() < 0.7
    first = templates.create(call, first_marker, large)
    kind = rng.randrange(4)
    # Half the time a shape brings the fault its order needs, aimed at this call.
    aim = rng.random() < 0.5
    if kind == 0:
        # The erase's S3 write of its marker over the frame applied 3 s late, after the same
        # bytes were stored again (finding 2; the erase blanked frames with a DELETE then).
        late_marker = ({"service": "s3", "op": "PutObject", "fault": "late", "seconds": 3, "times": 1,
                        "table": "{bucket}", "contains": "frames/{folder}"},) if aim and large else ()
        return Planned("create", call, first_marker, first, "one_shot", "shape: erase then the same", (
            Planned("erase", call, None, None, "retrying", arm=late_marker),
            Planned("create", call, first_marker, first, "one_shot", "replay", disarm=bool(late_marker)),
        ))
    second_marker = next(markers)
    second = templates.create(call, second_marker, rng.random() < 0.5)
    if kind == 1:
        # A's direct write fails (202) and its commit reads its copy 2 s late, so B is stored
        # first and A committed below it; then A is sent again (finding 3).
        detour = ({"op": "*", "fault": "internal", "rate": 1.0, "table": "{calls}", "contains": '"{pk}"'},
                  {"service": "s3", "op": "GetObject", "fault": "delay", "seconds": 2, "times": 1,
                   "table": "{bucket}", "contains": "pending/{folder}"}) if aim else ()
        return Planned("create", call, first_marker, first, "one_shot", "shape: a, b, then a again", (
            Planned("create", call, second_marker, second, "one_shot"),
            Planned("pause", call, None, None, "", str(PAUSE)),
            Planned("create", call, first_marker, first, "one_shot", "replay"),
        ), arm=detour, disarm=bool(detour))
    if kind == 2 and aim:
        # A's write applied at once but its reply held past the function's patience (202,
        # and a pending copy of the same submission), then B stored: A once, not twice
        # (finding 4).
        late_reply = tuple({"op": op, "fault": "delay", "seconds": 4.5, "times": 1, "table": "{calls}",
                            "contains": '"{pk}"'} for op in ("PutItem", "TransactWriteItems"))
        return Planned("create", call, first_marker, first, "one_shot", "shape: a answered late, then b", (
            Planned("create", call, second_marker, second, "one_shot"),
            Planned("pause", call, None, None, "", str(PAUSE)),
        ), arm=late_reply)
    if kind == 2:
        return Planned("create", call, first_marker, first, "one_shot", "shape: a, b, a, b", (
            Planned("create", call, second_marker, second, "one_shot"),
            Planned("create", call, first_marker, first, "one_shot", "replay"),
            Planned("create", call, second_marker, second, "one_shot", "replay"),
        ))
    # The first S3 write under the call's frames once the erase begins (its marker over A's
    # frame, B's frame, or the marker a send that waits for the erase writes over its own)
    # applied 3 s late: it must not blank a frame stored since under the same key, nor
    # bring erased content back.
    late_write = ({"service": "s3", "op": "PutObject", "fault": "late", "seconds": 3, "times": 1,
                   "table": "{bucket}", "contains": "frames/{folder}"},) if aim else ()
    return Planned("create", call, first_marker, first, "one_shot", "shape: a send during its erase", (
        Planned("erase", call, None, None, "retrying", arm=late_write),
        Planned("create", call, second_marker, second, "one_shot", alongside=round(rng.uniform(0, 0.05), 3),
                disarm=bool(late_write)),
    ))


def tighten_shape(rng, call, markers, templates):
    """A, then B sent with `X-Data-Policy: metadata_only` (issue 32), then A and B again
    without it: the call's strictest policy binds them (`commit_bound`), A stored again
    restricted and B's bytes still B. Half the time B's write is applied at once but its
    reply held past the function's patience (202, and a pending copy of the same submission
    committed later): a bound submission committed twice, stored once."""
    first_marker, second_marker = next(markers), next(markers)
    first = templates.create(call, first_marker, rng.random() < 0.5)
    second = templates.create(call, second_marker, rng.random() < 0.5)
    late_reply = tuple({"op": op, "fault": "delay", "seconds": 4.5, "times": 1, "table": "{calls}",
                        "contains": '"{pk}"'} for op in ("PutItem", "TransactWriteItems")) if rng.random() < 0.5 else ()
    return Planned("create", call, first_marker, first, "one_shot", "shape: a, b tightened, a, b", (
        Planned("create", call, second_marker, second, "one_shot", "metadata_only", headers=TIGHTENED, arm=late_reply),
        Planned("create", call, first_marker, first, "one_shot", "replay"),
        Planned("pause", call, None, None, "", str(PAUSE)),
        Planned("create", call, second_marker, second, "one_shot", "replay", disarm=bool(late_reply)),
    ))


class Templates:
    """The bodies the schedule varies: callgen's, small and large, for each operation."""

    def __init__(self, small_b, large_b, small_a, large_a):
        self.b = {False: small_b, True: large_b}
        self.a = {False: small_a, True: large_a}

    @classmethod
    def generate(cls, stack, seed):
        gen = lambda *args: stack.callgen(*args, "--seed", seed % 1000 + 1)  # noqa: E731
        return cls(gen("--minutes", 0.3), gen("--bytes", 200_000), gen("--op", "a", "--minutes", 0.3),
                   gen("--op", "a", "--minutes", 20))

    def create(self, call, marker, large):
        body = json.loads(self.b[large])
        body["call_id"] = call
        body.setdefault("call_analysis", {})["call_summary"] = f"summary {marker}"
        body["call_analysis"]["caller_note"] = PLANTED_NOTE
        body.setdefault("metadata", {})["history_marker"] = marker
        body["disconnection_reason"] = marker  # kept under metadata_only too
        body["caller_phone_number"] = PLANTED["phone"]
        body.setdefault("transcript_with_tool_calls", []).insert(
            0, {"role": "user", "text": f"my card is {PLANTED['card']}", "start_ms": 0, "end_ms": 900})
        return json.dumps(body, separators=(",", ":")).encode()

    def send(self, call, marker, large, agent_id):
        body = json.loads(self.a[large])  # agentId first, as clients should write it
        body["agentId"] = agent_id
        body["callId"] = call
        body.setdefault("transcript", []).insert(0, {"role": "agent", "content": f"Hello {marker}"})
        body["transcript"].insert(1, {"role": "user", "content": PLANTED_NOTE})
        body.setdefault("metadata", {})["history_marker"] = marker
        return json.dumps(body, separators=(",", ":")).encode()


def mixed(rng, call, earlier, markers, templates):
    """One operation on a call id that gets both Create Calls and Retell's reports: new
    content of either, a replay of earlier bytes, or an erase."""
    client = "one_shot" if rng.random() < 0.6 else "retrying"
    what = rng.choices(["create", "ended", "analyzed", "replay", "erase"], [30, 25, 25, 15, 5])[0]
    if what == "erase":
        return Planned("erase", call, None, None, "retrying")
    if what == "replay" and earlier:
        kind, marker, body = rng.choice(earlier)
        return Planned(kind, call, marker, body, client, "replay")
    marker = next(markers)
    large = what == "create" and rng.random() < 0.2
    if what in ("create", "replay"):
        kind, body = "create", templates.create(call, marker, large)
    else:
        kind, body = f"webhook_{what}", retell_event(f"call_{what}", call, marker)
    earlier.append((kind, marker, body))
    return Planned(kind, call, marker, body, client, "large" if large else "")


def plan(seed, operations, templates, agent_id, shapes=SHAPES):
    """The operations of a run, in the order clients take them: a pure function of the
    seed (and of callgen's bodies)."""
    rng = random.Random(seed)
    shaper = random.Random(seed + 3)
    shaped = (f"hist-{seed}-9{n:05d}-mark" for n in itertools.count())
    calls = [f"hist-{seed}-c{i}" for i in range(CALLS)]
    hooks = [f"hist-{seed}-w{i}" for i in range(HOOK_CALLS)]
    sent = {c: [] for c in calls + hooks}  # (kind, marker, body) in plan order
    erased = set()
    markers = (f"hist-{seed}-{n:05d}-mark" for n in itertools.count())
    mixer = random.Random(seed + 5)
    mixed_markers = (f"hist-{seed}-8{n:05d}-mark" for n in itertools.count())
    mixed_sent = {}
    tracer = random.Random(seed + 7)
    span_markers = (f"hist-{seed}-7{n:05d}-mark" for n in itertools.count())
    traced = (f"hist-{seed}-6{n:05d}-mark" for n in itertools.count())
    tightener = random.Random(seed + 9)
    tightened = (f"hist-{seed}-5{n:05d}-mark" for n in itertools.count())
    out = []
    for _ in range(operations):
        if tightener.random() < TIGHTEN_SHAPES:
            call = f"hist-{seed}-p{tightener.randrange(TIGHTEN_CALLS)}"
            out.append(tighten_shape(tightener, call, tightened, templates))
        if tracer.random() < EXPORTS:
            out.append(export(tracer, tracer.choice(calls + hooks), next(span_markers), tracer.randrange(2)))
        if tracer.random() < TRACE_SHAPES:
            call = f"hist-{seed}-t{tracer.randrange(TRACE_CALLS)}"
            out.append(trace_shape(tracer, call, span_markers, traced, templates))
        if shaper.random() < shapes:
            call = f"hist-{seed}-s{shaper.randrange(SHAPE_CALLS)}"
            out.append(shape(shaper, call, shaped, templates))
        if mixer.random() < MIXED:
            call = f"hist-{seed}-m{mixer.randrange(MIXED_CALLS)}"
            out.append(mixed(mixer, call, mixed_sent.setdefault(call, []), mixed_markers, templates))
        webhook = rng.random() < 0.25
        call = rng.choice(hooks if webhook else calls)
        client = "one_shot" if rng.random() < 0.6 else "retrying"
        earlier = sent[call]
        if webhook:
            what = rng.choices(["ended", "analyzed", "replay", "erase"], [30, 30, 25, 10])[0]
        else:
            what = rng.choices(["create", "create_replay", "send", "send_replay", "erase"], [30, 20, 20, 10, 8])[0]
        if call in erased and what != "erase":
            # The call again after an erase: often the very content it had before.
            erased.discard(call)
            what = "replay_after_erase" if earlier and rng.random() < 0.5 else ("ended" if webhook else "create")
        if what == "erase":
            out.append(Planned("erase", call, None, None, "retrying"))
            erased.add(call)
            continue
        replays = {"create_replay": "create", "send_replay": "send", "replay": None,
                   "replay_after_erase": None if webhook else "create"}
        if what in replays:
            kind = replays[what]
            choices = [e for e in earlier if kind is None or e[0] == kind]
            if choices:
                kind, marker, body = choices[-1] if what == "replay_after_erase" else rng.choice(choices)
                out.append(Planned(kind, call, marker, body, client, "replay"))
                continue
            what = kind or ("ended" if webhook else "create")
        marker = next(markers)
        large = rng.random() < 0.2
        if what == "create":
            kind, body = "create", templates.create(call, marker, large)
        elif what == "send":
            kind, body = "send", templates.send(call, marker, large, agent_id)
        else:
            kind, body, large = f"webhook_{what}", retell_event(f"call_{what}", call, marker), False
        earlier.append((kind, marker, body))
        out.append(Planned(kind, call, marker, body, client, "large" if large else ""))
    return out


def export(rng, call, marker, generation, client=None, note=""):
    """Spans of `call`'s trace `generation`, each carrying `marker`."""
    span_ids = [f"{rng.getrandbits(64) | 1:016x}" for _ in range(3)]
    key = rng.choice(["callingest.call_id", "conversation.id"])
    client = client or ("one_shot" if rng.random() < 0.7 else "retrying")
    return Planned("export", call, marker, export_body(call, marker, generation, span_ids, key), client, note)


def trace_shape(rng, call, span_markers, markers, templates):
    """One trace shape on `call`, each starting with spans of its trace (generation 0) sent
    before the call:
    - the call, its erase, then the call and the same trace again (spans sent before the
      erase are gone, those after are the new call's; the trace id is the same);
    - the same, with the first indexing of the trace failing (its item's writes refused, so
      that commit-pending indexes the batch only after the erase: the erase found nothing
      to remove, and the spans sent before it must still go)."""
    marker = next(markers)
    body = templates.create(call, marker, False)
    aim = rng.random() < 0.5
    slow_index = ({"op": "UpdateItem", "fault": "internal", "times": 6, "table": "{calls}",
                   "contains": '"{trace0}"'},) if aim else ()
    note = "shape: spans, the call, its erase, both again" + (" (indexing fails until after the erase)" if aim else "")
    first = export(rng, call, next(span_markers), 0, "one_shot", note)
    return Planned(first.kind, call, first.marker, first.body, first.client, note, (
        Planned("create", call, marker, body, "one_shot"),
        Planned("erase", call, None, None, "retrying", disarm=bool(slow_index)),
        Planned("create", call, marker, body, "one_shot", "replay"),
        export(rng, call, next(span_markers), 0, "one_shot"),
    ), arm=slow_index)


# faults ---------------------------------------------------------------------------------------
def episode_rules(kind, calls_table, directory_table, bucket):
    """The fault layer's rules of one episode."""
    ddb = lambda **r: {"table": calls_table, **r}  # noqa: E731
    s3 = lambda **r: {"service": "s3", "table": bucket, **r}  # noqa: E731
    return {
        "ddb late": [ddb(op=op, fault="late", rate=0.3, seconds=5) for op in WRITES],
        "ddb lost_reply": [ddb(op=op, fault="lost_reply", rate=0.3) for op in WRITES],
        # Reads answered late too: an erase that read the call, then acts on what it read.
        "ddb delay": [ddb(op=op, fault="delay", rate=0.3, seconds=4.5) for op in WRITES]
        + [ddb(op="Query", fault="delay", rate=0.2, seconds=1.5)],
        "ddb throttle": [ddb(op="*", fault="throttle", rate=0.3)],
        "ddb internal": [ddb(op="*", fault="internal", rate=0.2)],
        "s3 late": [s3(op="DeleteObject", fault="late", rate=0.5, seconds=3),
                    s3(op="PutObject", fault="late", rate=0.3, seconds=3)],
        "s3 slowdown": [s3(op="PutObject", fault="slowdown", rate=0.3)],
        "s3 internal": [s3(op="*", fault="internal", rate=0.2)],
        "ddb outage": [{"table": t, "op": "*", "fault": "internal", "rate": 1.0} for t in (calls_table, directory_table)],
        "s3 outage": [s3(op="*", fault="internal", rate=1.0)],
        "kill commit-pending": [ddb(op="*", fault="internal", rate=1.0)],
        "calm": [],
    }[kind]


EPISODES = ["ddb late", "ddb lost_reply", "ddb delay", "ddb throttle", "ddb internal", "s3 late", "s3 slowdown",
            "s3 internal", "ddb outage", "s3 outage", "kill commit-pending", "calm"]


def fault_schedule(seed, n=1000):
    """(episode, seconds on, seconds calm after) for each episode of a run."""
    rng = random.Random(seed + 1)
    out = []
    for _ in range(n):
        kind = rng.choice(EPISODES)
        seconds = {"ddb outage": rng.uniform(3, 8), "s3 outage": rng.uniform(2, 5),
                   "kill commit-pending": 3.0}.get(kind, rng.uniform(2, 6))
        out.append((kind, round(seconds, 2), round(rng.uniform(1, 3), 2)))
    return out


class FaultDriver(threading.Thread):
    """Plays the fault schedule until stopped; the commit-pending kill happens once."""

    def __init__(self, stack, seed, log):
        super().__init__(daemon=True)
        self.stack, self.seed, self.log = stack, seed, log
        self.halt = threading.Event()
        self.episodes = Counter()
        self.killed = None
        self.rng = random.Random(seed + 2)

    def run(self):
        bucket = self.stack.env["FRAMES_BUCKET"]
        try:
            for kind, on, calm in fault_schedule(self.seed):
                if self.halt.is_set():
                    break
                if kind == "kill commit-pending" and self.killed is not None:
                    kind = "calm"
                rules = episode_rules(kind, self.stack.calls_table, self.stack.env["DIRECTORY_TABLE"], bucket)
                ids = [self.stack.faults.add(rule) for rule in rules]
                self.episodes[kind] += 1
                self.halt.wait(on)
                # Its own rules only: a shape's aimed faults stay until the shape removes them.
                for rule_id in ids:
                    self.stack.faults.remove(rule_id)
                if kind == "kill commit-pending":
                    self.kill_committer()
                self.halt.wait(calm)
        except (OSError, RuntimeError) as e:  # the fault layer's control endpoint failing
            print(f"history: the fault schedule stopped: {e}", file=self.log)
        finally:
            self.stack.faults.clear()

    def kill_committer(self):
        """SIGKILL one commit-pending instance once DynamoDB is back and pending
        submissions (made while it was out) are there to commit: part-way through a batch."""
        deadline = time.time() + 5
        while time.time() < deadline and not self.halt.is_set():
            if pending_keys(self.stack, limit=1):
                break
            time.sleep(0.1)
        pids = [p for p in self.stack.function_pids() if cmdline(p).endswith("commit-pending")]
        if pids:
            self.killed = self.rng.choice(sorted(pids))
            try:
                os.kill(self.killed, signal.SIGKILL)
                print(f"history: killed commit-pending instance {self.killed}", file=self.log)
            except ProcessLookupError:
                self.killed = None


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


# AWS, as an operator reads it -----------------------------------------------------------------
def pending_keys(stack, limit=1000, prefixes=("pending/",)):
    """Keys still to commit under `prefixes`: pending submissions, and with `held/` webhook
    reports held (every hook of the run has an agent, so a held report is one whose agent
    could not be read during a fault, released by a sweep once it can)."""
    s3 = aws(stack, "s3")
    keys = []
    for prefix in prefixes:
        out = s3.list_objects_v2(Bucket=stack.env["FRAMES_BUCKET"], Prefix=prefix, MaxKeys=limit)
        keys += [o["Key"] for o in out.get("Contents", [])]
    return keys


def named_frames(stack):
    """Every `frame_key` an item of the Calls table holds, and every trace part a trace's
    item names (`traces/spans/{workspace}/{trace}/{part}`)."""
    ddb = aws(stack, "dynamodb")
    keys, start = set(), None
    for _ in range(10_000):
        args = {"TableName": stack.calls_table, "ProjectionExpression": "pk, frame_key, parts"}
        if start:
            args["ExclusiveStartKey"] = start
        page = ddb.scan(**args)
        keys |= {i["frame_key"]["S"] for i in page["Items"] if "frame_key" in i}
        for i in page["Items"]:
            if i["pk"]["S"].startswith("TRACE#") and "parts" in i:
                _, ws, trace = i["pk"]["S"].split("#", 2)
                keys |= {f"traces/spans/{ws}/{trace}/{part}" for part in i["parts"]["SS"]}
        start = page.get("LastEvaluatedKey")
        if not start:
            break
    return keys


def markers_in(data, pattern):
    return {m.decode() for m in pattern.findall(data)}


# settling and reading -------------------------------------------------------------------------
def erasing_heads(stack, calls):
    """{call: internal id} of calls whose erase began and did not finish."""
    out = {}
    for call in calls:
        items = history_retention.call_items(stack, stack.dev["workspace_id"], call)
        head = next((i for i in items if i["sk"]["S"] == "HEAD"), None)
        if head and "erasing" in head and "id" in head:
            out[call] = int(head["id"]["N"])
    return out


# What settling waits to see empty.
SETTLED = ("pending/", "held/", "traces/in/")


def settle(stack, clients, calls, ops, horizon, rng, out):
    """With faults off: finishes erases cut short, then waits until pending/ and held/ are
    empty (and trace batches indexed) and every request may have landed. Answers the seconds pending/ took to empty (None when it
    did not within COMMIT_WITHIN) and the pending keys left."""
    stack.faults.clear()
    clients.deadline = None
    off = time.time()
    timing = Timing(horizon)
    maybe = [o.start for o in ops if timing.applies(o) and not timing.acked(o)]
    landed_by = off + max(0.0, max(maybe, default=0.0) + horizon - clients.recorder.now())
    emptied, finished_at = None, 0.0
    while time.time() - off < max(COMMIT_WITHIN, landed_by - off + 1):
        if time.time() - finished_at > 5:
            for call, target in erasing_heads(stack, calls).items():
                print(f"history: finishing the erase of {call} (id {target})", file=out)
                clients.erase(call, rng, client="settle", target=target, note="finish a cut-short erase")
            finished_at = time.time()
        left = pending_keys(stack, prefixes=SETTLED)
        if not left and emptied is None:
            emptied = time.time() - off
        if emptied is not None and time.time() >= landed_by:
            break
        if left:
            emptied = None
        time.sleep(1)
    left = pending_keys(stack, prefixes=SETTLED)
    return (None if left else emptied), left


def read_call(stack, clients, call, pattern):
    """The final state of one call: revisions (marker, token), readable or not."""
    items = history_retention.call_items(stack, stack.dev["workspace_id"], call)
    tokens = {}
    for item in items:
        sk = item["sk"]["S"]
        token = item.get("submission", {}).get("S")
        if sk.startswith("REV#"):
            tokens[int(sk[4:])] = token
        elif sk == "HEAD" and "id" in item:
            tokens[int(item["revision"]["N"])] = token
    revisions, note = [], ""
    stored = None
    for attempt in range(3):
        try:
            stored, note = stack.get_call(call), ""
            break
        except RuntimeError as e:
            note = str(e)[:200]
            time.sleep(1)
    if stored is not None:
        bodies = [(r["revision"], r["raw"]) for r in stored.get("revisions", [])]
        bodies.append((stored["current"]["revision"], stored["raw"]))
        for n, raw in bodies:
            found = sorted(markers_in(raw.encode(), pattern))
            revisions.append({"revision": n, "marker": found[0] if found else None, "token": tokens.get(n),
                              "current": False})
    elif tokens:
        # callctl could not read it, or found no call though a live head is there (a frame
        # gone?): what the items alone tell.
        why = note or f"no such call, though its head is there{missing_frames(stack, items)}"
        for n in sorted(tokens):
            revisions.append({"revision": n, "marker": None, "token": tokens[n], "current": False,
                              "note": f"callctl: {why}"})
    if revisions:
        revisions[-1]["current"] = True
    readable, target = False, None
    for attempt in range(3):
        try:
            a = clients.read(call)
            readable = a.status == 200
            target = a.body.get("id") if readable and isinstance(a.body, dict) else None
            if a.status not in (429, 503):
                break
        except OSError:
            pass
        time.sleep(1)
    return {"revisions": revisions, "readable": readable, "note": note,
            "trace": read_trace(clients, target, pattern) if target is not None else None}


def read_trace(clients, target, pattern):
    """The markers of the spans call `target`'s trace reads (Get Call Trace)."""
    for attempt in range(3):
        try:
            a = clients.read_trace(target)
            if a.status == 200:
                return sorted(markers_in(json.dumps(a.body).encode(), pattern))
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError(f"the trace of call {target} could not be read")


def missing_frames(stack, items):
    """Which of a call's items name a frame the bucket does not hold (why a call with a head
    reads as no call): ", frames missing: REV#n <token> ..." or ""."""
    s3, bucket, gone = aws(stack, "s3"), stack.env["FRAMES_BUCKET"], []
    for item in items:
        key = item.get("frame_key", {}).get("S")
        if key is None:
            continue
        try:
            s3.head_object(Bucket=bucket, Key=key)
        except Exception:  # noqa: BLE001 - any failure to find it is worth naming
            gone.append(f"{item['sk']['S']} (id {item.get('id', {}).get('N', '?')}) {key.rsplit('/', 1)[-1]}")
    return f", frames missing: {'; '.join(gone)}" if gone else ", every frame it names is there"


def scan_bucket(stack, calls, pattern):
    """The run's objects (those whose key holds the hash of one of its call ids, as
    frames/, pending/ and failed/ keys do, or one of its calls' trace ids, as trace parts
    do; and trace batches holding its markers), with the markers they hold and whether an
    item names them; and how many other objects the bucket has (other phases')."""
    s3 = aws(stack, "s3")
    bucket = stack.env["FRAMES_BUCKET"]
    hashes = {}
    for call in calls:
        digest = hashlib.sha256(call.encode()).hexdigest()
        hashes[digest] = hashes[digest[:32]] = call
        for generation in (0, 1):
            hashes[trace_of(call, generation)] = call
    named = named_frames(stack)
    objects, others = [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            key = o["Key"]
            prefix = history.prefix_of(key)
            call = next((hashes[part] for part in key.split("/") if part in hashes), None)
            if call is None and prefix != "traces/in/":
                others += 1
                continue
            if o["Size"] == 0 and prefix in ("frames/", "traces/spans/"):
                continue  # an erased frame's or part's marker: holds nothing (the bucket's lifecycle removes it)
            try:
                data = unpacked(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            except s3.exceptions.NoSuchKey:
                continue  # deleted since it was listed
            markers = markers_in(data, pattern)
            if call is None and not markers:
                others += 1  # another phase's batch
                continue
            objects.append({"key": key, "prefix": prefix, "markers": markers, "named": key in named, "call": call})
    return objects, others


# the run --------------------------------------------------------------------------------------
def aimed(rule, call, clients):
    """A shape's fault rule with its placeholders filled: `{bucket}`, `{calls}` (the
    tables), `{pk}` (the call's partition key), `{folder}` (`<workspace>/<call hash>`,
    as frame, pending and held keys hold it) and `{trace0}` (the partition key of the call's
    trace, generation 0)."""
    stack = clients.stack
    values = {"bucket": stack.env["FRAMES_BUCKET"], "calls": stack.calls_table, "pk": f"CALL#{clients.ws}#{call}",
              "folder": f"{clients.ws}/{hashlib.sha256(call.encode()).hexdigest()[:32]}",
              "trace0": f"TRACE#{clients.ws}#{trace_of(call, 0)}"}
    return {k: v.format(**values) if isinstance(v, str) else v for k, v in rule.items()}


def drive(clients, schedule, workers, seconds, seed):
    """Runs the schedule on `workers` threads until it is done or `seconds` passed (no
    request starts after that; one in flight ends within its timeout)."""
    deadline = clients.deadline = clients.recorder.now() + seconds
    lock = threading.Lock()
    next_op = iter(schedule)

    def worker(n):
        rng = random.Random(seed * 1000 + n)
        while clients.recorder.now() < deadline:
            with lock:
                p = next(next_op, None)
            if p is None:
                return
            steps = (p, *p.then)
            armed = []
            for i, q in enumerate(steps):
                if q.alongside is not None:
                    continue  # started with the step before it
                armed += [clients.stack.faults.add(aimed(rule, q.call, clients)) for rule in q.arm]
                beside = steps[i + 1] if i + 1 < len(steps) and steps[i + 1].alongside is not None else None
                side = None
                if beside is not None:
                    side = threading.Thread(target=perform_after, args=(beside, random.Random(beside.marker)))
                    side.start()
                perform(q, rng)
                if side is not None:
                    side.join()
                if q.disarm:
                    # Rules that last (a rate) go; one-shot ones end when they fire.
                    lasting = {rule_id for rule_id, rule in zip(armed, (r for s in steps for r in s.arm))
                               if "times" not in rule}
                    for rule_id in lasting:
                        clients.stack.faults.remove(rule_id)

    def perform_after(p, rng):
        time.sleep(p.alongside)
        perform(p, rng)

    def perform(p, rng):
        try:
            act(p, rng)
        except Exception as e:  # a bug of this driver: said, and the schedule goes on
            print(f"history: {p.kind} of {p.call} failed in the client: {type(e).__name__}: {e}", file=sys.stderr)

    def act(p, rng):
        if p.kind == "erase":
            clients.erase(p.call, rng)
        elif p.kind == "pause":
            time.sleep(float(p.note))
        elif p.kind == "create":
            clients.create(p.call, p.marker, p.body, p.client, rng, p.note, dict(p.headers))
        elif p.kind == "send":
            clients.send(p.call, p.marker, p.body, p.client, rng, p.note)
        elif p.kind == "export":
            clients.export(p.call, p.marker, p.body, p.client, rng, p.note)
        else:
            clients.webhook(p.kind.replace("webhook_", "call_"), p.call, p.marker, p.body, p.client, rng, p.note)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run(stack, seed, operations=OPERATIONS, seconds=SECONDS, workers=WORKERS, horizon=HORIZON, out=sys.stdout,
        save=None, shapes=SHAPES):
    """The history phase on `stack`, in a `redacted` workspace of its own: answers
    (violations, report)."""
    development = stack.dev
    stack.dev = redacted_workspace(stack, seed)
    try:
        return run_in_workspace(stack, seed, operations, seconds, workers, horizon, out, save, shapes)
    finally:
        stack.dev = development


def run_in_workspace(stack, seed, operations, seconds, workers, horizon, out, save, shapes):
    """`run` in the workspace `stack.dev` names."""
    templates = Templates.generate(stack, seed)
    schedule = plan(seed, operations, templates, stack.dev["agent_id"], shapes)
    calls = sorted({p.call for p in schedule})
    clients = Clients(stack, Recorder(), retell_hook(stack, HOOK_SECRET), HOOK_SECRET)
    # Calls in workspaces with retention and short days (made by PREPARE), beside the
    # schedule.
    part = None
    if getattr(stack, "retention", None) is not None:
        part = history_retention.RetentionPart(stack, seed, clients.recorder.now)
    stack.faults.seed(seed)
    before = stack.faults.stats()
    faults = FaultDriver(stack, seed, out)
    started = time.time()
    faults.start()
    try:
        if part is not None:
            part.start(clients.recorder.now() + seconds)
        drive(clients, schedule, workers, seconds, seed)
        if part is not None:
            part.join()
    finally:
        faults.halt.set()
        faults.join(30)
        stack.faults.clear()
    elapsed = time.time() - started
    after = stack.faults.stats()
    injected = Counter(after["injected"])
    injected.subtract(before["injected"])
    # What the local IAM refused a function (devstack.iam), when it is enforced.
    denied = Counter(after.get("denied", {}))
    denied.subtract(before.get("denied", {}))
    rng = random.Random(seed + 3)
    settled, left = settle(stack, clients, calls, clients.recorder.ops, horizon, rng, out)
    pattern = marker_pattern(seed)
    bucket, others = scan_bucket(stack, calls, pattern)
    final = {"calls": {c: read_call(stack, clients, c, pattern) for c in calls}, "bucket": bucket,
             "pending_left": len(left), "failed_expected": False, "personal_data": personal_data(stack)}
    ops = sorted(clients.recorder.ops, key=lambda o: o.start)
    violations = history.check(ops, final, settled, horizon, seed)
    if part is not None:
        violations += part.check(horizon, out)
    else:
        print("history: no retention part (the stack was not made with history_run.PREPARE)", file=out)
    if save:
        write_history(save, seed, horizon, settled, ops, final)
    report = {"operations": len(ops), "planned": len(schedule), "seconds": elapsed, "settled": settled,
              "injected": {k: v for k, v in injected.items() if v > 0}, "episodes": dict(faults.episodes),
              "denied": {k: v for k, v in denied.items() if v > 0},
              "killed": faults.killed, "other objects": others, "violations": history.summary(violations)}
    print_report(out, seed, workers, ops, final, report, violations)
    return violations, report


def print_report(out, seed, workers, ops, final, report, violations):
    settled = "never" if report["settled"] is None else f"in {report['settled']:.0f} s"
    print(f"\nhistory: seed {seed}, {report['operations']} requests ({report['planned']} planned operations) in "
          f"{report['seconds']:.0f} s by {workers} clients; pending/ emptied {settled} after faults stopped", file=out)
    print("\n| operation | answer | count |\n|---|---|---|", file=out)
    for (kind, status), n in sorted(Counter((o.kind, o.status) for o in ops).items(), key=str):
        print(f"| {kind} | {status or 'no answer'} | {n} |", file=out)
    print("\n| fault episode | count |\n|---|---|", file=out)
    for kind, n in sorted(report["episodes"].items()):
        print(f"| {kind} | {n} |", file=out)
    if report["killed"]:
        print(f"| commit-pending instance killed (pid) | {report['killed']} |", file=out)
    print("\n| faults injected | count |\n|---|---|", file=out)
    for kind, n in sorted(report["injected"].items()):
        print(f"| {kind} | {n} |", file=out)
    if report["denied"]:
        print("\n| refused by the local IAM | count |\n|---|---|", file=out)
        for what, n in sorted(report["denied"].items()):
            print(f"| {what} | {n} |", file=out)
    unread = [c for c, s in final["calls"].items() if s.get("note")]
    print(f"\n{len(final['bucket'])} objects of this run in the bucket, {report['other objects']} of others; "
          f"calls callctl could not read: {', '.join(unread) or 'none'}", file=out)
    print("\n| rule | violations |\n|---|---|", file=out)
    for rule, n in report["violations"].items():
        print(f"| {rule} | {n} |", file=out)
    print_violations(out, violations)
    print(f"\n{'history: ' + str(len(violations)) + ' violation(s)' if violations else 'history: every rule held'}",
          file=out)


def print_violations(out, violations):
    """Each violation's first line (it names the seed), grouped by call, then that call's
    requests in time order once (each Violation's detail holds them too)."""
    by_call = {}
    for v in violations:
        by_call.setdefault(v.call, []).append(v)
    for call, found in by_call.items():
        print("", file=out)
        for v in found:
            print(f"[{v.rule}] {v.detail.splitlines()[0]}", file=out)
        if found[0].ops_of_call:
            print(f"  the requests of {call}, in time order (start .. end, seconds into the run):", file=out)
            for op in found[0].ops_of_call:
                print("    " + op.line(), file=out)


def write_history(path, seed, horizon, settled, ops, final):
    """The history as JSON, for `--recheck`."""
    final = dict(final, bucket=[dict(o, markers=sorted(o["markers"])) for o in final["bucket"]])
    with open(path, "w") as f:
        json.dump({"seed": seed, "horizon": horizon, "settled": settled, "ops": [o.to_json() for o in ops],
                   "final": final}, f, indent=1, default=str)


def recheck(path, out=sys.stdout):
    """The checker on a saved history; answers its violations."""
    with open(path) as f:
        saved = json.load(f)
    ops = [Op(**o) for o in saved["ops"]]
    final = saved["final"]
    final["bucket"] = [dict(o, markers=set(o["markers"])) for o in final["bucket"]]
    violations = history.check(ops, final, saved["settled"], saved["horizon"], saved["seed"])
    print_violations(out, violations)
    print(f"\n{len(violations)} violation(s): {history.summary(violations)}", file=out)
    return violations


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED", time.time())))
    p.add_argument("--operations", type=int, default=OPERATIONS)
    p.add_argument("--seconds", type=float, default=SECONDS)
    p.add_argument("--workers", type=int, default=WORKERS)
    p.add_argument("--instances", type=int, default=8)
    p.add_argument("--horizon", type=float, default=HORIZON)
    p.add_argument("--save", help="write the history (requests and final state) to this JSON file")
    p.add_argument("--log", help="write the local stack's log (every function's output) to this file")
    p.add_argument("--recheck", help="check a saved history again (no stack)")
    p.add_argument("--shapes", type=float, default=SHAPES,
                   help="the rate of shapes woven into the schedule (0: as recorded before they existed)")
    a = p.parse_args()
    if a.recheck:
        sys.exit(1 if recheck(a.recheck) else 0)
    from devstack.stack import Stack

    log = open(a.log, "w") if a.log else None
    with Stack(instances=a.instances, log=log, prepare=PREPARE) as stack:
        violations, _ = run(stack, a.seed, a.operations, a.seconds, a.workers, a.horizon, save=a.save, shapes=a.shapes)
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
