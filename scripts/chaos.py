#!/usr/bin/env python3
"""`make chaos`: the HTTP API under random DynamoDB and S3 faults, with several instances
per function, then a check of every promise with faults off.

    chaos.py [--seconds 120] [--seed N] [--workers 12] [--instances 8]
             [--phases random,outage,s3,burst,webhooks,traces,history] [--operations 2000]

Clients submit small calls and large calls (about 1.8 MB, frames in S3), replays of the same content
and concurrent revisions, and retry like real ones: on a network error, 408, 429 or 5xx,
up to 4 attempts with backoff (honouring Retry-After). The fault layer answers
throttling, internal errors, transaction conflicts and cancellations, drops replies of
applied writes, applies stuck writes after their retry, and delays replies past the SDK's
attempt timeout, at random (seeded).

Alongside them, one-shot clients act as the clients people run (Tuner's pipecat SDK, the
ElevenLabs sample): one attempt, a 10 s timeout, and any answer but 2xx is a call lost.

Phases, one after the other: `random` (the faults above, for --seconds), `outage` (every
DynamoDB request fails for 30 s), `s3` (S3 failing a third of the frame writes, 20 s),
`burst` (100 calls of one workspace within one second, at the default rate limit),
`webhooks` and `history` (scripts/history_run.py: a seeded schedule of creates, sends,
replays, erases and Retell webhooks under scheduled DynamoDB and S3 faults, at most
--operations requests or --seconds, every request recorded and the history checked against
the final table and bucket by devstack/history.py, and beside it calls in workspaces with
retention, checked by devstack/history_retention.py; a seed replays its schedule:
`make chaos SEED=n`). The retention part's two workspaces live days of 20 s
(`RETENTION_DAY_WORKSPACES`), so their calls are due within the run; every other workspace
keeps production's days, and production's writes. After each, with faults off, every call
accepted (202, or a webhook's `accepted`)
so far must be committed within 60 s; the next phase starts once it is.

`webhooks`: a hook per provider, of the development workspace and agent, and one-shot
senders, since Vapi and ElevenLabs never send a report again (Retell retries; modelled as
one-shot too, the stricter): Vapi's end-of-call-report, ElevenLabs' post_call_transcription,
and Retell's call_ended and call_analyzed of one call, in either order; each call a new
call id. Two calls per instance and hook with faults off (so that instances have read the
hooks), then 20 s under the random phase's faults, on the Directory table too (where hooks
are read), then 15 s of the outage. A report is lost unless answered 200 `stored`,
`unchanged`, `revised`, `accepted` or `held`, and then read back (Get Call by provider call
id) as its provider's call, Retell's analysis current once its call_analyzed was kept.

`traces`: six calls, then one-shot OpenTelemetry exporters (devstack/trace_clients.py)
sending batches of a pipecat turn's spans naming them, in OTLP JSON or protobuf, gzip or
not, each batch once: 3 s with faults off, 20 s under the random faults (DynamoDB tables
and S3), 15 s of the outage. A batch is lost unless answered 200 and every span of it then
reads back in its call's trace (`GET /api/v1/public/call/{id}/trace`).

Events out (issue 33, devstack/events_check.py): every workspace there at the start has an
endpoint at a loopback receiver that fails through the first phase (500, 503, 429 with
Retry-After, answers past the 15 s timeout) and then recovers, and one more answers 410.
At the end, what the receiver verified (standardwebhooks) must match the Calls table's final
heads: a call.stored for every call, a call.revised for every current revision above 1, a
call.erased for every call gone and none for one there, nothing for a call or revision that
never was, one webhook-id per event; the 410 endpoint disabled after one request.

Then, with faults off, every call is read back (callctl) and the table printed. Exit 1
when a promise broke: lost (acknowledged, not stored as current or as a revision),
doubled (two ids for one call, two is_new: true, one id for two calls), a 500, a 503
without Retry-After, a call whose every submission was answered at the first attempt
without any is_new: true, an unreadable call, a webhook report lost, a trace batch lost, or
any violation the history phase found.
"""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
from collections import namedtuple

from devstack import programs, trace_clients, webhook_clients
from devstack.events_check import EventsPhase
from devstack.threads import run_each
from devstack.stack import Stack, request

# The history phase: a program of its own too (scripts/history_run.py).
history_run = programs.load("history_run")

# (fault, operations it applies to, rate)
FAULTS = [
    ("throttle", "*", 0.02),
    ("internal", "*", 0.01),
    ("conflict", "PutItem", 0.04),
    ("cancel_conflict", "TransactWriteItems", 0.06),
    ("cancel_throttle", "TransactWriteItems", 0.03),
    ("lost_reply", "PutItem", 0.03),
    ("lost_reply", "TransactWriteItems", 0.03),
    ("late", "PutItem", 0.01),
    ("delay", "PutItem", 0.01),
    ("delay", "TransactWriteItems", 0.01),
]
# S3's, on the frames of large calls: (fault, operation, rate).
S3_FAULTS = [
    ("slowdown", "PutObject", 0.05),
    ("internal", "PutObject", 0.02),
    ("lost_reply", "PutObject", 0.03),
    ("delay", "PutObject", 0.01),
]
RETRYABLE = {408, 429, 500, 502, 503, 504}
ATTEMPTS = 4


def recent(body, rng):
    """Moves callgen's call (`start_timestamp`, `end_timestamp`, epoch ms) to have ended a
    few minutes ago, its length kept."""
    length = body["end_timestamp"] - body["start_timestamp"]
    end = int(time.time() * 1000) - int(rng.uniform(60_000, 600_000))
    body["start_timestamp"], body["end_timestamp"] = end - length, end


class Workload:
    """Call ids, each with a few content variants (bodies sent byte for byte)."""

    def __init__(self, stack, rng, small=40, large=2):
        self.calls = []
        for i in range(small):
            base = json.loads(stack.callgen("--minutes", round(rng.uniform(0.2, 1.0), 2), "--seed", i + 1))
            # As production sends them: calls that ended minutes ago. One in ten keeps
            # callgen's start (Nov 2025): a backfill, which the store notes for the raw sweep
            # (a write more for each: with every call a year old, the notes alone slowed the
            # local stack's one-request-at-a-time DynamoDB by half, seed 50).
            if i % 10:
                recent(base, rng)
            self.calls.append(self.variants(base, f"chaos-small-{i}", 3))
        for i in range(large):
            base = json.loads(stack.callgen("--bytes", 1_800_000, "--seed", 1000 + i))
            recent(base, rng)
            self.calls.append(self.variants(base, f"chaos-large-{i}", 2))

    @staticmethod
    def variants(base, call_id, n):
        out = []
        for v in range(n):
            base["call_id"] = call_id
            base.setdefault("call_analysis", {})["call_summary"] = f"variant {v}"
            out.append(json.dumps(base, separators=(",", ":")).encode())
        return call_id, out


class Log:
    def __init__(self):
        self.lock = threading.Lock()
        # (client kind, phase, call_id, body, [(status or None, seconds, answer body, headers)])
        self.submissions = []
        self.workspaces = {}  # call id -> workspace, for calls not of the dev workspace

    def add(self, call_id, body, attempts, kind="retrying", phase="random", workspace=None):
        with self.lock:
            self.submissions.append((kind, phase, call_id, body, attempts))
            if workspace is not None:
                self.workspaces[call_id] = workspace


ONE_SHOT_TIMEOUT = 10


def one_attempt(send):
    """A one-shot client's request: `send(timeout)` once, with a 10 s timeout, as a list of
    attempts [(status or None, seconds, answer body, headers)]."""
    started = time.time()
    try:
        a = send(ONE_SHOT_TIMEOUT)
        return [(a.status, time.time() - started, a.body, a.headers)]
    except (OSError, http.client.HTTPException):
        return [(None, time.time() - started, None, {})]


def submit_once(stack, body):
    """A one-shot client's submission."""
    return one_attempt(lambda timeout: stack.post_create_call(body, timeout=timeout))


def submit(stack, call_id, body, rng):
    """One client submission with retries; answers the list of attempts."""
    attempts = []
    for attempt in range(ATTEMPTS):
        started = time.time()
        try:
            a = stack.post_create_call(body, timeout=40)
            attempts.append((a.status, time.time() - started, a.body, a.headers))
            if a.status not in RETRYABLE:
                return attempts
            wait = float(a.headers.get("retry-after", "0") or 0)
        except OSError:
            attempts.append((None, time.time() - started, None, {}))
            wait = 0
        time.sleep(min(max(wait, 0.1 * 2 ** attempt), 1.0) + rng.uniform(0, 0.1))
    return attempts


def drive(stack, workload, seconds, seed, workers, log=None, phase="random", one_shot=0):
    """`workers` retrying clients and `one_shot` one-shot clients for `seconds`. A one-shot
    client sends each call once, as its own new call (a fresh call id)."""
    log = log or Log()
    deadline = time.time() + seconds

    def worker(n):
        rng = random.Random(seed * 1000 + n)
        while time.time() < deadline:
            call_id, variants = rng.choice(workload.calls)
            # Mostly the first content (replays), sometimes a new one (a revision).
            body = variants[0] if rng.random() < 0.5 else rng.choice(variants)
            log.add(call_id, body, submit(stack, call_id, body, rng), phase=phase)

    def one_shot_worker(n):
        rng = random.Random(seed * 2000 + n)
        i = 0
        while time.time() < deadline:
            _, variants = rng.choice(workload.calls)
            call_id = f"once-{phase}-{seed}-{n}-{i}"
            i += 1
            body = rebrand(variants[0], call_id)
            log.add(call_id, body, submit_once(stack, body), kind="one-shot", phase=phase)
            time.sleep(rng.uniform(0.05, 0.3))

    # Both kinds at once: the retrying workers and the one-shot ones.
    run_each(workers + one_shot, lambda n: worker(n) if n < workers else one_shot_worker(n - workers))
    return log


def rebrand(body, call_id):
    """`body` as the call `call_id`."""
    call = json.loads(body)
    call["call_id"] = call_id
    return json.dumps(call, separators=(",", ":")).encode()


def burst(stack, workload, log, n=100, seed=0):
    """`n` one-shot calls of one workspace within one second, at the default rate limit:
    a workspace of its own, so no instance has its raised limit cached."""
    ws = stack.made_workspace(stack.ctl("workspace", "create", "--name", f"burst-{seed}")["id"])
    stack.ctl("agent", "create", "--workspace", ws, "--remote-id", "desk")
    token = stack.ctl("key", "create", "--workspace", ws, "--name", "burst")["token"]
    url = f"{stack.url}/api/v1/public/call?workspace_id={ws}&agent_remote_identifier=desk"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def once(call_id, body):
        attempts = one_attempt(lambda timeout: request("POST", url, body, headers, timeout=timeout))
        log.add(call_id, body, attempts, "one-shot", "burst", workspace=ws)

    threads = []
    for i in range(n):
        call_id = f"burst-{seed}-{i}"
        body = rebrand(workload.calls[i % len(workload.calls)][1][0], call_id)
        threads.append(threading.Thread(target=once, args=(call_id, body)))
        threads[-1].start()
        time.sleep(1.0 / n)
    for t in threads:
        t.join()


def random_faults(stack, tables):
    """The random phase's faults: FAULTS on each of `tables`, S3_FAULTS on the bucket."""
    for table in tables:
        for fault, op, rate in FAULTS:
            stack.faults.add({"op": op, "fault": fault, "rate": rate, "table": table, "seconds": 3.5})
    for fault, op, rate in S3_FAULTS:
        stack.faults.add({"service": "s3", "op": op, "fault": fault, "rate": rate, "table": stack.env["FRAMES_BUCKET"],
                          "seconds": 3.5})


def outage(stack):
    """Every DynamoDB request of the Calls and Directory tables failing."""
    for table in (stack.calls_table, stack.env["DIRECTORY_TABLE"]):
        stack.faults.add({"op": "*", "fault": "internal", "rate": 1.0, "table": table})


# The webhooks phase: seconds under the random faults, then under the outage.
WEBHOOK_SECONDS = 20
WEBHOOK_OUTAGE_SECONDS = 15
# Each provider's hook: the key callctl is given (Retell's and ElevenLabs' own), or None
# (Vapi's secret is callctl's to make).
SIGNING_KEYS = {"vapi": None, "retell": "key_retell_chaos", "elevenlabs": "wsec_elevenlabs_chaos"}
# What a provider sends of one call: (event, fixture, the fixture's call id), each once.
REPORTS = {
    "vapi": [("end-of-call-report", "vapi_tools", "vapi-call-tools-1")],
    "retell": [("call_ended", "retell_call_ended", "call_7f3a9c2e1b"),
               ("call_analyzed", "retell_call_analyzed", "call_7f3a9c2e1b")],
    "elevenlabs": [("post_call_transcription", "elevenlabs_transcription", "conv_01jxyz")],
}
# A webhook's answers (200) that promise the call is stored, or will be.
KEPT = {"stored", "unchanged", "revised", "accepted", "held"}
# One report sent: `attempt` as a one-shot client's (status or None, seconds, answer, headers).
Report = namedtuple("Report", "provider event call_id stage attempt")


def webhooks(stack, seed, workers):
    """The webhooks phase: a hook per provider of the development workspace and agent, a
    few calls each with faults off, then `workers` one-shot senders under the random faults
    (on the Directory table too, where instances read hooks) and then under the outage.
    Answers every report sent."""
    hooks = {p: webhook_clients.hook(stack, p, key)[:2] for p, key in SIGNING_KEYS.items()}
    reports = warm_up(hooks, seed, 2 * stack.instances)
    random_faults(stack, (stack.calls_table, stack.env["DIRECTORY_TABLE"]))
    reports += send_reports(hooks, "random", WEBHOOK_SECONDS, seed, workers)
    stack.faults.clear()
    outage(stack)
    return reports + send_reports(hooks, "outage", WEBHOOK_OUTAGE_SECONDS, seed, workers)


# The traces phase: calls to join spans to, then one-shot exporters under the random faults
# (DynamoDB tables and S3), then under the outage.
TRACE_CALLS = 6
TRACE_SECONDS = 20
TRACE_OUTAGE_SECONDS = 15


def traces(stack, seed, workers):
    """The traces phase: `TRACE_CALLS` calls, faults off; exporters of their spans for 3 s
    with faults off (each instance reads the key), then `workers` one-shot exporters under
    the random faults and then the outage. Answers the calls and every batch sent."""
    calls = trace_clients.make_calls(stack, f"traced-{seed}-{int(time.time())}", TRACE_CALLS)
    batches = trace_clients.send_batches(stack, calls, "warm-up", 3, seed, 2 * stack.instances)
    random_faults(stack, (stack.calls_table, stack.env["DIRECTORY_TABLE"]))
    batches += trace_clients.send_batches(stack, calls, "random", TRACE_SECONDS, seed, workers)
    stack.faults.clear()
    outage(stack)
    return calls, batches + trace_clients.send_batches(stack, calls, "outage", TRACE_OUTAGE_SECONDS, seed, workers)


def send_call(hooks, provider, call_id, stage, rng):
    """The reports of one call, each sent once and signed when sent: Retell's two events one
    after the other, in an order of `rng`'s."""
    reports = []
    url, secret = hooks[provider]
    for event, name, old_id in rng.sample(REPORTS[provider], len(REPORTS[provider])):
        body = webhook_clients.fixture(name, **{old_id: call_id})
        [attempt] = one_attempt(lambda timeout: webhook_clients.post(
            url, body, webhook_clients.sent_headers(provider, secret, body), timeout=timeout))
        reports.append(Report(provider, event, call_id, stage, attempt))
    return reports


def warm_up(hooks, seed, calls):
    """`calls` calls per hook with faults off, one after the other: the idle instances take
    requests in turn, so each has likely read every hook before faults start."""
    rng = random.Random(f"webhooks-warm-up-{seed}")
    return [r for provider in hooks for i in range(calls)
            for r in send_call(hooks, provider, f"hook-warm-up-{seed}-{provider}-{i}", "warm-up", rng)]


def send_reports(hooks, stage, seconds, seed, workers):
    """`workers` one-shot senders for `seconds`, each sending one call at a time of a
    provider of its choice, every call a new call id carrying the seed."""
    deadline = time.time() + seconds
    sent = [[] for _ in range(workers)]

    def sender(n):
        rng = random.Random(f"webhooks-{stage}-{seed}-{n}")
        i = 0
        while time.time() < deadline:
            provider = rng.choice(sorted(hooks))
            sent[n] += send_call(hooks, provider, f"hook-{stage}-{seed}-{n}-{i}", stage, rng)
            i += 1
            time.sleep(rng.uniform(0.05, 0.3))

    run_each(workers, sender)
    return [r for reports in sent for r in reports]


def answer_of(attempt):
    """How a report was answered: "200 <status>", another HTTP status, or None (no answer)."""
    status, _, answer, _ = attempt
    if status == 200 and isinstance(answer, dict):
        return f"200 {answer.get('status')}"
    return status


def kept(attempt):
    """Whether a webhook's answer promises the call stored, now or later: 200 with a status
    in KEPT. Any other (the provider sends the report no more) is a report lost."""
    status, _, answer, _ = attempt
    return status == 200 and isinstance(answer, dict) and answer.get("status") in KEPT


def read_call(stack, call_id, attempts=5):
    """Get Call's answer body by provider call id, or None; a read answered anything but 200
    (the local DynamoDB is one process, busy with commits) is tried again."""
    for attempt in range(attempts):
        try:
            a = webhook_clients.read(stack, call_id, timeout=ONE_SHOT_TIMEOUT)
            if a.status == 200:
                return a.body
        except (OSError, http.client.HTTPException):
            pass
        if attempt < attempts - 1:
            time.sleep(1)
    return None


def holds(report, stored):
    """Whether `stored` (Get Call's body, or None) holds a report answered as kept: a call of
    its provider, and once Retell's call_analyzed was kept, the analysis as current content
    (its later stage wins over call_ended, whichever came last)."""
    if stored is None or stored["document"]["call"]["provider"] != report.provider:
        return False
    return report.event != "call_analyzed" or stored["document"]["call"]["provider_event"] == "call_analyzed"


def lost_reports(stack, reports):
    """Webhook reports sent and lost, and their answers, by provider and event; and each
    report lost, with why. A report is lost unless its answer kept it and its call then
    reads back holding it."""
    table, lost, stored = {}, [], {}
    for r in reports:
        row = table.setdefault(f"{r.provider} {r.event}", {"sent": 0, "lost": 0, "statuses": {}})
        row["sent"] += 1
        answer = answer_of(r.attempt)
        row["statuses"][answer] = row["statuses"].get(answer, 0) + 1
        if not kept(r.attempt):
            row["lost"] += 1
            lost.append((r, f"answered {answer or 'nothing'}"))
            continue
        if r.call_id not in stored:
            stored[r.call_id] = read_call(stack, r.call_id)
        if not holds(r, stored[r.call_id]):
            row["lost"] += 1
            lost.append((r, f"answered {answer}, then not read back holding it"))
    return table, lost


def read_back(stack, call_id, workspace=None, attempts=5):
    """The stored call, read with callctl; a read that times out (the local DynamoDB is one
    process, busy with commits) is tried again."""
    for attempt in range(attempts):
        try:
            return stack.get_call(call_id, workspace=workspace)
        except RuntimeError:
            if attempt == attempts - 1:
                raise
            time.sleep(1)


def lost_by_client(stack, log):
    """Calls lost for each kind of client and phase: a one-shot client's call is lost when
    it got no 2xx (it never sends it again), or got one and the call is not stored."""
    table = {}
    for kind, phase, call_id, body, attempts in log.submissions:
        if kind != "one-shot":
            continue
        row = table.setdefault((kind, phase), {"sent": 0, "lost": 0, "statuses": {}})
        row["sent"] += 1
        status = attempts[-1][0]
        row["statuses"][status] = row["statuses"].get(status, 0) + 1
        if status not in (200, 201, 202):
            row["lost"] += 1
            continue
        stored = read_back(stack, call_id, log.workspaces.get(call_id))
        if stored is None or body not in {stored["raw"].encode()}:
            row["lost"] += 1
    return table


def check(stack, log):
    """The report: counts of every promise kept or broken (retrying clients)."""
    by_call = {}
    for kind, _, call_id, body, attempts in log.submissions:
        if kind == "retrying":
            by_call.setdefault(call_id, []).append((body, attempts))
    r = {"submissions": sum(len(s) for s in by_call.values()), "attempts": 0, "acknowledged": 0, "lost": 0, "doubled": 0,
         "500 answers": 0, "503 without Retry-After": 0, "never new": 0, "unreadable": 0, "gave up": 0}
    latencies = []
    id_owner = {}
    for call_id, subs in by_call.items():
        ids, news, acked, first_try_only, accepted = set(), 0, [], True, False
        for body, attempts in subs:
            r["attempts"] += len(attempts)
            if len(attempts) > 1:
                first_try_only = False
            for status, seconds, answer, headers in attempts:
                latencies.append(seconds)
                if status is not None and status >= 500 and status != 503:
                    r["500 answers"] += 1
                if status == 503 and "retry-after" not in headers:
                    r["503 without Retry-After"] += 1
            status, _, answer, _ = attempts[-1]
            if status == 202:
                # Accepted, committed later: no id yet, and no is_new to give.
                r["acknowledged"] += 1
                acked.append(body)
                accepted = True
            elif status in (200, 201):
                r["acknowledged"] += 1
                acked.append(body)
                ids.add(answer["id"])
                news += answer["is_new"] is True
                if (status == 201) != (answer["is_new"] is True):
                    r["doubled"] += 1
            else:
                r["gave up"] += 1
        try:
            stored = read_back(stack, call_id)
        except RuntimeError:
            r["unreadable"] += 1
            continue
        if stored is None:
            r["lost"] += len(acked)
            continue
        kept = {stored["raw"].encode()} | {rev["raw"].encode() for rev in stored.get("revisions", [])}
        r["lost"] += sum(1 for body in acked if body not in kept)
        if len(ids) > 1 or (ids and stored["id"] not in ids) or news > 1:
            r["doubled"] += 1
        if id_owner.setdefault(stored["id"], call_id) != call_id:
            r["doubled"] += 1
        if acked and news == 0 and first_try_only and not accepted:
            r["never new"] += 1
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0  # noqa: E731
    r["p50 latency"] = f"{pct(0.50) * 1000:.0f} ms"
    r["p99 latency"] = f"{pct(0.99) * 1000:.0f} ms"
    r["calls"] = len(by_call)
    return r


BROKEN = ["lost", "doubled", "500 answers", "503 without Retry-After", "never new", "unreadable",
          "webhook reports lost", "trace batches lost", "pending after 60 s", "history violations",
          "events problems"]
# How long accepted (202) calls may take to be committed once storage is back.
COMMIT_WITHIN = 60


def pending_objects(stack):
    """The pending submissions (202) not committed yet, the webhook reports held (every
    hook here has an agent: a report is held only while the directory cannot be read), and
    the trace batches not indexed yet."""
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL_S3"], region_name="us-east-1",
                      aws_access_key_id="local", aws_secret_access_key="local",
                      config=Config(s3={"addressing_style": "path"}))
    keys = []
    for prefix in ("pending/", "held/", "traces/in/"):
        out = s3.list_objects_v2(Bucket=stack.env["FRAMES_BUCKET"], Prefix=prefix)
        keys += [o["Key"] for o in out.get("Contents", [])]
    return keys


def wait_for_commits(stack, within=COMMIT_WITHIN):
    """Seconds until every pending submission was committed, or None past `within`."""
    started = time.time()
    while time.time() - started < within:
        left = len(pending_objects(stack))
        if not left:
            return time.time() - started
        if int(time.time() - started) % 10 == 0:
            print(f"  {time.time() - started:.0f} s after the faults: {left} pending", file=sys.stderr)
        time.sleep(1)
    return None


# history last: its schedule holds the longest faults and kills a commit-pending instance.
PHASES = ["random", "outage", "s3", "burst", "webhooks", "traces", "history"]
OUTAGE_SECONDS = 30
S3_SECONDS = 20


def answers(statuses):
    """A table's answers column: each answer and how many got it (None: no answer)."""
    return ", ".join(f"{s or 'timeout'}: {n}" for s, n in sorted(statuses.items(), key=str))


def run(stack, seconds, seed, workers, out=sys.stdout, phases=("random",), one_shot=0,
        operations=history_run.OPERATIONS):
    """Drives `stack` through `phases` (the random faults for `seconds`; the history phase
    for at most `seconds` or `operations` requests), then checks; answers the report and
    the faults injected by kind."""
    rng = random.Random(seed)
    # The history and webhooks phases make their own calls.
    workload = Workload(stack, rng) if set(phases) - {"history", "webhooks"} else None
    stack.faults.seed(seed)
    stack.faults.reset_stats()
    # The faults are DynamoDB's; the clients' own rate limit is tested elsewhere.
    stack.ctl("workspace", "limit", "--id", stack.dev["workspace_id"], "--per-second", 1000)
    log = Log()
    reports = []
    bucket = stack.env["FRAMES_BUCKET"]
    started = time.time()
    settled, left_pending, history_violations = {}, 0, 0
    trace_calls, trace_batches = {}, []
    # Events out: an endpoint per workspace at a receiver that fails through the first phase
    # and then recovers (devstack.events_check).
    events = EventsPhase(stack, seed)
    try:
        for phase in phases:
            if phase == phases[0]:
                events.fail()
            if phase == "random":
                random_faults(stack, [stack.calls_table])
                drive(stack, workload, seconds, seed, workers, log, phase, one_shot)
            elif phase == "outage":
                outage(stack)
                drive(stack, workload, OUTAGE_SECONDS, seed, workers, log, phase, one_shot)
            elif phase == "s3":
                stack.faults.add({"service": "s3", "op": "PutObject", "fault": "slowdown", "rate": 0.34,
                                  "table": bucket})
                drive(stack, workload, S3_SECONDS, seed, workers, log, phase, one_shot)
            elif phase == "burst":
                burst(stack, workload, log, seed=seed)
            elif phase == "webhooks":
                reports += webhooks(stack, seed, workers)
            elif phase == "traces":
                trace_calls, trace_batches = traces(stack, seed, workers)
            elif phase == "history":
                violations, _ = history_run.run(stack, seed, operations, seconds, out=out)
                history_violations += len(violations)
            else:
                raise ValueError(f"no phase {phase!r}; one of {PHASES}")
            stack.faults.clear()
            events.recover()
            # Storage is back: every call accepted so far must be committed within 60 s,
            # counted from here. The next phase starts from a stack at rest, as each tests
            # one condition (locally, one process serves all of DynamoDB and S3, so a
            # backlog being committed slows every other request; in AWS it does not).
            waited = wait_for_commits(stack)
            settled[phase] = waited
            if waited is None:
                left_pending += len(pending_objects(stack))
    finally:
        stack.faults.clear()
        events.recover()
    elapsed = time.time() - started
    injected = stack.faults.stats()["injected"]
    report = check(stack, log)
    report["pending after 60 s"] = left_pending
    report["history violations"] = history_violations
    report["202 committed within"] = ", ".join(
        f"{phase} {'more than 60' if s is None else round(s)} s" for phase, s in settled.items())
    one_shot_lost = lost_by_client(stack, log)
    webhook_rows, webhook_losses = lost_reports(stack, reports)
    report["webhook reports lost"] = len(webhook_losses)
    trace_rows, trace_losses = trace_clients.lost_spans(stack, trace_calls, trace_batches)
    report["trace batches lost"] = len(trace_losses)
    report["events problems"] = len(events.settle(out))
    events.close()
    print(f"\nchaos: phases {', '.join(phases)} ({seconds} s of random faults; {elapsed:.0f} s in all), seed "
          f"{seed}, {workers} retrying and {one_shot} one-shot clients, {stack.instances} instances per function",
          file=out)
    print("\n| faults injected | count |\n|---|---|", file=out)
    for kind in sorted(injected):
        print(f"| {kind} | {injected[kind]} |", file=out)
    print("\n| measure (retrying clients) | value |\n|---|---|", file=out)
    for key in ["calls", "submissions", "attempts", "acknowledged", "gave up", *BROKEN, "202 committed within",
                "p50 latency", "p99 latency"]:
        flag = " (must be 0)" if key in BROKEN else ""
        print(f"| {key}{flag} | {report[key]} |", file=out)
    if one_shot_lost:
        print("\n| one-shot clients, phase | calls sent | lost | answers |\n|---|---|---|---|", file=out)
        for (kind, phase), row in sorted(one_shot_lost.items(), key=lambda kv: PHASES.index(kv[0][1])):
            print(f"| {phase} | {row['sent']} | {row['lost']} | {answers(row['statuses'])} |", file=out)
    if webhook_rows:
        print("\n| webhook reports, provider | sent | lost | answers |\n|---|---|---|---|", file=out)
        for label, row in sorted(webhook_rows.items()):
            print(f"| {label} | {row['sent']} | {row['lost']} | {answers(row['statuses'])} |", file=out)
        for r, why in webhook_losses[:10]:
            print(f"lost: {r.provider} {r.event} of {r.call_id} ({r.stage}): {why}", file=out)
    if trace_rows:
        print("\n| trace batches (one-shot exporter), stage | batches | spans | lost | answers | p50 | p99 |\n"
              "|---|---|---|---|---|---|---|", file=out)
        for stage, row in trace_rows.items():
            print(f"| {stage} | {row['sent']} | {row['spans']} | {row['lost']} | {answers(row['statuses'])} "
                  f"| {row['p50 ms']} ms | {row['p99 ms']} ms |", file=out)
        for b, why in trace_losses[:10]:
            print(f"lost: a batch of {b.call_id} ({b.stage}, {b.encoding}): {why}", file=out)
    broken = [k for k in BROKEN if report[k]]
    print(f"\n{'BROKEN: ' + ', '.join(broken) if broken else 'every promise held'}", file=out)
    return report, injected


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=float(os.environ.get("CHAOS_SECONDS", 120)))
    p.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED", time.time())))
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--instances", type=int, default=8)
    p.add_argument("--phases", default=os.environ.get("CHAOS_PHASES", ",".join(PHASES)))
    p.add_argument("--one-shot", type=int, default=4, help="one-shot clients alongside the retrying ones")
    p.add_argument("--operations", type=int, default=history_run.OPERATIONS,
                   help="the history phase's requests at most (it also stops after --seconds)")
    p.add_argument("--log", help="keep the stack's log (the functions' and the fault layer's) in this file")
    a = p.parse_args()
    log = open(a.log, "w") if a.log else None
    # Events' retries a hundred times sooner than Svix's schedule (a receiver's Retry-After
    # kept whole): what failed while the receiver did is delivered within minutes.
    env = {"EVENTS_RETRY_SCALE": "0.01"}
    with Stack(instances=a.instances, log=log, prepare=history_run.PREPARE, env=env) as stack:
        report, _ = run(stack, a.seconds, a.seed, a.workers, phases=a.phases.split(","), one_shot=a.one_shot,
                        operations=a.operations)
    sys.exit(1 if any(report[k] for k in BROKEN) else 0)


if __name__ == "__main__":
    main()
