"""The local API Gateway: serves the functions' routes as an HTTP API does, in front of
several instances of each function, each its own process running the very binary Lambda
runs (every function of template.yaml), talking to this module through the Lambda Runtime
API as it would to Lambda.

What it does as AWS does (and `cargo lambda watch` does not):
  * builds the API Gateway HTTP API event (payload format 2.0);
  * passes a body base64-encoded (`isBase64Encoded`) when it is not UTF-8 text or carries a
    Content-Encoding, so such bodies reach the handler;
  * routes by method and path, with path parameters (`{id}`), as template.yaml declares;
  * answers 500 when a function's answer is over Lambda's 6 MB response limit;
  * throttles each route as the template's route settings say (devstack.throttles): 429;
  * refuses a request whose event would be over Lambda's 6 MB limit for a synchronous
    invocation (6,291,456 bytes: the whole event, where a JSON body is an escaped string),
    with API Gateway's own answer: 413 `{"message":"Request Too Long"}`, no X-Request-Id
    (see README "Limits");
  * refuses bodies over the HTTP API's 10 MB payload limit the same way;
  * gives each instance one event at a time, and queues the rest, as Lambda does;
  * answers 500 `{"message":"Internal Server Error"}` when a function fails or exits;
  * answers a request that no route serves, whatever its method (TRACE, CONNECT, PROPFIND
    and any other too), 404 `{"message":"Not Found"}` in JSON, never http.server's HTML
    501 page; a method a path's routes do not name still reaches the path's ANY route (the
    function answers 405 itself);
  * takes many connections at once: a listen backlog of 1024, not socketserver's 5 (with 5,
    fifty clients connecting together see resets and timeouts).
Each function instance signs its AWS requests with the access key id `fn.<binary>.<n>`, and
once the functions run the gateway asks the local stack (AWS_ENDPOINT_URL_DYNAMODB) to hold
each to its own IAM statements in template.yaml (devstack.iam), as the function's role
does in AWS; the gateway warns and carries on when it cannot.
It runs the functions template.yaml runs on a schedule (every LOCAL_SCHEDULE_SECONDS) and
those fed by a queue (devstack.queues: the queues, S3's notifications to them and the event
source mapping). It also serves Lambda's Invoke API, `POST /2015-03-31/functions/<name>/invocations`, so an
event file can be sent as it is (`cargo lambda invoke -A 127.0.0.1 -P <port> <name>`).

Usage: python -m devstack.gateway --port 9000 --instances 8 --bin DIR   (DIR holds the functions' binaries)
Prints "READY <port>" on stdout once listening.
"""
import argparse
import base64
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote

from devstack import iam
from devstack.queues import Queues
from devstack.streams import Streams
from devstack.throttles import Throttles

# Lambda's limit on a synchronous invocation's event, in bytes.
EVENT_LIMIT = 6 * 1024 * 1024
# The HTTP API's limit on a request body, in bytes.
PAYLOAD_LIMIT = 10 * 1024 * 1024
# API Gateway's integration timeout.
TIMEOUT_S = 30
# Lambda's Invoke API, for events sent as they are (`events/`).
INVOKE_PATH = re.compile(r"/2015-03-31/functions/([A-Za-z0-9_-]+)/invocations")
# The template whose HTTP API routes this serves.
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "template.yaml")


def load_template(path=TEMPLATE):
    """template.yaml, read once: the routes, schedules, timeouts, throttles and queues below
    are all read from this one parse."""
    import yaml  # PyYAML, in the virtualenv (a dependency of moto and the SAM CLI)

    with open(path) as f:
        return yaml.safe_load(f)


def _functions(template):
    return [r for r in template["Resources"].values() if r.get("Type") == "AWS::Serverless::Function"]


def _binary(resource):
    return resource["Metadata"]["BuildProperties"]["Binary"]


def template_routes(template):
    """The HTTP API's routes as template.yaml declares them: (method, path, function binary)
    for each HttpApi event of each function."""
    return [
        (event["Properties"]["Method"].upper(), event["Properties"]["Path"], _binary(resource))
        for resource in _functions(template)
        for event in resource["Properties"].get("Events", {}).values()
        if event.get("Type") == "HttpApi"
    ]


def template_schedules(template):
    """The functions template.yaml runs on a schedule (an EventBridge `Schedule` event):
    their binaries."""
    return [
        _binary(resource)
        for resource in _functions(template)
        if any(e.get("Type") == "Schedule" for e in resource["Properties"].get("Events", {}).values())
    ]


def template_timeouts(template):
    """Each function's timeout in seconds (its own `Timeout`, else the Globals'): {binary: s}."""
    default = template.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    return {_binary(resource): resource["Properties"].get("Timeout", default) for resource in _functions(template)}


def scheduled_event():
    """What EventBridge hands a function run on a schedule."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"version": "0", "id": str(uuid.uuid4()), "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "000000000000", "time": now, "region": os.environ.get("AWS_REGION", "us-east-1"),
            "resources": [], "detail": {}}


def run_on_schedule(function, seconds):
    """Invokes `function` every `seconds` (AWS: the template's rate; locally shorter, so a
    test need not wait a minute), one invocation at a time."""
    def loop():
        while True:
            time.sleep(seconds)
            function.invoke(json.dumps(scheduled_event()).encode())

    threading.Thread(target=loop, daemon=True).start()


# (method, path, function). A route with the request's method wins over ANY, as in API
# Gateway; `{name}` is one path segment.
TEMPLATE_DOC = load_template()
ROUTES = template_routes(TEMPLATE_DOC)
SCHEDULED = template_schedules(TEMPLATE_DOC)
THROTTLES = Throttles(TEMPLATE_DOC)
TIMEOUTS = template_timeouts(TEMPLATE_DOC)
# How often scheduled functions run locally (`LOCAL_SCHEDULE_SECONDS`, default 5).
LOCAL_SCHEDULE_SECONDS = float(os.environ.get("LOCAL_SCHEDULE_SECONDS", "5"))
# Lambda's limit on a function's answer (a synchronous invocation's response payload).
RESPONSE_LIMIT = 6 * 1024 * 1024


def route_pattern(template):
    """The regular expression of a route's path: `{name}` is one segment, a greedy
    `{name+}` (only at the end) one or more."""
    pattern = re.sub(r"\\{(\w+)\\\+\\}$", r"(?P<\1>.+)", re.escape(template))
    return re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", pattern)


def route_for(method, path):
    """(route key, path parameters, function name) of the route serving a request, or None.
    As API Gateway chooses: a route without a greedy variable before one with it, then the
    request's method before ANY."""
    for greedy in (False, True):
        for wanted in (method, "ANY"):
            for route_method, template, name in ROUTES:
                if route_method != wanted or template.endswith("+}") != greedy:
                    continue
                match = re.fullmatch(route_pattern(template), path)
                if match:
                    return f"{route_method} {template}", match.groupdict(), name
    return None
TEXT_TYPES = ("text/", "application/json", "application/javascript", "application/xml")


class Server(ThreadingHTTPServer):
    """A threading HTTP server with a listen backlog for many clients connecting at once
    (socketserver's default is 5; server_activate passes this to listen(), which the kernel
    caps at net.core.somaxconn)."""

    request_queue_size = 1024
    daemon_threads = True


class Invocation:
    def __init__(self, event):
        self.id = str(uuid.uuid4())
        self.event = event
        # When it was asked for: its deadline counts from here (see `Runtime.do_GET`).
        self.asked = time.time()
        self.done = threading.Event()
        self.response = None  # (ok, bytes)


class Function:
    """One function: its Runtime API endpoint, its queue of events and its instances."""

    def __init__(self, name, binary, instances, env, log):
        self.name = name
        self.queue = queue.Queue()
        self.pending = {}
        self.lock = threading.Lock()
        self.server = Server(("127.0.0.1", 0), runtime_handler(self))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        port = self.server.server_address[1]
        self.env = dict(env)
        self.env.update({
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
            "AWS_LAMBDA_FUNCTION_NAME": name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        })
        self.binary = binary
        self.log = log
        self.stopping = False
        self.procs = [self.spawn(i) for i in range(instances)]
        threading.Thread(target=self.replace_dead, daemon=True).start()

    def replace_dead(self):
        """As Lambda does after an instance dies (killed, out of memory): a new one takes its
        place, with empty memory (its own id block and caches). The event it held is not
        answered: its caller times out (Lambda would answer an error at once)."""
        while not self.stopping:
            time.sleep(0.5)
            for i, p in enumerate(self.procs):
                if p.poll() is not None and not self.stopping:
                    self.procs[i] = self.spawn(i)

    def spawn(self, i):
        # Instance i of this function signs as `fn.<binary>.<i>`: the local stack's IAM
        # (devstack.iam) holds it to this function's statements in template.yaml.
        env = dict(self.env, AWS_LAMBDA_LOG_STREAM_NAME=f"local/{i}", AWS_ACCESS_KEY_ID=f"fn.{self.name}.{i}")
        env.setdefault("AWS_SECRET_ACCESS_KEY", "local")
        return subprocess.Popen([self.binary], env=env, stdout=self.log, stderr=self.log)

    def invoke(self, event):
        """Runs `event` on the next free instance; answers (ok, bytes) or None on timeout."""
        inv = Invocation(event)
        with self.lock:
            self.pending[inv.id] = inv
        self.queue.put(inv)
        inv.done.wait(TIMEOUT_S)
        with self.lock:
            self.pending.pop(inv.id, None)
        return inv.response

    def finish(self, inv_id, ok, body):
        with self.lock:
            inv = self.pending.get(inv_id)
        if inv is not None:
            inv.response = (ok, body)
            inv.done.set()

    def stop(self):
        self.stopping = True
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        self.server.shutdown()


def runtime_handler(function):
    class Runtime(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if not self.path.endswith("/runtime/invocation/next"):
                return self.reply(404, b'{"message":"not found"}')
            inv = function.queue.get()
            # The function's timeout, counted from when the event was asked for: Lambda
            # starts an instance where this waits for a free one, and API Gateway's 30 s
            # count from the request. So a function that watches its deadline answers
            # before the gateway gives up, here as in AWS.
            deadline = int((inv.asked + TIMEOUTS.get(function.name, TIMEOUT_S - 1)) * 1000)
            self.reply(200, inv.event, [
                ("Lambda-Runtime-Aws-Request-Id", inv.id),
                ("Lambda-Runtime-Deadline-Ms", str(deadline)),
                ("Lambda-Runtime-Invoked-Function-Arn",
                 f"arn:aws:lambda:us-east-1:123456789012:function:{function.name}"),
                ("Lambda-Runtime-Trace-Id", f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}"),
            ])

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            parts = self.path.split("/")
            if "invocation" in parts and parts[-1] in ("response", "error"):
                function.finish(parts[-2], parts[-1] == "response", body)
            elif parts[-1] == "error":
                sys.stderr.write(f"{function.name}: init error {body[:500]!r}\n")
            self.reply(202, b'{"status":"OK"}')

    return Runtime


def is_text(content_type, content_encoding, body):
    """Whether API Gateway would pass the body as text: a text type (a body without a
    Content-Type is binary, as AWS treats it), no encoding, UTF-8."""
    if content_encoding or not content_type:
        return False
    if not content_type.lower().startswith(TEXT_TYPES) and "+json" not in content_type.lower():
        return False
    try:
        body.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def build_event(method, path, raw_query, headers, body, source_ip, route="", path_parameters=None):
    """The HTTP API's event (payload 2.0) for a request, as JSON bytes."""
    joined = {}
    for k, v in headers:
        k = k.lower()
        joined[k] = f"{joined[k]},{v}" if k in joined else v
    query = {}
    for k, v in parse_qsl(raw_query, keep_blank_values=True):
        query[k] = f"{query[k]},{v}" if k in query else v
    route = route or f"{method} {path}"
    now = time.time()
    event = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": joined,
        "requestContext": {
            "accountId": "123456789012", "apiId": "local", "domainName": "127.0.0.1", "domainPrefix": "127",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                     "userAgent": joined.get("user-agent", "")},
            "requestId": base64.b64encode(os.urandom(12)).decode(), "routeKey": route, "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)), "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = path_parameters
    if body:
        if is_text(joined.get("content-type"), joined.get("content-encoding"), body):
            event["body"] = body.decode("utf-8")
        else:
            event["body"] = base64.b64encode(body).decode()
            event["isBase64Encoded"] = True
    # As Lambda receives it: compact, non-ASCII characters as UTF-8.
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def front_handler(functions):
    class Front(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def __getattr__(self, name):
            # Every method, whatever it is, goes to the routes (http.server would answer a
            # method without its do_<METHOD> with an HTML 501): as in API Gateway, a path's
            # ANY route takes it, and a request no route serves is 404.
            if name.startswith("do_"):
                return self.handle_any
            raise AttributeError(name)

        def gateway_answer(self, status, message, close=False):
            """API Gateway's own answer: `{"message":…}` in JSON (no body for HEAD)."""
            body = json.dumps({"message": message}, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("apigw-requestid", base64.b64encode(os.urandom(12)).decode())
            if close:
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def send_error(self, code, message=None, explain=None):
            """http.server's own refusals (a malformed request line, a header or URI too
            long) in the gateway's JSON shape rather than its HTML page."""
            self.gateway_answer(code, self.responses.get(code, ("Error",))[0], close=True)

        def handle_any(self):
            path, _, raw_query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            if length > PAYLOAD_LIMIT:
                self.close_connection = True
                return self.gateway_answer(413, "Request Too Long")
            body = self.rfile.read(length) if length else b""
            invoked = INVOKE_PATH.fullmatch(path)
            if invoked and self.command == "POST":
                return self.invoke_directly(invoked.group(1), body)
            found = route_for(self.command, path)
            if found is None:
                return self.gateway_answer(404, "Not Found")
            route, path_parameters, name = found
            if not THROTTLES.admit(route):
                return self.gateway_answer(429, "Too Many Requests")
            function = functions[name]
            # Header values as the socket carried them (latin-1 is how http.server read them).
            headers = [(k, v.encode("latin-1").decode("utf-8", "replace")) for k, v in self.headers.items()]
            event = build_event(self.command, path, raw_query, headers, body, self.client_address[0], route,
                                {k: unquote(v) for k, v in path_parameters.items()})
            if len(event) > EVENT_LIMIT:
                return self.gateway_answer(413, "Request Too Long")
            answer = function.invoke(event)
            if answer is None:
                return self.gateway_answer(503, "Service Unavailable")
            ok, raw = answer
            if len(raw) > RESPONSE_LIMIT:
                # Lambda refuses the answer; API Gateway has no answer to give.
                return self.gateway_answer(500, "Internal Server Error")
            try:
                response = json.loads(raw) if ok else None
                status = int(response["statusCode"])
            except (ValueError, KeyError, TypeError):
                return self.gateway_answer(500, "Internal Server Error")
            out = response.get("body") or ""
            out = base64.b64decode(out) if response.get("isBase64Encoded") else out.encode("utf-8")
            self.send_response(status)
            for k, v in (response.get("headers") or {}).items():
                if k.lower() != "content-length":
                    self.send_header(k, v)
            for k, values in (response.get("multiValueHeaders") or {}).items():
                for v in values:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(out)

        def invoke_directly(self, name, event):
            """Lambda's Invoke API (`cargo lambda invoke`, `aws lambda invoke`): the event
            as given, the function's answer as it gave it."""
            function = functions.get(name)
            if function is None:
                return self.gateway_answer(404, f"Function not found: {name}")
            if len(event) > EVENT_LIMIT:
                return self.gateway_answer(413, "Request must be smaller than 6291456 bytes for the InvokeFunction operation")
            answer = function.invoke(event)
            if answer is None:
                return self.gateway_answer(504, "Task timed out")
            ok, raw = answer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if not ok:
                self.send_header("X-Amz-Function-Error", "Unhandled")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Front


def enforce_iam(endpoint):
    """Each function held to its own statements in template.yaml by the local stack at
    `endpoint` (devstack.faults); a warning, never a failure, when that cannot be done."""
    try:
        answer = iam.enforce(endpoint, os.environ, TEMPLATE)
    except Exception as e:
        sys.stderr.write(f"gateway: warning: IAM is not enforced locally ({type(e).__name__}: {e})\n")
        return
    for problem in answer.get("problems", []):
        sys.stderr.write(f"gateway: IAM: {problem}\n")


def main():
    parser = argparse.ArgumentParser(prog="python -m devstack.gateway", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--bin", required=True, help="directory holding the functions' binaries")
    args = parser.parse_args()
    # SO_REUSEADDR is set before bind (HTTPServer.allow_reuse_address). Bound first: the
    # functions are told where the API is (PUBLIC_BASE_URL, for events' links).
    functions = {}
    server = Server((args.host, args.port), front_handler(functions))
    os.environ.setdefault("PUBLIC_BASE_URL", f"http://{args.host}:{server.server_address[1]}")
    # The queues first: the functions are told their URLs (a template variable whose value
    # is `Ref: <queue>`, such as EVENTS_QUEUE_URL).
    queues = Queues(TEMPLATE_DOC)
    consumers = queues.consumers()
    local_queues = consumers and os.environ.get("AWS_ENDPOINT_URL_SQS")
    if local_queues:
        bucket = os.environ["FRAMES_BUCKET"]
        queues.create(bucket)
        os.environ.update(queues.variables())
    # Requests' instances (routes and the Invoke API) and the instances events other than
    # requests run (one for a schedule, one for each poller of a queue: the event source
    # mapping's MaximumConcurrency; one for each stream) are kept apart, as Lambda's
    # concurrency is shared but a sweep never holds the instance a request was promised.
    background = {}
    started = []
    for _, _, name in ROUTES:
        if name not in functions:
            f = Function(name, os.path.join(args.bin, name), args.instances, os.environ, sys.stderr)
            functions[name] = f
            started.append(f)
    streams = Streams(TEMPLATE_DOC)
    sources = streams.sources() if os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") else []
    for name in sorted(set(SCHEDULED) | {c[0] for c in consumers} | {s[0] for s in sources}):
        instances = (name in SCHEDULED) + sum(c[3] for c in consumers if c[0] == name)
        instances += sum(1 for s in sources if s[0] == name)
        f = Function(name, os.path.join(args.bin, name), instances, os.environ, sys.stderr)
        background[name] = f
        functions.setdefault(name, f)
        started.append(f)
        if name in SCHEDULED:
            run_on_schedule(f, LOCAL_SCHEDULE_SECONDS)
    if local_queues:
        for name, logical, batch, pollers in consumers:
            queues.poll(logical, bucket, background[name], batch, pollers)
    for name, table, batch, patterns, partial in sources:
        streams.poll(background[name], os.environ, table, batch, patterns, partial)
    if os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
        enforce_iam(os.environ["AWS_ENDPOINT_URL_DYNAMODB"])

    def stop(*_):
        for f in started:
            f.stop()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"READY {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        stop()


if __name__ == "__main__":
    main()
