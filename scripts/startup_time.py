#!/usr/bin/env python3
"""Start-up time of Lambda bootstraps: from process start to the first poll of the runtime
API (GET /runtime/invocation/next), with a fake runtime API on loopback.

    startup_time.py [--runs 30] BINARY [BINARY ...]

Prints the median and the 90th percentile for each binary. The functions read their
configuration as in Lambda (WARM_UP off, so no connection is opened during init).
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


def measure(binary, port, runs):
    env = dict(os.environ,
               AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{port}", AWS_LAMBDA_FUNCTION_NAME="startup",
               AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256", AWS_LAMBDA_FUNCTION_VERSION="1",
               AWS_LAMBDA_LOG_STREAM_NAME="s", AWS_LAMBDA_LOG_GROUP_NAME="g",
               AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
               CALLS_TABLE="calls", DIRECTORY_TABLE="directory", LOG_FORMAT="json", WARM_UP="false")
    times = []
    for _ in range(runs):
        polled.clear()
        start = time.perf_counter()
        proc = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not polled.wait(10):
            proc.kill()
            raise SystemExit(f"{binary} never polled the runtime API")
        times.append((time.perf_counter() - start) * 1000)
        proc.kill()
        proc.wait()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9) - 1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("binaries", nargs="+")
    a = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RuntimeApi)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for b in a.binaries:
        median, p90 = measure(b, server.server_address[1], a.runs)
        print(f"{b}: median {median:.1f} ms, p90 {p90:.1f} ms, size {os.path.getsize(b)} B")
    server.shutdown()


if __name__ == "__main__":
    main()
