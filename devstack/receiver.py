"""An events receiver on loopback, as a team's endpoint would be (issue 33): it takes each
POST, keeps what came (path, headers, body, when), and answers what it is told to. Tests
and `make chaos` verify what it kept with the `standardwebhooks` reference library.

    with Receiver() as r:
        url = r.url("/in")            # http://127.0.0.1:<port>/in
        r.answer("/in", 503, 503, 200)  # the next answers to /in, then 200 for ever
        r.wait(lambda got: len(got) >= 3)
"""
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Received:
    def __init__(self, path, headers, body, status):
        self.path = path
        self.headers = headers
        self.body = body
        self.status = status
        self.at = time.time()


class Receiver:
    def __init__(self, answers=None, port=0, on_receive=None):
        """`answers(path)`, when given, answers a request no script is left for: a step as
        `answer` takes, or None for 200. `on_receive(received)` is told of each request
        once it is kept."""
        self.answers = answers
        self.on_receive = on_receive
        self.lock = threading.Lock()
        self.got = []
        self.scripts = {}  # path -> [status | (status, headers) | ("sleep", seconds)]
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?")[0]
                status, headers, pause = receiver._next(path)
                if pause:
                    time.sleep(pause)
                got = Received(path, {k.lower(): v for k, v in self.headers.items()}, body, status)
                with receiver.lock:
                    receiver.got.append(got)
                if receiver.on_receive is not None:
                    receiver.on_receive(got)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender gave up waiting (an answer past its timeout)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def url(self, path="/"):
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, path, *answers):
        """The next answers to `path`, in order: a status, (status, {header: value}), or
        ("sleep", seconds) then 200; after them, 200."""
        with self.lock:
            self.scripts.setdefault(path, []).extend(answers)

    def _next(self, path):
        with self.lock:
            script = self.scripts.get(path) or []
            step = script.pop(0) if script else None
        if step is None and self.answers is not None:
            step = self.answers(path)
        if step is None:
            step = 200
        if isinstance(step, tuple) and step[0] == "sleep":
            return 200, {}, step[1]
        if isinstance(step, tuple):
            return step[0], step[1], 0
        return step, {}, 0

    def received(self, path=None):
        with self.lock:
            return [r for r in self.got if path is None or r.path == path]

    def wait(self, done, path=None, timeout=60):
        """Waits until `done(received)` holds (False after `timeout` seconds)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if done(self.received(path)):
                return True
            time.sleep(0.1)
        return done(self.received(path))



def main():
    """`make run`'s receiver: prints each event the development workspace's endpoint is
    sent, and whether its signature verifies (the endpoint's secret is read from
    --endpoint-file, which `make run` writes once it has made the endpoint)."""
    import argparse
    import json
    import os

    import standardwebhooks

    p = argparse.ArgumentParser(prog="python -m devstack.receiver", description=main.__doc__)
    p.add_argument("--port", type=int, default=9001)
    p.add_argument("--endpoint-file", required=True)
    a = p.parse_args()

    def show(got):
        try:
            with open(a.endpoint_file) as f:
                secret = json.load(f)["secret"]
            event = standardwebhooks.Webhook(secret).verify(got.body, got.headers)
            data = event["data"]
            print(f"event {got.headers.get('webhook-id')}: {event['type']} of call {data['id']}, revision "
                  f"{data.get('revision', '-')} (signature verified)", flush=True)
        except Exception as e:  # shown, whatever it is: this is a developer's window
            print(f"event {got.headers.get('webhook-id')}: not verified ({type(e).__name__}): {got.body[:200]!r}",
                  flush=True)

    receiver = Receiver(port=a.port, on_receive=show)
    print(f"Events receiver on {receiver.url('/events')}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
