#!/usr/bin/env python3
"""Start-up time of Lambda bootstraps: from process start to the first poll of the runtime
API (GET /runtime/invocation/next), with a fake runtime API on loopback.

    startup_time.py [--runs 30] [--baseline BINARY] BINARY [BINARY ...]

Prints the median and the 90th percentile for each binary, and with `--baseline` (a
hello-world `lambda_http` binary: `testsupport/hello-lambda`) each median's ratio to the
baseline's, measured in the same run, runs interleaved so that the machine's load falls on
all alike. The functions read their configuration as in Lambda (WARM_UP off, so no
connection is opened during init). `make bench-startup` runs it on release builds.
"""
import argparse
import http.server
import os
import statistics
import subprocess
import threading
import time

polled = threading.Event()


class RuntimeApi(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.endswith("/runtime/invocation/next"):
            polled.set()
            time.sleep(5)  # no work: the process is killed before this returns

    def log_message(self, *args):
        pass


def env_for(port):
    return dict(os.environ,
                AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{port}", AWS_LAMBDA_FUNCTION_NAME="startup",
                AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256", AWS_LAMBDA_FUNCTION_VERSION="1",
                AWS_LAMBDA_LOG_STREAM_NAME="s", AWS_LAMBDA_LOG_GROUP_NAME="g",
                AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
                CALLS_TABLE="calls", DIRECTORY_TABLE="directory", LOG_FORMAT="json", WARM_UP="false",
                # list-calls refuses to start without its signing key (template.yaml: 64 characters).
                CURSOR_SECRET="s" * 64)


def once(binary, env):
    """Milliseconds from spawning `binary` to its first poll of the runtime API."""
    polled.clear()
    start = time.perf_counter()
    proc = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not polled.wait(10):
        proc.kill()
        raise SystemExit(f"{binary} never polled the runtime API")
    took = (time.perf_counter() - start) * 1000
    proc.kill()
    proc.wait()
    return took


def measure(binaries, port, runs):
    """Each binary's times, one run of each in turn."""
    env = env_for(port)
    times = {b: [] for b in binaries}
    for _ in range(runs):
        for b in binaries:
            times[b].append(once(b, env))
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--baseline", help="the binary the others' medians are divided by")
    p.add_argument("binaries", nargs="+")
    a = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RuntimeApi)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    binaries = ([a.baseline] if a.baseline else []) + a.binaries
    times = measure(binaries, server.server_address[1], a.runs)
    base = statistics.median(times[a.baseline]) if a.baseline else None
    for b in binaries:
        t = sorted(times[b])
        median, p90 = statistics.median(t), t[int(len(t) * 0.9) - 1]
        ratio = f", {median / base:.2f}x the baseline" if base and b != a.baseline else ""
        print(f"{os.path.basename(b)}: median {median:.1f} ms, p90 {p90:.1f} ms{ratio}, size {os.path.getsize(b)} B")
    server.shutdown()


if __name__ == "__main__":
    main()
