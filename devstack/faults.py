"""DynamoDB's failure modes and limits, in front of moto (see devstack/dynamodb.py).

moto never throttles, never answers TransactionConflictException, never loses a reply after
applying a write, and accepts keys and numbers that DynamoDB refuses. This WSGI middleware
sits between the SDK and moto and does what DynamoDB does:

Fidelity (always on): refuses, with DynamoDB's ValidationException,
  - key values over 2048 bytes (partition) / 1024 bytes (sort), on reads as well as writes
    (moto checks them on PutItem only);
  - numbers outside DynamoDB's range (magnitude above 9.99..E+125 or below 1E-130, more
    than 38 significant digits);
  - items over 400 KB in PutItem, TransactWriteItems and BatchWriteItem puts.

Faults (on command), in DynamoDB's exact wire shapes:
  throttle        400 ThrottlingException
  provisioned     400 ProvisionedThroughputExceededException
  internal        500 InternalServerError
  conflict        400 TransactionConflictException (PutItem, UpdateItem, DeleteItem)
  cancel_conflict 400 TransactionCanceledException, reason TransactionConflict on one item
  cancel_throttle 400 TransactionCanceledException, reason ThrottlingError on one item
  cancel_condition 400 TransactionCanceledException, reason ConditionalCheckFailed on one
                  item (a condition that is false, e.g. a random id already taken)
  gateway         502 with a plain-text body and no error code (a proxy or load balancer)
  invalid         400 ValidationException whose message quotes the request (as DynamoDB's
                  messages can: "…invalid: <value>"), for what may never reach a log
  not_found       400 ResourceNotFoundException (a table missing or being created)
  creating        DescribeTable says CREATING; UpdateTimeToLive is refused; data calls
                  answer ResourceNotFoundException (a table that is not active yet)
  lost_reply      the request is applied, then the connection is closed with no reply
  late            the connection is closed at once with no reply, and the request is
                  applied `seconds` later (an attempt stuck in the network that arrives
                  after the SDK's retry)
  observe         nothing: the request passes, the rule counts it (how many reads did that take?)
  delay           the request is applied, the reply waits `seconds` (default 3.5, past the
                  SDK's 3 s attempt timeout)

IAM (once configured): before anything else, every request a function instance signs
(access key id `fn.<binary>.<n>`) is checked against that function's policy statements in
template.yaml and refused as AWS refuses it (devstack.iam); a read of a missing S3 object is
403, not 404, to a function that may not list the bucket, as in S3.

Control, on the same port (JSON bodies):
  POST   /_faults/rules   {"op": "PutItem" | "*", "fault": "...", "table": "...",
                           "contains": "...", "skip": 0, "times": 1, "rate": 0.1,
                           "item": 0, "seconds": 3.5}    -> {"id": n}
         `times` injections after `skip` matching requests (deterministic), or, with
         `rate`, each matching request with that probability (seeded, for chaos runs).
         `table` and `contains` narrow what matches (a table named in the request; a
         substring of the request body). `item`: which transaction item gets the reason.
  DELETE /_faults/rules   {"id": n} removes that rule; {"table": "..."} that table's
                          rules; {} removes all
  GET    /_faults/rules   {"rules": [{"id", "fault", "op", "table", "fired"}]}
  GET    /_faults/stats   {"injected": {fault: count}, "refused": {reason: count},
                           "denied": {"<binary> <action> <resource>": count}}
  POST   /_faults/seed    {"seed": 1}
  POST   /_faults/iam     {"resources": {logical id: local name}, "aliases": {"alias/x": key id},
                           "template": path (default template.yaml, re-read on each POST),
                           "stack_name": "...", "region": "us-east-1", "enabled": true}
                          -> {"enabled", "functions": [binary], "problems": [...]}
  GET    /_faults/iam     the configuration, {"functions": [...]}
  DELETE /_faults/iam     IAM off (until configured, nothing is checked)
"""
import json
import random
import re
import socket
import threading
import time
from decimal import Decimal, InvalidOperation

from devstack import comprehend, iam
from devstack.wire import s3_operation, service_of  # noqa: F401 (devstack.dynamodb imports service_of here)

PREFIX = "com.amazonaws.dynamodb.v20120810#"
MAX_ITEM_BYTES = 400 * 1024
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
MAX_TRANSACTION_ITEMS = 100
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
# Write units one partition key value takes a second, whatever the table's capacity mode.
PARTITION_WRITE_UNITS = 1000
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
FAULTS = {
    "throttle", "provisioned", "internal", "gateway", "conflict", "cancel_conflict", "cancel_throttle",
    "cancel_condition", "invalid",
    "not_found", "creating", "lost_reply", "late", "delay", "observe", "slowdown",
}
# What S3 answers (the rest of FAULTS are DynamoDB's own errors).
S3_FAULTS = {"slowdown", "internal", "lost_reply", "late", "delay", "observe"}
# Comprehend's (the local stand-in, devstack/comprehend.py): throttled, failing, slow, counted.
COMPREHEND_FAULTS = {"throttle", "internal", "delay", "observe"}
_SIGV4_REGION = re.compile(r"Credential=[^/]+/[^/]+/([^/]+)/")


def error(kind, message, status=400, **extra):
    """An error answer as DynamoDB sends it: JSON 1.0 with `__type`."""
    body = {"__type": PREFIX + kind, "message": message}
    body.update(extra)
    return status, body


def validation(message):
    return error("ValidationException", message)


def cancelled(n, item, code, message):
    """A transaction of `n` items cancelled for item `item`, with one reason per item."""
    at = min(item, max(n - 1, 0))
    reasons = [{"Code": code, "Message": message} if i == at else {"Code": "None"} for i in range(n)]
    listed = ", ".join(r["Code"] for r in reasons)
    return 400, {
        "__type": PREFIX + "TransactionCanceledException",
        "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{listed}]",
        "CancellationReasons": reasons,
    }


class Rule:
    def __init__(self, spec, rid):
        fault = spec.get("fault")
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {sorted(FAULTS)}")
        self.service = spec.get("service", "dynamodb")
        if self.service not in ("dynamodb", "s3", "comprehend"):
            raise ValueError(f"unknown service {self.service!r}; dynamodb, s3 or comprehend")
        if self.service == "comprehend" and fault not in COMPREHEND_FAULTS:
            raise ValueError(f"Comprehend has no fault {fault!r}; one of {sorted(COMPREHEND_FAULTS)}")
        if self.service == "s3" and fault not in S3_FAULTS:
            raise ValueError(f"S3 has no fault {fault!r}; one of {sorted(S3_FAULTS)}")
        if self.service == "dynamodb" and fault == "slowdown":
            raise ValueError("slowdown is S3's; DynamoDB throttles (throttle, provisioned)")
        self.id = rid
        self.fault = fault
        self.op = spec.get("op", "*")
        self.table = spec.get("table")
        self.contains = spec.get("contains")
        self.skip = int(spec.get("skip", 0))
        self.times = spec.get("times", None if "rate" in spec else 1)
        self.rate = spec.get("rate")
        self.item = int(spec.get("item", 0))
        self.seconds = float(spec.get("seconds", 3.5))
        self.fired = 0

    def describe(self):
        return {
            "id": self.id, "service": self.service, "fault": self.fault, "op": self.op, "table": self.table,
            "fired": self.fired,
        }

    def matches(self, op, tables, body, service="dynamodb"):
        """`tables`: the tables a DynamoDB request names, or an S3 request's bucket; `body`:
        a DynamoDB request's JSON, or an S3 request's path."""
        if self.service != service:
            return False
        if self.op != "*" and self.op != op:
            return False
        if self.table is not None and self.table not in tables:
            return False
        if self.contains is not None and self.contains not in body:
            return False
        return self.applies(op)

    def applies(self, op):
        """Whether this fault means anything for `op` (a conflict on a GetItem does not)."""
        if self.fault == "conflict":
            return op in ("PutItem", "UpdateItem", "DeleteItem")
        if self.fault.startswith("cancel_"):
            return op == "TransactWriteItems"
        if self.fault == "creating":
            return op not in ("CreateTable", "DeleteTable", "DescribeTimeToLive", "ListTables")
        return True

    def fire(self, rng):
        """Whether this matching request gets the fault (counts it)."""
        if self.skip > 0:
            self.skip -= 1
            return False
        if self.rate is not None:
            return rng.random() < float(self.rate)
        if self.times is None or self.times > 0:
            if self.times is not None:
                self.times -= 1
            return True
        return False


def tables_named(op, request):
    """The tables a request names."""
    if op in ("BatchWriteItem", "BatchGetItem"):
        return set(request.get("RequestItems", {}))
    if op in ("TransactWriteItems", "TransactGetItems"):
        names = set()
        for entry in request.get("TransactItems", []):
            for action in entry.values():
                if isinstance(action, dict) and "TableName" in action:
                    names.add(action["TableName"])
        return names
    return {request["TableName"]} if "TableName" in request else set()


def value_size(v):
    """DynamoDB's size of an attribute value."""
    (kind, x), = v.items()
    if kind in ("S",):
        return len(x.encode())
    if kind == "B":
        return b64_len(x)
    if kind == "N":
        return (len(x.lstrip("-").replace(".", "").strip("0")) + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(e) for e in x)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(e) for k, e in x.items())
    if kind == "SS":
        return sum(len(e.encode()) for e in x)
    if kind == "NS":
        return sum(value_size({"N": e}) for e in x)
    if kind == "BS":
        return sum(b64_len(e) for e in x)
    return 0


def b64_len(text):
    """Decoded length of base64 `text` (binary values are base64 on the wire)."""
    return len(text) * 3 // 4 - text[-2:].count("=")


def item_size(item):
    return sum(len(k.encode()) + value_size(v) for k, v in item.items())


def number_problem(text):
    """Why DynamoDB refuses the number `text`, or None."""
    try:
        d = Decimal(text)
    except InvalidOperation:
        return "The parameter cannot be converted to a numeric value"
    if not d.is_finite():
        return "The parameter cannot be converted to a numeric value"
    if d == 0:
        return None
    # Exact arithmetic only: Decimal's context would round to 28 digits.
    digits = "".join(map(str, d.as_tuple().digits)).strip("0")
    if len(digits) > 38:
        return "Attempting to store more than 38 significant digits in a Number"
    if d.copy_abs() > Decimal("9.9999999999999999999999999999999999999E+125"):
        return "Number overflow. Attempting to store a number with magnitude larger than supported range"
    if d.copy_abs() < Decimal("1E-130"):
        return "Number underflow. Attempting to store a number with magnitude smaller than supported range"
    return None


def numbers_in(v):
    (kind, x), = v.items()
    if kind == "N":
        yield x
    elif kind == "NS":
        yield from x
    elif kind == "L":
        for e in x:
            yield from numbers_in(e)
    elif kind == "M":
        for e in x.values():
            yield from numbers_in(e)


class Fidelity:
    """The limits DynamoDB enforces and moto lets through."""

    def __init__(self, key_names):
        # key_names(region, table) -> (partition key names, sort key names), GSIs included
        self.key_names = key_names

    def check(self, op, request, region):
        """A refusal (status, body), or None."""
        if op in ("TransactWriteItems", "TransactGetItems"):
            entries = request.get("TransactItems", [])
            if len(entries) > MAX_TRANSACTION_ITEMS:
                return validation(
                    "1 validation error detected: Value at 'transactItems' failed to satisfy constraint: "
                    f"Member must have length less than or equal to {MAX_TRANSACTION_ITEMS}"
                )
            if sum(item_size(item) for _, item, whole in self.items_written(op, request) if whole) > MAX_TRANSACTION_BYTES:
                return validation("Transaction request cannot be larger than 4 MB")
        for table, item, whole in self.items_written(op, request):
            problem = self.check_keys(region, table, item)
            if problem:
                return problem
            for v in item.values():
                for text in numbers_in(v):
                    reason = number_problem(text)
                    if reason:
                        return validation(reason)
            if whole and item_size(item) > MAX_ITEM_BYTES:
                return validation("Item size has exceeded the maximum allowed size")
        for values in self.expression_values(op, request):
            for v in values.values():
                for text in numbers_in(v):
                    reason = number_problem(text)
                    if reason:
                        return validation(reason)
        return None

    def check_keys(self, region, table, item):
        hashes, ranges = self.key_names(region, table)
        for name in hashes:
            if name in item and value_size(item[name]) > MAX_PARTITION_KEY_BYTES:
                return validation(
                    "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of 2048 bytes"
                )
        for name in ranges:
            if name in item and value_size(item[name]) > MAX_SORT_KEY_BYTES:
                return validation(
                    "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
                )
        return None

    @staticmethod
    def items_written(op, request):
        """(table, attributes, is a whole item) for every item or key a request carries."""
        if op == "PutItem":
            yield request.get("TableName"), request.get("Item", {}), True
        elif op in ("GetItem", "UpdateItem", "DeleteItem"):
            yield request.get("TableName"), request.get("Key", {}), False
        elif op == "BatchWriteItem":
            for table, writes in request.get("RequestItems", {}).items():
                for w in writes:
                    if "PutRequest" in w:
                        yield table, w["PutRequest"].get("Item", {}), True
                    if "DeleteRequest" in w:
                        yield table, w["DeleteRequest"].get("Key", {}), False
        elif op == "BatchGetItem":
            for table, spec in request.get("RequestItems", {}).items():
                for key in spec.get("Keys", []):
                    yield table, key, False
        elif op in ("TransactWriteItems", "TransactGetItems"):
            for entry in request.get("TransactItems", []):
                for kind, action in entry.items():
                    if kind == "Put":
                        yield action.get("TableName"), action.get("Item", {}), True
                    elif isinstance(action, dict) and "Key" in action:
                        yield action.get("TableName"), action.get("Key", {}), False

    @staticmethod
    def expression_values(op, request):
        if op == "TransactWriteItems":
            for entry in request.get("TransactItems", []):
                for action in entry.values():
                    if isinstance(action, dict) and "ExpressionAttributeValues" in action:
                        yield action["ExpressionAttributeValues"]
        elif "ExpressionAttributeValues" in request:
            yield request["ExpressionAttributeValues"]


class Throughput:
    """DynamoDB's per-partition limit on writes: about 1,000 write units a second for one
    partition key value (a unit per KB of an item written, two in a transaction), whatever
    the table's capacity mode. moto has none. Counted in whole seconds."""

    def __init__(self, key_names, clock=time.time):
        self.key_names = key_names
        self.clock = clock
        self.lock = threading.Lock()
        self.used = {}  # (table, partition key value) -> (second, units)

    def writes(self, op, request, region):
        """(table, partition key value, write units) of every item `request` writes."""
        if op not in WRITES:
            return
        factor = 2 if op == "TransactWriteItems" else 1
        for table, item, whole in Fidelity.items_written(op, request):
            hashes, _ = self.key_names(region, table)
            if hashes and hashes[0] in item:
                units = max(1, -(-item_size(item) // 1024)) if whole else 1
                yield table, json.dumps(item[hashes[0]], sort_keys=True), units * factor

    def admit(self, op, request, region, limit=PARTITION_WRITE_UNITS):
        """Whether the writes fit this second's units of their partitions (then they are
        counted); a request that does not fit is refused whole and counts nothing."""
        wanted = {}
        for table, partition, units in self.writes(op, request, region):
            wanted[(table, partition)] = wanted.get((table, partition), 0) + units
        if not wanted:
            return True
        now = int(self.clock())
        with self.lock:
            used = {k: (self.used[k][1] if self.used.get(k, (None,))[0] == now else 0) for k in wanted}
            if any(used[k] + units > limit for k, units in wanted.items()):
                return False
            for k, units in wanted.items():
                self.used[k] = (now, used[k] + units)
            if len(self.used) > 100_000:
                self.used = {k: v for k, v in self.used.items() if v[0] == now}
        return True


class FaultLayer:
    """WSGI middleware: control endpoints, fidelity checks and faults around `app`.

    `app` must be safe to call from several threads (devstack.dynamodb serialises it);
    delays and dropped replies happen outside it, so they hold up no other request.
    """

    def __init__(self, app, key_names):
        self.app = app
        self.fidelity = Fidelity(key_names)
        self.throughput = Throughput(key_names)
        self.lock = threading.Lock()
        self.rules = []
        self.next_id = 1
        self.rng = random.Random(0)
        self.injected = {}
        self.refused = {}
        self.denied = {}
        self.iam = None  # iam.Policies while IAM is enforced
        self.iam_config = None

    # control ---------------------------------------------------------------------------
    def control(self, environ):
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "")
        body = read_body(environ)
        spec = json.loads(body or b"{}")
        if path == "/_faults/iam":
            return self.iam_control(method, spec)
        with self.lock:
            if path == "/_faults/rules" and method == "POST":
                try:
                    rule = Rule(spec, self.next_id)
                except (ValueError, TypeError) as e:
                    return 400, {"error": str(e)}
                self.next_id += 1
                self.rules.append(rule)
                return 200, {"id": rule.id}
            if path == "/_faults/rules" and method == "DELETE":
                table, rid = spec.get("table"), spec.get("id")
                if rid is not None:
                    self.rules = [r for r in self.rules if r.id != rid]
                else:
                    self.rules = [r for r in self.rules if table is not None and r.table != table]
                return 200, {"rules": len(self.rules)}
            if path == "/_faults/rules" and method == "GET":
                return 200, {"rules": [r.describe() for r in self.rules]}
            if path == "/_faults/stats" and method == "GET":
                return 200, {"injected": dict(self.injected), "refused": dict(self.refused),
                             "denied": dict(self.denied)}
            if path == "/_faults/stats" and method == "DELETE":
                self.injected.clear()
                self.refused.clear()
                self.denied.clear()
                return 200, {}
            if path == "/_faults/seed" and method == "POST":
                self.rng = random.Random(spec.get("seed", 0))
                return 200, {}
        return 404, {"error": f"no control endpoint {method} {path}"}

    def iam_control(self, method, spec):
        if method == "POST":
            try:
                policies = iam.Policies.from_spec(spec)
            except Exception as e:  # a template that cannot be read or resolved
                return 400, {"error": f"{type(e).__name__}: {e}"}
            config = dict(spec, template=spec.get("template") or iam.TEMPLATE, enabled=bool(spec.get("enabled", True)))
            with self.lock:
                self.iam_config = (config, policies)
                self.iam = policies if config["enabled"] else None
        elif method == "DELETE":
            with self.lock:
                self.iam, self.iam_config = None, None
        elif method != "GET":
            return 404, {"error": f"no control endpoint {method} /_faults/iam"}
        if self.iam_config is None:
            return 200, {"enabled": False, "functions": []}
        config, policies = self.iam_config
        return 200, dict(config, **policies.describe())

    def deny(self, request, denial, start_response):
        """AWS's refusal of `request`, counted."""
        with self.lock:
            what = f"{denial.binary} {denial.action} {denial.resource}"
            self.denied[what] = self.denied.get(what, 0) + 1
        iam.report_once(f"denied: {denial.binary} {denial.action} (first on {denial.resource})"
                        + (f": {denial.reason}" if denial.reason else ""))
        status, headers, data = iam.refusal(request, denial)
        reason = {400: "Bad Request", 403: "Forbidden"}[status]
        start_response(f"{status} {reason}", headers + [("Content-Length", str(len(data)))])
        return [data]

    def pick(self, op, tables, body, service="dynamodb"):
        with self.lock:
            for rule in self.rules:
                if rule.matches(op, tables, body, service) and rule.fire(self.rng):
                    rule.fired += 1
                    kind = rule.fault if rule.service == "dynamodb" else f"{rule.service} {rule.fault}"
                    self.injected[kind] = self.injected.get(kind, 0) + 1
                    return rule
        return None

    # requests --------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/_faults/"):
            status, answer = self.control(environ)
            return respond(start_response, status, answer, content_type="application/json")
        body = None
        policies = self.iam
        if policies is not None:  # IAM first, for every service
            body = read_body(environ)
            request = iam.Request.from_environ(environ, body)
            denial = policies.check(request)
            if denial is not None:
                return self.deny(request, denial, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if service_of(environ) == "s3":
            return self.s3(environ, start_response, body)
        if target.startswith(comprehend.TARGET):
            return self.comprehend(target.split(".", 1)[1], environ, start_response, body)
        if target in ("AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch"):
            return self.sqs_send(target.split(".", 1)[1], environ, start_response, body)
        if not target.startswith("DynamoDB_20120810."):
            return self.app(environ, start_response) if body is None else self.forward(environ, start_response, body)
        op = target.split(".", 1)[1]
        body = read_body(environ) if body is None else body
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self.forward(environ, start_response, body)
        region = region_of(environ)
        refusal = self.fidelity.check(op, request, region)
        if refusal:
            self.count_refused(refusal[1]["message"].split(".")[0][:60])
            return respond(start_response, *refusal)
        if not self.throughput.admit(op, request, region):
            with self.lock:
                self.refused["partition throughput"] = self.refused.get("partition throughput", 0) + 1
            if op == "TransactWriteItems":
                return respond(start_response, *cancelled(len(request.get("TransactItems", [])), 0, "ThrottlingError",
                                                          "Throughput exceeds the current capacity of your table or index."))
            return respond(start_response, *error(
                "ProvisionedThroughputExceededException",
                "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling "
                "your table or index so please try again shortly.",
            ))
        rule = self.pick(op, tables_named(op, request), body.decode("utf-8", "replace"))
        if rule is None:
            return self.forward(environ, start_response, body)
        return self.inject(rule, op, request, environ, start_response, body)

    def sqs_send(self, op, environ, start_response, body=None):
        """SendMessage(Batch) as SQS takes it: a message holding a character SQS refuses
        (sqs_unsendable) is refused, alone in a batch (its entry under `Failed`, the others
        sent), where moto would send it."""
        body = read_body(environ) if body is None else body
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self.forward(environ, start_response, body)
        if op == "SendMessage":
            if not sqs_unsendable(request.get("MessageBody", "")):
                return self.forward(environ, start_response, body)
            self.count_refused("sqs: invalid message contents")
            return respond(start_response, 400, {"__type": "com.amazonaws.sqs#InvalidMessageContents",
                                                 "message": SQS_INVALID_CHARACTERS})
        entries = request.get("Entries") or []
        bad = [e for e in entries if sqs_unsendable(e.get("MessageBody", ""))]
        if not bad:
            return self.forward(environ, start_response, body)
        self.count_refused("sqs: invalid message contents")
        good = [e for e in entries if not sqs_unsendable(e.get("MessageBody", ""))]
        answer = {"Successful": []}
        if good:
            status, headers, chunks = call(self.app, environ, json.dumps({**request, "Entries": good}).encode())
            if not status.startswith("200"):
                start_response(status, headers)
                return chunks
            answer = json.loads(b"".join(chunks) or b"{}")
        failed = [{"Id": e.get("Id"), "SenderFault": True, "Code": "InvalidMessageContents",
                   "Message": SQS_INVALID_CHARACTERS} for e in bad]
        answer["Failed"] = (answer.get("Failed") or []) + failed
        return respond(start_response, 200, answer)

    def count_refused(self, reason):
        with self.lock:
            self.refused[reason] = self.refused.get(reason, 0) + 1

    def comprehend(self, op, environ, start_response, body=None):
        """A Comprehend request: answered by the local stand-in, unless a rule faults it."""
        body = read_body(environ) if body is None else body
        rule = self.pick(op, set(), body.decode("utf-8", "replace"), service="comprehend")
        json11 = "application/x-amz-json-1.1"
        if rule is not None and rule.fault == "throttle":
            return respond(start_response, 400, {"__type": "ThrottlingException", "Message": "Rate exceeded"},
                           content_type=json11)
        if rule is not None and rule.fault == "internal":
            return respond(start_response, 500, {"__type": "InternalServerException", "Message": "Internal error"},
                           content_type=json11)
        if rule is not None and rule.fault == "delay":
            time.sleep(rule.seconds)
        status, answer = comprehend.answer(op, body)
        return respond(start_response, status, answer, content_type=json11)

    def s3(self, environ, start_response, body=None):
        """An S3 request (path-style): faults by operation, bucket and key."""
        body = read_body(environ) if body is None else body
        path = environ.get("PATH_INFO", "")
        bucket = path.lstrip("/").split("/", 1)[0]
        rule = self.pick(s3_operation(environ), {bucket}, path, service="s3")
        if rule is None:
            return self.s3_forward(environ, start_response, body)
        if rule.fault == "slowdown":
            return s3_error(start_response, 503, "SlowDown", "Please reduce your request rate.")
        if rule.fault == "internal":
            return s3_error(start_response, 500, "InternalError", "We encountered an internal error. Please try again.")
        return self.inject(rule, "", {}, environ, start_response, body)

    def inject(self, rule, op, request, environ, start_response, body):
        f = rule.fault
        if f == "throttle":
            return respond(start_response, *error("ThrottlingException", "Rate of requests exceeds the allowed throughput."))
        if f == "provisioned":
            return respond(start_response, *error(
                "ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded. "
                "Consider increasing your provisioning level with the UpdateTable API.",
            ))
        if f == "internal":
            return respond(start_response, *error("InternalServerError", "Internal server error", status=500))
        if f == "invalid":
            quoted = body.decode("utf-8", "replace")[:2000]
            return respond(start_response, *validation(f"One or more parameter values were invalid: {quoted}"))
        if f == "gateway":
            start_response("502 Bad Gateway", [("Content-Type", "text/plain"), ("Content-Length", "11")])
            return [b"Bad Gateway"]
        if f == "conflict":
            return respond(start_response, *error("TransactionConflictException", "Transaction is ongoing for the item"))
        if f.startswith("cancel_"):
            n = len(request.get("TransactItems", []))
            code, message = {
                "cancel_conflict": ("TransactionConflict", "Transaction is ongoing for the item"),
                "cancel_condition": ("ConditionalCheckFailed", "The conditional request failed"),
                "cancel_throttle": ("ThrottlingError", "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly."),
            }[f]
            return respond(start_response, *cancelled(n, rule.item, code, message))
        if f == "not_found":
            return respond(start_response, *error("ResourceNotFoundException", "Requested resource not found"))
        if f == "creating":
            if op == "DescribeTable":
                status, headers, chunks = call(self.app, environ, body)
                try:
                    described = json.loads(b"".join(chunks))
                    described["Table"]["TableStatus"] = "CREATING"
                    return respond(start_response, 200, described, content_type="application/x-amz-json-1.0")
                except (ValueError, KeyError):
                    start_response(status, headers)
                    return chunks
            if op == "UpdateTimeToLive":
                return respond(start_response, *error(
                    "ResourceInUseException", f"Attempt to change a resource which is still in use: Table is being created: {request.get('TableName')}"
                ))
            return respond(start_response, *error("ResourceNotFoundException", "Requested resource not found"))
        if f == "lost_reply":
            call(self.app, environ, body)
            drop_connection(environ)
            return respond(start_response, 500, {"dropped": True})
        if f == "observe":
            return self.forward(environ, start_response, body)
        if f == "late":
            timer = threading.Timer(rule.seconds, call, (self.app, environ, body))
            timer.daemon = True
            timer.start()
            drop_connection(environ)
            return respond(start_response, 500, {"dropped": True})
        if f == "delay":
            status, headers, chunks = call(self.app, environ, body)
            time.sleep(rule.seconds)
            start_response(status, headers)
            return chunks
        raise AssertionError(f)

    def forward(self, environ, start_response, body):
        status, headers, chunks = call(self.app, environ, body)
        start_response(status, headers)
        return chunks

    def s3_forward(self, environ, start_response, body):
        """As S3: a missing object is 403, not 404, to a function that may not list its bucket."""
        policies = self.iam
        request = iam.Request.from_environ(environ, body) if policies is not None else None
        denial = request and iam.missing_object_denial(policies, request)
        if not denial:
            return self.forward(environ, start_response, body)
        status, headers, chunks = call(self.app, environ, body)
        if status.startswith("404") and (request.method == "HEAD" or b"NoSuchKey" in b"".join(chunks)):
            return self.deny(request, denial, start_response)
        start_response(status, headers)
        return chunks


SQS_INVALID_CHARACTERS = ("Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | "
                          "#x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")


def sqs_unsendable(text):
    """Whether SQS refuses a message body holding `text`: a character outside #x9, #xA, #xD,
    #x20 to #xD7FF, #xE000 to #xFFFD and #x10000 to #x10FFFF (U+FFFE and U+FFFF, control
    characters, and lone surrogates, which JSON can spell)."""
    return any(not (c in "\t\n\r" or " " <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd" or c >= "\U00010000")
               for c in text)


def read_body(environ):
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length <= 0 and environ.get("wsgi.input_terminated"):  # chunked: read to its end
        return environ["wsgi.input"].read()
    return environ["wsgi.input"].read(length) if length > 0 else b""


def call(app, environ, body):
    """Runs `app` on a request whose body was already read."""
    import io

    environ = {k: v for k, v in environ.items() if k != "werkzeug.socket"}
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["status"], captured["headers"] = status, headers
        return lambda _data: None

    chunks = list(app(environ, start_response))
    return captured["status"], captured["headers"], chunks


def respond(start_response, status, answer, content_type="application/x-amz-json-1.0"):
    data = json.dumps(answer).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}.get(status, "")
    start_response(
        f"{status} {reason}",
        [("Content-Type", content_type), ("Content-Length", str(len(data))), ("x-amzn-RequestId", "fault-layer")],
    )
    return [data]


def s3_error(start_response, status, code, message):
    """An error answer as S3 sends it: XML, with a request id."""
    data = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f'<RequestId>fault-layer</RequestId></Error>').encode()
    reason = {500: "Internal Server Error", 503: "Slow Down"}.get(status, "")
    start_response(f"{status} {reason}", [
        ("Content-Type", "application/xml"), ("Content-Length", str(len(data))), ("x-amz-request-id", "fault-layer"),
    ])
    return [data]


def region_of(environ):
    m = _SIGV4_REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
    return m.group(1) if m else "us-east-1"


def drop_connection(environ):
    """Closes the client's connection without a reply: the write happened, the SDK never
    hears of it."""
    sock = environ.get("werkzeug.socket")
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
