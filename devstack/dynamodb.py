"""Local DynamoDB for development and tests: moto's server on 127.0.0.1:PORT, behind the
fault and fidelity layer of devstack.faults.

    python -m devstack.dynamodb --port 8000             # until interrupted (make run)
    python -m devstack.dynamodb --port 0 --watch-stdin  # tests: prints the port, exits when stdin closes

Requests are handled one at a time. DynamoDB makes each request atomic; moto does not:
its TransactWriteItems restores a snapshot of the table when a transaction is cancelled,
which on a threaded server erases a concurrent transaction that had committed. Serving
requests one at a time restores DynamoDB's guarantee (connections stay concurrent).

In front of moto, the fault layer refuses what DynamoDB refuses and moto accepts (long
keys, numbers out of range, large items) and injects DynamoDB's failures on command
(`POST /_faults/rules`; see devstack/faults.py).

DEVSTACK_TRACEMALLOC=<file> writes where the process's memory goes to <file> every 10 s.
DEVSTACK_PROFILE=<file> writes where its time goes to <file> every 10 s: each service's
operations (count, ms inside moto) and the functions that took most of it (cProfile). For
finding what holds a drain back: every request waits for the one before it.

With --watch-stdin the server stops as soon as its parent goes away (its end of the pipe
closes), so a test run never leaves a server behind.
"""
import argparse
import os
import signal
import sys
import threading
import time

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

from devstack import moto_speed, transactions
from devstack.faults import FaultLayer, service_of
from devstack.wire import s3_operation


class QuietHandler(MotoRequestHandler):
    """No line per request: `make run` shows the functions' logs, not the database's."""

    def log_request(self, *args, **kwargs):
        pass

    def log_error(self, *args, **kwargs):
        pass


class Profile:
    """Time spent in moto, by service and operation, and by function (one cProfile per
    service: its requests run one at a time, see `one_at_a_time`)."""

    def __init__(self, path):
        import cProfile

        self.path = path
        self.ops = {}
        self.profiles = {}
        self.lock = threading.Lock()
        self.new = cProfile.Profile

    def run(self, service, environ, call):
        op = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2] or s3_operation(environ)
        with self.lock:
            profile = self.profiles.setdefault(service, self.new())
        started = time.perf_counter()
        profile.enable()
        try:
            return call()
        finally:
            profile.disable()
            took = (time.perf_counter() - started) * 1000
            with self.lock:
                count, ms = self.ops.get((service, op), (0, 0.0))
                self.ops[(service, op)] = (count + 1, ms + took)

    def write_every(self, every=10):
        import io
        import pstats

        while True:
            time.sleep(every)
            with self.lock:
                ops = sorted(self.ops.items(), key=lambda kv: -kv[1][1])
                profiles = dict(self.profiles)
            out = io.StringIO()
            for (service, op), (count, ms) in ops:
                out.write(f"{service:9} {op:28} {count:7} {ms:10.0f} ms {ms / count:7.2f} ms each\n")
            for service, profile in profiles.items():
                out.write(f"\n--- {service}\n")
                try:
                    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
                except (TypeError, ValueError):
                    pass
            with open(self.path, "w") as f:
                f.write(out.getvalue())


def one_at_a_time(app, profile=None):
    """Each service's requests one at a time, and the services alongside one another: a
    DynamoDB request never waits for an S3 one. Behind one lock, the pending sweep's S3
    traffic, the clients and the read-back queued on one another. (moto's S3 is not safe
    to list while another thread writes the bucket, hence its own lock.)"""
    locks = {}
    guard = threading.Lock()

    def serial(environ, start_response):
        # S3 sends its notifications to moto's SQS from the S3 request: one lock for both.
        service = {"sqs": "s3"}.get(service_of(environ), service_of(environ))
        with guard:
            lock = locks.setdefault(service, threading.Lock())
        with lock:
            if profile is None:
                return list(app(environ, start_response))
            return profile.run(service, environ, lambda: list(app(environ, start_response)))

    return serial


def key_names(region, table):
    """Partition and sort key names of `table`, its global indexes' included."""
    t = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].tables.get(table)
    if t is None:
        return [], []
    return [k for k in t.hash_key_names if k], [k for k in t.range_key_names if k]


def memory_report(path, every=10):
    """Where this process's memory goes (DEVSTACK_TRACEMALLOC=<file>): the 25 lines that
    hold the most, rewritten every `every` seconds. For finding what grows under load."""
    import tracemalloc

    tracemalloc.start(40)
    while True:
        time.sleep(every)
        top = tracemalloc.take_snapshot().statistics("traceback")[:12]
        with open(path, "w") as f:
            for stat in top:
                f.write(f"{stat.size / 1e6:.1f} MB in {stat.count} blocks\n")
                for frame in stat.traceback:
                    if not frame.filename.endswith(("copy.py", "decoder.py", "__init__.py")):
                        f.write(f"    {frame.filename}:{frame.lineno}\n")


def main():
    p = argparse.ArgumentParser(prog="python -m devstack.dynamodb", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--watch-stdin", action="store_true")
    a = p.parse_args()
    transactions.install()
    moto_speed.install()
    profile = Profile(os.environ["DEVSTACK_PROFILE"]) if os.environ.get("DEVSTACK_PROFILE") else None
    if profile is not None:
        threading.Thread(target=profile.write_every, daemon=True).start()
    app = FaultLayer(one_at_a_time(DomainDispatcherApplication(create_backend_app), profile), key_names)
    server = make_server(a.host, a.port, app, threaded=True, request_handler=QuietHandler)
    # werkzeug listens with a backlog of 128: the clients, 8 instances per function, the
    # committer's 16 commits at once and the read-back overflow it, and a refused connection
    # looks like an outage. DynamoDB and S3 take whatever is sent.
    server.socket.listen(1024)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {server.server_address[1]}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if a.watch_stdin:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    trace = os.environ.get("DEVSTACK_TRACEMALLOC")
    if trace:
        threading.Thread(target=memory_report, args=(trace,), daemon=True).start()
    done.wait()
    server.shutdown()


if __name__ == "__main__":
    main()
