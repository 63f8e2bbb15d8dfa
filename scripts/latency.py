#!/usr/bin/env python3
"""Create-call latency over HTTP on the local stack: p50 and p99, by call size.

    latency.py [--calls 300] [--clients 4] [--instances 8] [--minutes 2,10]

Starts the local stack (devstack.stack, no faults), sends `--calls` new calls of each size
(callgen, one seed per call) from `--clients` threads, one at a time each, and prints the
percentiles of the time from sending the request to its answer. Debug binaries and moto
stand in for Lambda and DynamoDB: compare runs with each other, not with AWS.
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from devstack.stack import Stack  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def measure(stack, minutes, calls, clients):
    template = json.loads(stack.callgen("--minutes", minutes, "--seed", 1))
    bodies = []
    for i in range(calls):
        template["call_id"] = f"latency-{minutes}-{i}-{os.getpid()}"
        bodies.append(json.dumps(template).encode())
    times, statuses, lock = [], {}, threading.Lock()
    nxt = iter(range(calls))

    def client():
        while True:
            with lock:
                i = next(nxt, None)
            if i is None:
                return
            started = time.perf_counter()
            status = stack.post_create_call(bodies[i]).status
            took = (time.perf_counter() - started) * 1000
            with lock:
                times.append(took)
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(bodies[0]), times, statuses


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--instances", type=int, default=8)
    p.add_argument("--minutes", default="2,10")
    a = p.parse_args()
    # A budget no run reaches: every call takes the path it takes alone (201, not paced).
    with Stack(instances=a.instances, env={"RATE_LIMIT_PER_SECOND": "1000"}) as stack:
        measure(stack, 0.2, 20, a.clients)  # warm every instance
        print("| call | body | calls | p50 ms | p99 ms | mean ms | answers |")
        print("|---|---|---|---|---|---|---|")
        for minutes in a.minutes.split(","):
            size, times, statuses = measure(stack, float(minutes), a.calls, a.clients)
            print(f"| {minutes} min | {size // 1000} KB | {len(times)} | {percentile(times, 50):.0f} | "
                  f"{percentile(times, 99):.0f} | {statistics.mean(times):.0f} | {statuses} |", flush=True)


if __name__ == "__main__":
    main()
