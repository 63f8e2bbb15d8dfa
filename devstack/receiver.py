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
    def __init__(self):
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
                with receiver.lock:
                    receiver.got.append(Received(path, {k.lower(): v for k, v in self.headers.items()}, body, status))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
            step = script.pop(0) if script else 200
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
