#!/usr/bin/env python3
"""`make chaos`: the HTTP API under random DynamoDB and S3 faults, with several instances
per function, then a check of every promise with faults off.

    chaos.py [--seconds 120] [--seed N] [--workers 12] [--instances 8]

Clients submit small calls and large calls (about 1.8 MB, frames in S3), replays of the same content
and concurrent revisions, and retry like real ones: on a network error, 408, 429 or 5xx,
up to 4 attempts with backoff (honouring Retry-After). The fault layer answers
throttling, internal errors, transaction conflicts and cancellations, drops replies of
applied writes, applies stuck writes after their retry, and delays replies past the SDK's
attempt timeout, at random (seeded).

Then, with faults off, every call is read back (callctl) and the table printed. Exit 1
when a promise broke: lost (acknowledged, not stored as current or as a revision),
doubled (two ids for one call, two is_new: true, one id for two calls), a 500, a 503
without Retry-After, a call whose every submission was answered at the first attempt
without any is_new: true, or an unreadable call.
"""
import argparse
import json
import os
import random
import sys
import threading
import time

from devstack.stack import Stack

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


class Workload:
    """Call ids, each with a few content variants (bodies sent byte for byte)."""

    def __init__(self, stack, rng, small=40, large=2):
        self.calls = []
        for i in range(small):
            base = json.loads(stack.callgen("--minutes", round(rng.uniform(0.2, 1.0), 2), "--seed", i + 1))
            self.calls.append(self.variants(base, f"chaos-small-{i}", 3))
        for i in range(large):
            base = json.loads(stack.callgen("--bytes", 1_800_000, "--seed", 1000 + i))
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
        self.submissions = []  # (call_id, body, [(status or None, seconds, answer body)])

    def add(self, call_id, body, attempts):
        with self.lock:
            self.submissions.append((call_id, body, attempts))


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


def drive(stack, workload, seconds, seed, workers):
    log = Log()
    deadline = time.time() + seconds

    def worker(n):
        rng = random.Random(seed * 1000 + n)
        while time.time() < deadline:
            call_id, variants = rng.choice(workload.calls)
            # Mostly the first content (replays), sometimes a new one (a revision).
            body = variants[0] if rng.random() < 0.5 else rng.choice(variants)
            log.add(call_id, body, submit(stack, call_id, body, rng))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return log


def check(stack, log):
    """The report: counts of every promise kept or broken."""
    by_call = {}
    for call_id, body, attempts in log.submissions:
        by_call.setdefault(call_id, []).append((body, attempts))
    r = {"submissions": len(log.submissions), "attempts": 0, "acknowledged": 0, "lost": 0, "doubled": 0,
         "500 answers": 0, "503 without Retry-After": 0, "never new": 0, "unreadable": 0, "gave up": 0}
    latencies = []
    id_owner = {}
    for call_id, subs in by_call.items():
        ids, news, acked, first_try_only = set(), 0, [], True
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
            if status in (200, 201):
                r["acknowledged"] += 1
                acked.append(body)
                ids.add(answer["id"])
                news += answer["is_new"] is True
                if (status == 201) != (answer["is_new"] is True):
                    r["doubled"] += 1
            else:
                r["gave up"] += 1
        try:
            stored = stack.get_call(call_id)
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
        if acked and news == 0 and first_try_only:
            r["never new"] += 1
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0  # noqa: E731
    r["p50 latency"] = f"{pct(0.50) * 1000:.0f} ms"
    r["p99 latency"] = f"{pct(0.99) * 1000:.0f} ms"
    r["calls"] = len(by_call)
    return r


BROKEN = ["lost", "doubled", "500 answers", "503 without Retry-After", "never new", "unreadable"]


def run(stack, seconds, seed, workers, out=sys.stdout):
    """Drives `stack` under random faults for `seconds`, then checks; answers the report
    and the faults injected by kind."""
    rng = random.Random(seed)
    workload = Workload(stack, rng)
    stack.faults.seed(seed)
    stack.faults.reset_stats()
    # The faults are DynamoDB's; the clients' own rate limit is tested elsewhere.
    stack.ctl("workspace", "limit", "--id", stack.dev["workspace_id"], "--per-second", 1000)
    for fault, op, rate in FAULTS:
        stack.faults.add({"op": op, "fault": fault, "rate": rate, "table": stack.calls_table, "seconds": 3.5})
    for fault, op, rate in S3_FAULTS:
        stack.faults.add({"service": "s3", "op": op, "fault": fault, "rate": rate,
                          "table": stack.env["FRAMES_BUCKET"], "seconds": 3.5})
    started = time.time()
    try:
        log = drive(stack, workload, seconds, seed, workers)
    finally:
        stack.faults.clear()
    elapsed = time.time() - started
    injected = stack.faults.stats()["injected"]
    report = check(stack, log)
    print(f"\nchaos: {seconds} s ({elapsed:.0f} s with the last submissions), seed {seed}, "
          f"{workers} clients, {stack.instances} instances per function", file=out)
    print("\n| faults injected | count |\n|---|---|", file=out)
    for kind in sorted(injected):
        print(f"| {kind} | {injected[kind]} |", file=out)
    print("\n| measure | value |\n|---|---|", file=out)
    for key in ["calls", "submissions", "attempts", "acknowledged", "gave up", *BROKEN, "p50 latency", "p99 latency"]:
        flag = " (must be 0)" if key in BROKEN else ""
        print(f"| {key}{flag} | {report[key]} |", file=out)
    broken = [k for k in BROKEN if report[k]]
    print(f"\n{'BROKEN: ' + ', '.join(broken) if broken else 'every promise held'}", file=out)
    return report, injected


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=float(os.environ.get("CHAOS_SECONDS", 120)))
    p.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED", time.time())))
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--instances", type=int, default=8)
    a = p.parse_args()
    with Stack(instances=a.instances) as stack:
        report, _ = run(stack, a.seconds, a.seed, a.workers)
    sys.exit(1 if any(report[k] for k in BROKEN) else 0)


if __name__ == "__main__":
    main()
