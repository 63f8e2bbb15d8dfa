"""Clients run side by side: the load phases' workers (scripts/chaos.py, devstack/trace_clients.py)."""
import threading


def run_each(workers, target):
    """`target(n)` for n in range(workers), each on a thread of its own; returns when all
    have."""
    threads = [threading.Thread(target=target, args=(n,)) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
