#!/usr/bin/env python3
"""Local DynamoDB for development and tests: moto's server on 127.0.0.1:PORT.

    local_dynamodb.py --port 8000                 # until interrupted (make run)
    local_dynamodb.py --port 0 --watch-stdin      # tests: prints the port, exits when stdin closes

With --watch-stdin the server stops as soon as its parent goes away (its end of the pipe
closes), so a test run never leaves a server behind.
"""
import argparse
import signal
import socket
import sys
import threading

from moto.server import ThreadedMotoServer


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--watch-stdin", action="store_true")
    a = p.parse_args()
    port = a.port or free_port(a.host)
    server = ThreadedMotoServer(ip_address=a.host, port=port, verbose=False)
    server.start()
    print(f"READY {port}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if a.watch_stdin:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    server.stop()


if __name__ == "__main__":
    main()
