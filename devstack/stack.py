"""The local stack as a client sees it, for the HTTP tests (tests/e2e) and `make chaos`.

    with Stack(instances=8) as stack:
        stack.post_create_call(body)          # POST /api/v1/public/call?workspace_id=…
        stack.faults.add({"op": "PutItem", "fault": "throttle", "times": 1})

Starts the local DynamoDB (moto behind the fault layer) on a free port, creates the tables
and a workspace, agent and API key with callctl, then serves every function (functions/)
behind the local API Gateway (devstack.gateway) on another free port: N instances per
function, each its own process with its own id block and directory cache, as Lambda runs
them, fed the events API Gateway would build (base64 bodies, the 6 MB event limit). Stops
everything it started on exit.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from devstack import dev_setup, gateway
from devstack.queues import Queues

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every function: one crate each under functions/, named as its binary.
FUNCTIONS = sorted(name for name in os.listdir(os.path.join(ROOT, "functions"))
                   if os.path.isfile(os.path.join(ROOT, "functions", name, "Cargo.toml")))


def one_route_each():
    """{function binary: (method, path)}: one route of each function of template.yaml, with
    its path parameters filled in (`{id}` → 1)."""
    routes = {}
    for method, path, binary in gateway.ROUTES:
        if method != "ANY":
            routes.setdefault(binary, (method, re.sub(r"\{[^}/]+\}", "1", path)))
    return routes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")


class Answer:
    """An HTTP answer: status, headers (lower-case names), parsed JSON body or None."""

    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.raw = raw
        try:
            self.body = json.loads(raw) if raw else None
        except ValueError:
            self.body = None

    def __repr__(self):
        return f"Answer({self.status}, {self.raw[:200]!r})"


def wait_for(what, seconds):
    """`what()` once it answers something true, polling every 0.25 s for at most `seconds`;
    then its last answer."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.25)
    return what()


def request(method, url, body=None, headers=None, timeout=30):
    """One HTTP request; a connection failure raises OSError."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Answer(r.status, r.getheaders(), r.read())
    except urllib.error.HTTPError as e:
        return Answer(e.code, e.headers.items(), e.read())


class Faults:
    """The fault layer's control endpoints (see devstack/faults.py)."""

    def __init__(self, endpoint):
        self.endpoint = endpoint

    def _call(self, method, path, spec=None):
        a = request(method, self.endpoint + path, json.dumps(spec or {}).encode(), {"Content-Type": "application/json"})
        if a.status != 200:
            raise RuntimeError(f"fault layer: {a.status} {a.raw!r}")
        return a.body

    def add(self, rule):
        return self._call("POST", "/_faults/rules", rule)["id"]

    def remove(self, rule_id):
        """Removes one rule (gone already: nothing)."""
        self._call("DELETE", "/_faults/rules", {"id": rule_id})

    def clear(self, table=None):
        """Removes every rule, or only those of `table`."""
        self._call("DELETE", "/_faults/rules", {} if table is None else {"table": table})

    def rules(self):
        return self._call("GET", "/_faults/rules")["rules"]

    def stats(self):
        return self._call("GET", "/_faults/stats")

    def reset_stats(self):
        self._call("DELETE", "/_faults/stats")

    def seed(self, seed):
        self._call("POST", "/_faults/seed", {"seed": seed})


class Stack:
    def __init__(self, instances=8, log=None, env=None, prepare=None):
        """`prepare(stack)`, when given, runs once the tables exist and before any function
        starts; what it answers is added to the functions' environment (settings that name
        what it made, such as `devstack.history_retention.prepare`'s workspaces)."""
        self.instances = instances
        self.prepare = prepare
        self.log = log or open(os.devnull, "w")
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="call-ingest-stack-")
        self.env = dict(os.environ)
        self.env.update(env or {})
        # Called with each workspace a run makes (`made_workspace`): the events check gives
        # it an endpoint before it has a call.
        self.workspace_hooks = []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        python = os.path.join(ROOT, ".venv", "bin", "python")
        ddb = subprocess.Popen(
            [python, "-m", "devstack.dynamodb", "--port", "0", "--watch-stdin"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
        )
        self.procs.append(ddb)
        line = ddb.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"local DynamoDB did not start: {line!r}")
        self.dynamodb = f"http://127.0.0.1:{line.split()[1]}"
        self.faults = Faults(self.dynamodb)
        tag = f"{os.getpid()}-{int(time.time())}"
        self.env.update({
            "AWS_ENDPOINT_URL_DYNAMODB": self.dynamodb,
            # moto serves S3 on the same port (the fault layer passes it through).
            "AWS_ENDPOINT_URL_S3": self.dynamodb, "FRAMES_BUCKET": f"frames-{tag}",
            # and SQS: S3 announces pending objects on a queue (devstack.queues).
            "AWS_ENDPOINT_URL_SQS": self.dynamodb,
            # and KMS: it seals webhook secrets.
            "AWS_ENDPOINT_URL_KMS": self.dynamodb,
            # and Comprehend: the fault layer's stand-in reads the text (devstack.comprehend).
            "AWS_ENDPOINT_URL_COMPREHEND": self.dynamodb,
            "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
            "CALLS_TABLE": f"calls-{tag}", "DIRECTORY_TABLE": f"directory-{tag}",
            "CURSOR_SECRET": self.env.get("CURSOR_SECRET") or os.urandom(32).hex(),
            "RUST_LOG": self.env.get("RUST_LOG", "warn"),
            # Recordings may be served by the local machine too (the browser tests' WAV).
            "VIEWER_MEDIA_SOURCES": "http://127.0.0.1:* http://localhost:*",
            # Events' endpoints may be the local receivers, on loopback (never set in AWS).
            "EVENTS_ALLOW_LOOPBACK": "true",
            "PATH": os.path.join(ROOT, ".venv", "bin") + os.pathsep + self.env.get("PATH", ""),
        })
        self.calls_table = self.env["CALLS_TABLE"]
        self.callctl = os.path.join(target_dir(), "debug", "callctl")
        packages = [arg for name in ["callctl", "callgen", *FUNCTIONS] for arg in ("-p", name)]
        subprocess.run(["cargo", "build", "--quiet", *packages], cwd=ROOT, env=self.env, check=True, stdout=self.log,
                       stderr=self.log)
        self.ctl("tables", "create")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        old_env = dict(os.environ)
        os.environ.update(self.env)
        try:
            with open(os.devnull, "w") as quiet:
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    self.dev = dev_setup.setup(self.callctl, self.url, os.path.join(self.tmp, "dev.json"))
                finally:
                    sys.stdout = stdout
        finally:
            os.environ.clear()
            os.environ.update(old_env)
        if self.prepare is not None:
            self.env.update(self.prepare(self))
        front = subprocess.Popen(
            [python, "-m", "devstack.gateway", "--port", str(self.port),
             "--instances", str(self.instances), "--bin", os.path.join(target_dir(), "debug")],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True,
        )
        self.procs.append(front)
        self.watch = front
        line = front.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the local API Gateway did not start: {line!r}")
        self.wait_until_serving(front)
        # The queue the gateway made for events (callctl endpoint replay and recover).
        self.env["EVENTS_QUEUE_URL"] = self.queue_url("EventDeliveriesQueue")

    def queue_url(self, logical):
        """The local URL of the template's queue `logical` (devstack.queues names it)."""
        import boto3

        sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=self.dynamodb,
                           aws_access_key_id="local", aws_secret_access_key="local")
        name = Queues({"Resources": {}}).name(logical, self.env["FRAMES_BUCKET"])
        return sqs.get_queue_url(QueueName=name)["QueueUrl"]

    def wait_until_serving(self, watch, within=900):
        """Until every function answers a request without a credential through one of its
        routes (401; the viewer, which takes none, its page or redirect)."""
        deadline = time.time() + within
        for binary, (method, path) in sorted(one_route_each().items()):
            while True:
                if watch.poll() is not None:
                    raise RuntimeError("the local API Gateway (devstack.gateway) exited")
                try:
                    body = b"{}" if method == "POST" else None
                    a = request(method, self.url + path, body, {"Content-Type": "application/json"}, timeout=120)
                    if a.status == 401 or (binary == "call-viewer" and a.status in (200, 308)):
                        break
                except OSError:
                    pass
                if time.time() > deadline:
                    raise RuntimeError(f"{binary} ({method} {path}) did not answer within {within} s")
                time.sleep(0.5)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        p.kill()
        self.procs = []

    def function_pids(self):
        """The processes of the function instances this stack's local API Gateway
        (devstack.gateway) started (its children; each instance is its own process)."""
        parent = str(self.watch.pid)
        out = subprocess.run(["pgrep", "-P", parent, "-x", "|".join(FUNCTIONS)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    # clients -----------------------------------------------------------------------------
    def ctl(self, *args):
        """callctl --json …, parsed; raises on failure."""
        out = subprocess.run([self.callctl, "--json", *map(str, args)], env=self.env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"callctl {' '.join(map(str, args))}: {out.stderr.strip()}")
        return json.loads(out.stdout) if out.stdout.strip() else None

    def made_workspace(self, ws):
        """Tells the hooks of `workspace_hooks` of a workspace just made."""
        for hook in self.workspace_hooks:
            hook(ws)
        return ws

    def callgen(self, *args):
        """A generated operation B body (testsupport/callgen): `callgen("--bytes", 1800000)`."""
        exe = os.path.join(target_dir(), "debug", "callgen")
        return subprocess.run([exe, *map(str, args)], check=True, capture_output=True).stdout

    def auth(self, extra=None):
        headers = {"Authorization": f"Bearer {self.dev['api_key']}", "Content-Type": "application/json"}
        headers.update(extra or {})
        return headers

    def post_create_call(self, body, agent=None, timeout=30, headers=None):
        remote = agent or self.dev["agent_remote_identifier"]
        url = f"{self.url}/api/v1/public/call?workspace_id={self.dev['workspace_id']}&agent_remote_identifier={remote}"
        return request("POST", url, body, self.auth(headers), timeout=timeout)

    def post_send_call_data(self, body, timeout=30):
        return request("POST", f"{self.url}/v1/calls", body, self.auth(), timeout=timeout)

    def get_call(self, call_id, workspace=None):
        """The stored call of `workspace` (the development one when None) with its revisions
        and raw bodies (callctl), or None."""
        try:
            return self.ctl("call", "get", "--workspace", workspace or self.dev["workspace_id"], "--call-id", call_id,
                            "--revisions", "--raw")
        except RuntimeError as e:
            if "no such call" in str(e):
                return None
            raise
