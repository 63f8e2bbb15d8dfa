"""The history phase's retention part (issue 32): calls created and revised under the
schedule's faults in two workspaces with retention, then, once every one of them is due,
what the retention sweep left.

    with Stack(..., prepare=prepare) as stack:   # its workspaces, of DAY_SECONDS days
    part = RetentionPart(stack, seed, now)
    part.start(deadline)                    # a client thread beside the schedule's, until deadline
    part.join()
    violations = part.check(horizon, out)   # after the faults stopped; waits until all is due

Why: the sweep (`Backend::sweep_retention`, run by erase-call on its schedule) erases calls
past `retention_days` and removes raw bodies past `raw_retention_days`, and races creations:
a pass walks the calls by their start, so a call whose head is put after a pass went by its
start is found only by the late note its creation writes (create.rs `late_after`). A
reviewer found the one-day line: a call started just under a day before, its put landing
late, kept its raw body for good. So the starts sit on either side of that line: now,
between about two thirds of a day and a day before (the put may land after a pass went by),
a year before (a backfill), ahead (listed later than received). Such calls are rare, as in
production: a pass held back by one of them (`Step::Later`) covers the next.

`make chaos` runs the stack with `prepare`: two workspaces made before the functions start,
whose days are DAY_SECONDS (`RETENTION_DAY_WORKSPACES`), so a call is due within the run.
Every other workspace keeps production's days, and so its write profile: under short days
every call of the other clients would be created late and noted, a write more each on the
local DynamoDB, which serves one request at a time (seed 52's erases waited past the
gateway's 30 s). The two workspaces:
- `raw` (`raw_retention_days` 1): every call stays readable, every revision's raw body goes;
- `gone` (`retention_days` 1): every call is erased.

The rules, once every request of the part may have landed, a day has passed since, and two
sweeps have run without faults:
- `raw_kept`: an item of a `raw` call (its head or a revision) that still holds a raw body,
  or an object in its folder of the bucket that holds content and that no item rewritten
  without its raw body names;
- `raw_call_lost`: a `raw` call answered 2xx that reads 404;
- `retained`: a `gone` call that still reads, holds an item of content, or whose folder in
  the bucket holds a non-empty object;
- `retention_client`: the part's client failed (then it checked less than it should).
"""
import hashlib
import http.client
import json
import random
import threading
import time

from devstack.history import Op, Timing, Violation
from devstack.stack import request
from devstack.storage import aws

# A day's length in the part's workspaces (RETENTION_DAY_SECONDS), short enough that
# every call of the run is due soon after it. (A put that lands late is noted after its
# answer, `Store::note_if_late`; the quarter day's margin, 5 s here, is for an instance gone
# between its put and its answer, and for the sweep's clock ahead of the writer's.)
DAY_SECONDS = 20
# Of the part's requests, those that revise a call it made (the others make new ones).
REVISED = 0.3
# In the `raw` workspace, one call in this many seconds starts far from now (`start_ms`).
SPECIAL_EVERY = DAY_SECONDS * 1.5
# Of its contents, those large enough that their frames go to S3.
LARGE = 0.2
# The sweep runs every LOCAL_SCHEDULE_SECONDS (5): two runs after a call is due.
SWEEPS = 12
RULES = ("raw_kept", "raw_call_lost", "retained", "retention_client")


def prepare(stack):
    """Makes the part's two workspaces on `stack` (`stack.retention`) and answers the
    functions' settings that give them, and them alone, days of DAY_SECONDS."""
    stack.retention = {kind: workspace(stack, kind, policy) for kind, policy in
                       (("raw", ("--raw-retention-days", 1)), ("gone", ("--retention-days", 1)))}
    return {"RETENTION_DAY_SECONDS": str(DAY_SECONDS),
            "RETENTION_DAY_WORKSPACES": ",".join(str(ws["id"]) for ws in stack.retention.values())}


def workspace(stack, kind, policy):
    """A workspace `history-retention-<kind>` with `policy`, an agent and a key."""
    ws = stack.ctl("workspace", "create", "--name", f"history-retention-{kind}")["id"]
    stack.ctl("workspace", "policy", "--id", ws, *policy)
    stack.ctl("workspace", "limit", "--id", ws, "--per-second", 1000)
    stack.ctl("agent", "create", "--workspace", ws, "--remote-id", "retention-agent", "--name", "Retention agent")
    key = stack.ctl("key", "create", "--workspace", ws, "--name", "retention", "--scope", "send", "--scope",
                    "read")["token"]
    return {"id": ws, "key": key}


class RetentionPart(threading.Thread):
    def __init__(self, stack, seed, recorder_now):
        super().__init__(daemon=True)
        self.stack = stack
        self.seed = seed
        self.now = recorder_now
        self.rng = random.Random(seed + 11)
        self.ops = []
        self.deadline = None
        self.calls = []
        self.error = None
        # The first 10 s in: the sweep's first pass has gone by then.
        self.special_at, self.specials = 10.0 - SPECIAL_EVERY, 0
        self.workspaces = stack.retention

    def start(self, deadline):
        self.deadline = deadline
        super().start()

    def call_id(self, kind, n):
        return f"ret-{self.seed}-{kind}-{n}"

    def start_ms(self, kind):
        """When a new call of `kind` started. Mostly a moment ago, as production's calls did;
        in the `raw` workspace, one call in every SPECIAL_EVERY seconds started between about
        two thirds of a day and a day before (its put may land after a pass went by), or a year
        before (a backfill), or ahead: far enough apart that no pass is still held back by
        the one before (`Step::Later`), so only its note brings the sweep to it."""
        day_ms = DAY_SECONDS * 1000
        now = int(time.time() * 1000)
        if kind != "raw" or self.now() - self.special_at < SPECIAL_EVERY:
            return now - 1000
        self.special_at = self.now()
        self.specials += 1
        return [now - 400 * 86_400_000, now - self.rng.randint(day_ms * 3 // 4 - 2000, day_ms - 500),
                now + self.rng.randint(1000, day_ms // 4)][(self.specials - 1) % 3]

    def body(self, call, n, start):
        """A Create Call body of `call`, its `n`th content, started at `start` (epoch ms)."""
        turns = [{"role": "agent", "text": f"content {n} of {call}", "start_ms": 0, "end_ms": 800}]
        if self.rng.random() < LARGE:
            # Random words, so that its frame goes to S3 (over 4 KB packed).
            words = " ".join(f"{self.rng.getrandbits(32):08x}" for _ in range(1500))
            turns.append({"role": "user", "text": words, "start_ms": 900, "end_ms": 1800})
        body = {"call_id": call, "call_type": "phone_call", "start_timestamp": start, "end_timestamp": start + 900,
                "recording_url": "pipecat://no-recording", "transcript_with_tool_calls": turns}
        return json.dumps(body).encode()

    def run(self):
        try:
            self.drive()
        except Exception as e:  # noqa: BLE001 - any failure of the client is the check's to report
            self.error = repr(e)

    def drive(self):
        contents = {}
        while self.now() < self.deadline:
            kind = self.rng.choice(("raw", "gone"))
            made = [c for c in contents if c.startswith(self.call_id(kind, ""))]
            # Mostly new calls (each call's start decides which passes may go by it), some
            # revised.
            if made and self.rng.random() < REVISED:
                call = self.rng.choice(made)
            else:
                call = self.call_id(kind, len(made))
                self.calls.append(call)
            n = contents[call] = contents.get(call, 0) + 1
            self.create(kind, call, self.body(call, n, self.start_ms(kind) if n == 1 else now_ms()))
            time.sleep(self.rng.uniform(0.2, 0.8))

    def create(self, kind, call, body):
        """One Create Call, retried as the retrying clients retry (on no answer, 429, 5xx)."""
        ws = self.workspaces[kind]
        url = f"{self.stack.url}/api/v1/public/call?workspace_id={ws['id']}&agent_remote_identifier=retention-agent"
        headers = {"Authorization": f"Bearer {ws['key']}", "Content-Type": "application/json"}
        for attempt in range(4):
            start = self.now()
            try:
                a = request("POST", url, body, headers, timeout=35)
                op = Op("create", call, None, start, self.now(), a.status, a.body, "retrying", attempt, a.headers)
            except (OSError, http.client.HTTPException):
                op = Op("create", call, None, start, None, None, None, "retrying", attempt)
            self.ops.append(op)
            if op.status is not None and op.status < 500 and op.status != 429:
                return
            time.sleep(0.5 * 2 ** attempt)

    def check(self, horizon, out):
        """Once every call is due and the sweep has run twice since (a call listed ahead of its
        receipt, at most a quarter day here, is reached that much later), the rules; looked
        at again every sweep until they hold or that time is up."""
        timing = Timing(horizon)
        landed = max((timing.done(o) if o.end is not None else o.start + horizon for o in self.ops), default=0.0)
        # A copy committed while settling is created when it is, and swept after.
        due = max(landed + DAY_SECONDS * 1.25, self.now()) + SWEEPS
        while True:
            violations, seen = self.rules()
            if self.error is not None:
                violations.append(Violation("retention_client", None, f"seed {self.seed}: the client failed: "
                                            f"{self.error}", []))
            if not violations or self.now() >= due:
                break
            time.sleep(5)
        print(f"history: retention: {len(self.ops)} requests; {seen['raw']} calls under raw retention "
              f"({seen['items']} revisions, {seen['objects']} objects checked), {seen['gone']} past retention; "
              f"{len(violations)} violation(s)", file=out)
        return violations

    def rules(self):
        violations, seen = [], {"raw": 0, "gone": 0, "items": 0, "objects": 0}
        for kind, ws in self.workspaces.items():
            for call in (c for c in self.calls if c.startswith(self.call_id(kind, ""))):
                ops = [o for o in self.ops if o.call == call]
                seen[kind] += 1
                for rule, detail in self.state(kind, ws, call, ops, seen):
                    violations.append(Violation(rule, call, f"seed {self.seed}: {call}: {detail}", ops))
        return violations, seen

    def state(self, kind, ws, call, ops, seen):
        """(rule, detail) of each rule broken by `call`."""
        items = call_items(self.stack, ws["id"], call)
        content = [i for i in items if "digest" in i]
        reads, body = self.read(ws, call)
        if kind == "raw":
            if reads == 200 and isinstance(body, dict) and "id" in body:
                raw = self.get(ws, f"/api/v1/public/call/{body['id']}/raw?workspace_id={ws['id']}")[0]
                if raw != 410:
                    yield "raw_kept", f"GET .../raw answers {raw}, not 410"
            seen["items"] += len(content)
            for item in content:
                if int(item.get("raw_bytes", {}).get("N", "0")) > 0 and "raw_removed_at" not in item:
                    yield "raw_kept", f"{item['sk']['S']} (created_at {item.get('created_at', {}).get('N')}) holds its raw body"
            if reads == 404 and any(Timing.acked(o) for o in ops):
                yield "raw_call_lost", "answered 2xx, reads 404"
            # Its frames in S3: each one that holds anything named by an item rewritten
            # without its raw body (the old ones are overwritten by empty markers).
            rewritten = {i["frame_key"]["S"] for i in content if "frame_key" in i and "raw_removed_at" in i}
            for key in folder_objects(self.stack, ws["id"], call):
                seen["objects"] += 1
                if key not in rewritten:
                    yield "raw_kept", f"the object {key} holds content, and no item rewritten without its raw names it"
        else:
            if reads != 404:
                yield "retained", f"past retention, Get Call answers {reads}"
            if content:
                yield "retained", f"past retention, items of content left: {[i['sk']['S'] for i in content]}"
            for key in folder_objects(self.stack, ws["id"], call):
                yield "retained", f"past retention, an object left: {key}"

    def read(self, ws, call):
        """Get Call by provider call id: (status, body)."""
        return self.get(ws, f"/api/v1/public/call?workspace_id={ws['id']}&provider_call_id={call}")

    def get(self, ws, path):
        """(status, body) of a GET with the workspace's key; (None, None) with no answer."""
        headers = {"Authorization": f"Bearer {ws['key']}"}
        answer = None
        for _ in range(3):
            try:
                answer = request("GET", f"{self.stack.url}{path}", None, headers, timeout=10)
                if answer.status not in (429, 503):
                    break
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(1)
        return (answer.status, answer.body) if answer is not None else (None, None)


def now_ms():
    return int(time.time() * 1000)


def call_items(stack, ws, call):
    """Every item of call `call`'s partition in workspace `ws`, in sort key order."""
    ddb = aws(stack, "dynamodb")
    args = {"TableName": stack.calls_table, "KeyConditionExpression": "pk = :pk", "ConsistentRead": True,
            "ExpressionAttributeValues": {":pk": {"S": f"CALL#{ws}#{call}"}}}
    return ddb.get_paginator("query").paginate(**args).build_full_result()["Items"]


def folder_objects(stack, ws, call):
    """The non-empty objects under the call's folder (frames/, pending/, held/, failed/)."""
    s3 = aws(stack, "s3")
    folder = f"{ws}/{hashlib.sha256(call.encode()).hexdigest()[:32]}"
    found = []
    for prefix in ("frames/", "pending/", "held/", "failed/"):
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=stack.env["FRAMES_BUCKET"],
                                                                 Prefix=f"{prefix}{folder}"):
            found += [o["Key"] for o in page.get("Contents", []) if o["Size"] > 0]
    return found
