"""Events out under `make chaos` (issue 33): a receiver on loopback for every workspace that
exists when the run starts, which fails while the random faults run (500s, 429 with
Retry-After, answers past the 15 s timeout) and then recovers, and a second endpoint that
answers 410 (disabled after its first event). Once the run is over, with faults off, what
the receiver verified is checked against the Calls table's final heads (`check`):

  * every event verifies with the `standardwebhooks` reference library;
  * every call stored has its `call.stored` (id, revision 1); one revised has its
    `call.revised` for its current revision;
  * a call whose id is gone (erased: by the erase endpoint, or by retention) has its
    `call.erased`, and a call still there has none;
  * no event names a call, or a revision, that never was (a replay, a dropped 202): every
    id is a head's or an erased one's, no revision is above its call's current one;
  * copies of one event (retries, a stream record read twice) share one `webhook-id`.

And against every change the Calls table committed during the run, read from its stream
by a second reading written here (`stream_events`, not send-events' own): each change to a
head is exactly one event, none missing (an intermediate revision's `call.revised`; a call
stored and erased within the run), none for a change that was not made (`check_stream`).

`check`, `stream_events` and `check_stream` are pure (tests/devstack/test_events_check.py
feeds them); `EventsPhase` does the I/O.
"""
import random
import threading
import time
from collections import defaultdict

from devstack.receiver import Receiver

# Endpoints a workspace may have (`directory::endpoints::MAX_PER_WORKSPACE`).
MAX_ENDPOINTS = 10
# How long the receiver waits, after the run, for what is still due (retries at the local
# EVENTS_RETRY_SCALE: 0.01 of Svix's schedule, so a wait of 5 h is 3 minutes).
SETTLE_SECONDS = 420


def check(heads, received):
    """Problems (strings) between `heads` ({(workspace, id): current revision} of every call's
    head left at the end) and `received` ([(workspace, type, id, revision or None,
    webhook-id)] verified events; the workspace the endpoint belongs to)."""
    problems = []
    by_event = defaultdict(set)
    for ws, kind, id, revision, webhook_id in received:
        by_event[(ws, kind, id, revision)].add(webhook_id)
    for event, ids in by_event.items():
        if len(ids) > 1:
            problems.append(f"{event}: copies with {len(ids)} webhook-ids")
    seen = set(by_event)
    named = {(ws, id) for ws, _, id, _, _ in received}
    for (ws, id), revision in heads.items():
        if (ws, "call.stored", id, 1) not in seen:
            problems.append(f"workspace {ws} call {id}: no call.stored")
        if revision > 1 and (ws, "call.revised", id, revision) not in seen:
            problems.append(f"workspace {ws} call {id}: no call.revised for its current revision {revision}")
        if (ws, "call.erased", id, None) in seen:
            problems.append(f"workspace {ws} call {id}: call.erased, yet it is there")
    for ws, id in named - set(heads):
        if (ws, "call.erased", id, None) not in seen:
            problems.append(f"workspace {ws} call {id}: gone without a call.erased")
        if (ws, "call.stored", id, 1) not in seen:
            problems.append(f"workspace {ws} call {id}: erased, never stored")
    for ws, kind, id, revision in seen:
        current = heads.get((ws, id))
        if kind != "call.erased" and current is not None and revision > current:
            problems.append(f"workspace {ws} call {id}: {kind} for revision {revision}, above its {current}")
        if kind == "call.revised" and revision < 2:
            problems.append(f"workspace {ws} call {id}: call.revised for revision {revision}")
    return problems


def _head(image):
    """(workspace, id or None, revision) of a stream image of a call's head (DynamoDB's
    JSON), or None for any other item."""
    if not image or image.get("sk", {}).get("S") != "HEAD" or not image.get("pk", {}).get("S", "").startswith("CALL#"):
        return None
    ws = int(image["pk"]["S"].split("#")[1])
    id = image.get("id", {}).get("N")
    return ws, (int(id) if id is not None else None), int(image.get("revision", {}).get("N", 0))


def stream_events(records):
    """The events the stream's `records` (Lambda's form) call for: {(workspace, type, id,
    revision or None)}. A head that takes a new id stores that call (and erases the id it
    had); the same id at a higher revision revises it; an id gone (a tombstone, a delete)
    erases it. Anything else (an erase begun, a rewrite, a note, a tombstone expiring) is
    no event."""
    expected = set()
    for record in records:
        images = record.get("dynamodb", {})
        old, new = _head(images.get("OldImage")), _head(images.get("NewImage"))
        ws = (old or new or (None,))[0]
        if ws is None:
            continue
        old_id, new_id = old and old[1], new and new[1]
        if old_id is not None and old_id != new_id:
            expected.add((ws, "call.erased", old_id, None))
        if new_id is not None and new_id != old_id:
            expected.add((ws, "call.stored", new_id, new[2]))
        elif new_id is not None and new[2] > old[2]:
            expected.add((ws, "call.revised", new_id, new[2]))
    return expected


def check_stream(expected, received):
    """Problems between the events the stream calls for (`expected`, {(workspace, type, id,
    revision)}) and those `received` ([(workspace, type, id, revision, webhook-id)])."""
    got = {r[:4] for r in received}
    problems = [f"{e}: committed, never delivered" for e in sorted(expected - got, key=str)]
    problems += [f"{e}: delivered, never committed" for e in sorted(got - expected, key=str)]
    return problems


class EventsPhase:
    """The receiver and its endpoints, for a run of `make chaos` on `stack`."""

    def __init__(self, stack, seed):
        self.stack = stack
        self.rng = random.Random(seed)
        # Verified as they come: the library refuses a timestamp more than 5 minutes old, as
        # a receiver should.
        self.lock = threading.Lock()
        self.events, self.bad = [], 0
        self.receiver = Receiver(answers=self._answer, on_receive=self._verify)
        self.failing = False
        self.secrets = {}  # path -> (workspace, secret)
        self.workspaces = []  # those checked
        self.before = set()
        self.gone = {}  # workspace -> the id of its endpoint that answers 410
        ws = 1
        while True:
            try:
                stack.ctl("workspace", "get", "--id", ws)
            except Exception:
                break
            self.add(ws)
            ws += 1
        # And those made during the run (the history phase's, the burst's).
        stack.workspace_hooks.append(self.add)
        self.recovered_at = None
        # Calls stored before the endpoints were made (the stack's own set-up) are not
        # expected to have events; nor are the stream's records up to now, nor the ids they
        # name (a record committed before, delivered after, is no problem).
        self.before = {id for _, id in self.heads()}
        self.stream_start, earlier = self.stream_records(None)
        self.before |= {e[2] for e in stream_events(earlier)}

    def add(self, ws):
        """Endpoints for workspace `ws`: one at /ws/<ws>, checked, and one at /gone/<ws> that
        answers 410. A workspace without room for two more (10 at most) is not checked."""
        listed = self.stack.ctl("endpoint", "list", "--workspace", ws)["endpoints"]
        if len(listed) > MAX_ENDPOINTS - 2:
            return
        if ws not in self.workspaces:
            self.workspaces.append(ws)
        made = self.stack.ctl("endpoint", "create", "--workspace", ws, "--url", self.receiver.url(f"/ws/{ws}"))
        self.secrets[f"/ws/{ws}"] = (ws, made["secret"])
        gone = self.stack.ctl("endpoint", "create", "--workspace", ws, "--url", self.receiver.url(f"/gone/{ws}"))
        self.gone[ws] = gone["endpoint"]["id"]
        self.receiver.answer(f"/gone/{ws}", 410)

    def _answer(self, path):
        """While failing: a third of the answers fail (500, 503, 429 with Retry-After, or an
        answer past the 15 s timeout)."""
        if not self.failing or path.startswith("/gone/"):
            return None
        roll = self.rng.random()
        if roll < 0.15:
            return 500
        if roll < 0.2:
            return 503
        if roll < 0.3:
            return (429, {"Retry-After": "2"})
        if roll < 0.33:
            return ("sleep", 16)
        return None

    def fail(self):
        self.failing = True

    def recover(self):
        """Answers 200 from now on (the first call counts: when the receiver came back)."""
        if self.failing:
            self.recovered_at = time.time()
        self.failing = False

    def _verify(self, got):
        """Keeps what `got` (a request the receiver answered) carried, once verified."""
        import standardwebhooks

        if not got.path.startswith("/ws/") or got.status != 200:
            return
        # An endpoint's first event may come before `add` has kept its secret.
        for _ in range(50):
            if got.path in self.secrets:
                break
            time.sleep(0.1)
        ws, secret = self.secrets[got.path]
        try:
            event = standardwebhooks.Webhook(secret).verify(got.body, got.headers)
        except Exception:
            with self.lock:
                self.bad += 1
            return
        changed = _epoch(event.get("timestamp"))
        revision = event["data"].get("revision")
        kept = (ws, event["type"], event["data"]["id"], revision, got.headers["webhook-id"], got.at, changed)
        with self.lock:
            self.events.append(kept)

    def verified(self):
        """[(workspace, type, id, revision, webhook-id, arrival, change time)] of what came,
        each verified as it came; and the number that did not verify."""
        with self.lock:
            return list(self.events), self.bad

    def heads(self):
        """{(workspace, id): revision} of every call's head in the Calls table."""
        import boto3

        table = boto3.resource("dynamodb", region_name="us-east-1", endpoint_url=self.stack.dynamodb,
                               aws_access_key_id="local", aws_secret_access_key="local").Table(self.stack.calls_table)
        heads, start = {}, None
        while True:
            page = table.scan(**({"ExclusiveStartKey": start} if start else {}))
            for item in page["Items"]:
                if item.get("sk") != "HEAD" or "id" not in item or not item["pk"].startswith("CALL#"):
                    continue
                ws = int(item["pk"].split("#")[1])
                if ws in self.workspaces:
                    heads[(ws, int(item["id"]))] = int(item.get("revision", 1))
            start = page.get("LastEvaluatedKey")
            if not start:
                return heads

    def stream_records(self, after):
        """(the last sequence number, the Calls table's stream records after `after`, all
        when None) in Lambda's form."""
        import boto3

        from devstack.streams import lambda_record

        kwargs = dict(region_name="us-east-1", endpoint_url=self.stack.dynamodb, aws_access_key_id="local",
                      aws_secret_access_key="local")
        arn = boto3.client("dynamodb", **kwargs).describe_table(TableName=self.stack.calls_table)["Table"][
            "LatestStreamArn"]
        streams = boto3.client("dynamodbstreams", **kwargs)
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        position = ({"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after} if after
                    else {"ShardIteratorType": "TRIM_HORIZON"})
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, **position)["ShardIterator"]
        records, last = [], after
        while iterator:
            got = streams.get_records(ShardIterator=iterator, Limit=1000)
            if not got.get("Records"):
                break
            records += [lambda_record(r, arn) for r in got["Records"]]
            last = got["Records"][-1]["dynamodb"]["SequenceNumber"]
            iterator = got.get("NextShardIterator")
        return last, records

    def committed(self):
        """The events the stream calls for since the phase began, in the checked workspaces."""
        _, records = self.stream_records(self.stream_start)
        return {e for e in stream_events(records) if e[0] in self.workspaces and e[2] not in self.before}

    def settle(self, out):
        """Waits (at most SETTLE_SECONDS) until what came matches the final heads; prints the
        table and answers the problems."""
        deadline = time.time() + SETTLE_SECONDS
        while True:
            heads = {k: v for k, v in self.heads().items() if k[1] not in self.before}
            got, bad = self.verified()
            got = [g for g in got if g[2] not in self.before]
            problems = check(heads, [g[:5] for g in got]) + check_stream(self.committed(), [g[:5] for g in got])
            if not problems or time.time() > deadline:
                break
            time.sleep(5)
        if bad:
            problems.append(f"{bad} events did not verify")
        # An endpoint answering 410 is disabled by its first answer, and gets no request
        # after (those sent at the same moment, a batch's, may arrive beside the first).
        disabled_gone = 0
        for ws, id in self.gone.items():
            listed = self.stack.ctl("endpoint", "list", "--workspace", ws)["endpoints"]
            endpoint = next((e for e in listed if e["id"] == id), {})
            state, at = endpoint.get("disabled"), endpoint.get("disabled_at")
            requests = self.receiver.received(f"/gone/{ws}")
            late = [r for r in requests if at is None or r.at > at / 1000 + 2]
            if bool(requests) != (state == "gone") or late:
                problems.append(f"workspace {ws}'s 410 endpoint: {len(requests)} requests ({len(late)} after it "
                                f"was disabled), state {state}")
            disabled_gone += bool(requests) and state == "gone"
        if not disabled_gone:
            problems.append("no endpoint answering 410 was disabled")
        first = {}
        for g in got:
            first[g[4]] = min(first.get(g[4], g), g, key=lambda x: x[5])
        clean = [g[5] - g[6] for g in first.values()
                 if g[6] is not None and self.recovered_at is not None and g[6] > self.recovered_at]
        every = [g[5] - g[6] for g in first.values() if g[6] is not None]
        counts = defaultdict(int)
        for g in first.values():
            counts[g[1]] += 1
        print("\n| events (verified by standardwebhooks) | value |\n|---|---|", file=out)
        for kind in ("call.stored", "call.revised", "call.erased"):
            print(f"| {kind} | {counts[kind]} |", file=out)
        print(f"| requests to the receiver | {len(self.receiver.received())} |", file=out)
        print(f"| endpoints disabled by a 410 | {disabled_gone} of {len(self.gone)} |", file=out)
        print(f"| calls at the end (heads) | {len(heads)} |", file=out)
        print(f"| commit to delivery, p50 / p99, receiver up | {_pct(clean, 50)} / {_pct(clean, 99)} ms |", file=out)
        print(f"| commit to delivery, p50 / p99, whole run | {_pct(every, 50)} / {_pct(every, 99)} ms |", file=out)
        print(f"| problems (must be 0) | {len(problems)} |", file=out)
        for p in problems[:10]:
            print(f"events: {p}", file=out)
        return problems

    def close(self):
        self.receiver.close()


def _epoch(text):
    if not text:
        return None
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _pct(values, p):
    if not values:
        return "-"
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))])

