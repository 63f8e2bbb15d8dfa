"""A Jepsen-style checker of what the service promises, over a recorded history of client
requests and the state left once faults stopped (the `history` phase of `make chaos`,
scripts/history_run.py, issue 28).

Pure: no I/O. The driver records every request as an `Op`, reads the final state, and
hands both to `check`, which answers the `Violation`s; tests/devstack/test_history.py
feeds it hand-made histories.

Time. Each op has a real-time window [start, end]. A request that was answered 2xx
("acknowledged") took effect inside its window; a 202's pending copy keeps the time its
request arrived, so it counts as inside too. A request with no answer, or answered 5xx,
may have been applied, and up to `horizon` seconds after it started (the function's 29 s
timeout, then a write stuck in the network that lands late): it is never taken as failed
nor as succeeded. A 4xx was refused and applied nothing. A precedes B when A's effects
were certainly over before B started: `done(A) < B.start`. Overlapping requests may land
in either order.

Final state, as the driver reads it (plain dicts, so a history can be saved as JSON):

    {"calls": {call id: {"revisions": [{"revision": n, "marker": str | None,
                                        "token": str | None, "current": bool}, ...],
                         "readable": bool,
                         "trace": [markers of the spans its trace reads] | None}},
     "bucket": [{"key": str, "prefix": "frames/" | "pending/" | "failed/" | "traces/spans/" ...,
                 "markers": set of markers, "named": bool, "call": call id or None}],
     "pending_left": int, "failed_expected": bool}

`revisions` are in revision order, the head last (`current`). A marker is a string that
one content variant carries (in its summary, metadata or transcript): every request that
sent those bytes carries it. A token is the item's `submission` attribute: one per
request that wrote, copied as it is when the store keeps a late submission below the
head (`insert_late`: REV#n the old head, REV#n+1 the late one, the head its copy).

Spans (issue 31): an `export` op sends spans of the call's trace, each carrying its marker.
An export answered 200 after every erase of its call is in the call's trace when the call
reads 200 at the end (`span_lost`); spans sent before an erase are nowhere, not in the trace
nor in any object (`erased_readable`); a call's trace holds no span sent for another call
(`span_foreign`); a trace part no trace item names, or a batch never indexed, is an orphan.
"""
import json
from dataclasses import dataclass, field

SUBMISSIONS = ("create", "send", "webhook_ended", "webhook_analyzed")
ERASE = "erase"
EXPORT = "export"
# Retell's events of one call: a later stage is current whatever the order they came in.
STAGES = {"webhook_ended": 1, "webhook_analyzed": 2}
# Seconds an unanswered request may still take effect: the function's 29 s timeout, then a
# late write (the fault layer's `late`, a few seconds).
HORIZON = 40.0
RULES = ("lost", "duplicated", "current", "erased_readable", "is_new_twice", "server_error", "not_committed",
         "orphan", "unreadable", "span_lost", "span_foreign", "personal_data_stored")


@dataclass(eq=False)
class Op:
    """One client request (one attempt) and its answer. `end` is None when no answer came
    (a timeout or a connection error); `status` then too."""

    kind: str  # create (B) | send (A) | erase | webhook_ended | webhook_analyzed | resolve | export
    call: str  # the provider's call id
    marker: str | None
    start: float
    end: float | None
    status: int | None
    body: object = None
    client: str = "one_shot"  # one_shot | retrying | settle
    attempt: int = 0
    headers: dict = field(default_factory=dict)
    target: int | None = None  # an erase's internal id
    note: str = ""

    def line(self):
        """The op on one line, for a human replaying the history."""
        end = "no answer" if self.end is None else f"{self.end:8.3f}"
        what = f"{self.kind} {self.marker}" if self.marker else self.kind
        if self.target is not None:
            what += f" id {self.target}"
        answer = "timeout" if self.status is None else str(self.status)
        if self.body is not None:
            answer += " " + json.dumps(self.body, separators=(",", ":"), default=str)[:100]
        note = f" ({self.note})" if self.note else ""
        return f"{self.start:8.3f} .. {end}  {what:<34} {self.client}#{self.attempt}{note} -> {answer}"

    def to_json(self):
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class Violation:
    rule: str
    call: str | None
    detail: str
    ops_of_call: list

    def __str__(self):
        return f"[{self.rule}] {self.detail}"


class Timing:
    """What a history's answers say about when each request took effect."""

    def __init__(self, horizon=HORIZON):
        self.horizon = horizon

    @staticmethod
    def acked(op):
        """Acknowledged: a 2xx; for an erase, one that erased something."""
        if op.status is None or not 200 <= op.status < 300:
            return False
        if op.kind == ERASE:
            return isinstance(op.body, dict) and op.body.get("erased") is True
        return True

    def applies(self, op):
        """May have taken effect: acknowledged, or no answer, or a 5xx."""
        if self.acked(op):
            return True
        if op.status is None or op.status >= 500:
            return True
        return False

    def done(self, op):
        """When the op's effects are over at the latest."""
        return op.end if self.acked(op) else op.start + self.horizon

    def precedes(self, a, b):
        return self.done(a) < b.start


def check(ops, final, settle_seconds=None, horizon=HORIZON, seed=None):
    """The violations of `ops` (Op) against `final` (see the module's doc), each naming the
    seed and listing its call's ops in time order."""
    t = Timing(horizon)
    calls = final.get("calls", {})
    by_call = {}
    for op in ops:
        by_call.setdefault(op.call, []).append(op)
    for history in by_call.values():
        history.sort(key=lambda o: o.start)
    out = []

    def violation(rule, call, message):
        history = by_call.get(call, [])
        lines = "\n".join("    " + op.line() for op in history)
        replay = f"seed {seed}: replay with `make chaos SEED={seed}`" if seed is not None else "no seed"
        where = f"call {call}: " if call else ""
        detail = f"{where}{message} ({replay})" + (f"\n{lines}" if lines else "")
        out.append(Violation(rule, call, detail, list(history)))

    # The run's workspace is `redacted` (issue 32): a planted value found in any item or
    # object (`final["personal_data"]`: where, key, value) was stored unredacted.
    for where, key, value in final.get("personal_data", []):
        violation("personal_data_stored", None, f"{value!r} is stored in {where} {key}")
    marker_call = {op.marker: op.call for op in ops if op.marker}
    for call, history in sorted(by_call.items()):
        state = calls.get(call, {"revisions": [], "readable": False})
        entries = sorted(state.get("revisions", []), key=lambda r: r["revision"])
        for rule, message in _call_rules(history, entries, state.get("readable", False), t):
            violation(rule, call, message)
        for rule, message in _span_rules(history, state, marker_call, call, t):
            violation(rule, call, message)
    for marker, call in sorted(marker_call.items()):
        state = calls.get(call, {})
        message = _erased_readable(marker, by_call[call], state.get("revisions", []), state.get("trace") or (),
                                   final.get("bucket", []), t)
        if message:
            violation("erased_readable", call, message)
    for op in ops:
        if op.status is not None and op.status >= 500 and not (op.status == 503 and "retry-after" in _lower(op.headers)):
            why = "503 without Retry-After" if op.status == 503 else f"answered {op.status}"
            violation("server_error", op.call, f"{why}: {op.line().strip()}")
    if final.get("pending_left", 0) > 0:
        waited = f" {settle_seconds:.0f} s" if settle_seconds is not None else ""
        keys = [o["key"] for o in final.get("bucket", []) if o["prefix"] == "pending/"]
        violation("not_committed", None, f"{final['pending_left']} pending submission(s) left{waited} after faults "
                                         f"stopped: {', '.join(keys[:10])}")
    for obj in final.get("bucket", []):
        reason = _orphan(obj, final.get("failed_expected", False))
        if reason:
            call = obj.get("call") or next((marker_call[m] for m in sorted(obj["markers"]) if m in marker_call), None)
            violation("orphan", call, f"{obj['key']}: {reason}, holding {sorted(obj['markers']) or 'no marker'}")
    return out


def _some(markers, n=5):
    markers = sorted(markers)
    return ", ".join(markers[:n]) + (f" and {len(markers) - n} more" if len(markers) > n else "")


def _lower(headers):
    return {k.lower() for k in (headers or {})}


def _stage(op):
    return STAGES.get(op.kind, 0)


def _call_rules(history, entries, readable, t):
    """(rule, message) of one call's rules: lost, duplicated, current, is_new_twice,
    unreadable."""
    subs = [o for o in history if o.kind in SUBMISSIONS]
    erases = [o for o in history if o.kind == ERASE and t.applies(o)]
    acked_erases = [e for e in erases if t.acked(e)]
    found = []
    order = _Order(subs, erases, t)
    # a. lost: an acknowledged submission no erase may have removed is stored, at a place
    # that agrees with the order requests were made in.
    for s in subs:
        if not t.acked(s) or any(not t.precedes(e, s) for e in erases) or _provider_retry(s, subs, t, erases):
            continue
        before = {m for m in _certainly_before(s, subs, t) if not order.tied(m, s)}
        if not _kept_in_order(s.marker, before, entries):
            where = "not stored" if all(e["marker"] != s.marker for e in entries) else \
                f"stored only below content that was sent before it ({_some(before)})"
            found.append(("lost", f"{s.kind} {s.marker} at {s.start:.3f} was answered {s.status} and is {where}"))
    # b. duplicated: a request is stored under one token at most.
    for marker in sorted({e["marker"] for e in entries if e["marker"]}):
        tokens = {e["token"] for e in entries if e["marker"] == marker and e["token"]}
        requests = sum(1 for o in subs if o.marker == marker and t.applies(o))
        if len(tokens) > requests:
            found.append(("duplicated", f"{marker} is stored under {len(tokens)} tokens ({', '.join(sorted(tokens))}) "
                                        f"from {requests} request(s)"))
    # c. current: the head is the latest content, or a later stage of a provider's events.
    if entries:
        head = next((e for e in entries if e.get("current")), entries[-1])
        message = _head_problem(head, subs, acked_erases, order, t)
        if message:
            found.append(("current", message))
    # e. is_new_twice: one 201 per call between erases.
    found += [("is_new_twice", m) for m in _news(history, erases, t)]
    # i. unreadable: acknowledged after every erase, and not readable.
    last = [s for s in subs if t.acked(s) and all(t.precedes(e, s) for e in erases)]
    if last and not readable:
        s = last[-1]
        found.append(("unreadable", f"{s.kind} {s.marker} at {s.start:.3f} was answered {s.status} after every erase, "
                                    f"and the call does not read 200"))
    return found


def _provider_retry(s, subs, t, erases=()):
    """Whether `s` is a provider's event sent again and answered `unchanged`: the report its
    earlier request sent is stored already, and a provider's retry never moves it (the store
    honours its late mark: `calls::submission`). Where it is kept is judged by that earlier
    request; this one only says so. An earlier request that an acknowledged erase certainly
    came between belongs to the erased call, and excuses nothing."""
    return bool(_stage(s)) and isinstance(s.body, dict) and s.body.get("status") == "unchanged" and any(
        o.marker == s.marker and o.start < s.start and t.applies(o)
        and not any(t.acked(e) and t.precedes(o, e) and t.precedes(e, s) for e in erases)
        for o in subs)


def _certainly_before(s, subs, t):
    """Markers (other than s's) whose every request that may have applied precedes `s`:
    content certainly stored before `s` arrived. A later stage of a provider's events is
    kept above an earlier one whatever the order, so it is left out."""
    markers = {}
    for o in subs:
        if o.marker and o.marker != s.marker and t.applies(o):
            markers.setdefault(o.marker, []).append(o)
    return {m for m, sent in markers.items()
            if all(t.precedes(o, s) for o in sent) and max(_stage(o) for o in sent) <= _stage(s)}


def _late_inserts(entries):
    """Indexes of entries the store kept below the head (`insert_late`): between two copies
    of the head (one token) that they never were."""
    tok = [e.get("token") for e in entries]
    return {k for k in range(1, len(entries) - 1) if tok[k - 1] is not None and tok[k - 1] == tok[k + 1] != tok[k]}


def _kept_in_order(marker, before, entries):
    """Whether an entry holds `marker` above every head that held content of `before`; a
    late insert counts only when the head it was put under is not such content (a request
    that came after that head's is never kept below it)."""
    late = _late_inserts(entries)
    tops = {}
    for k, e in enumerate(entries):
        if e["marker"] in before and k not in late:
            tops[e["marker"]] = k
    for j, e in enumerate(entries):
        if e["marker"] != marker:
            continue
        if any(top > j for top in tops.values()):
            continue
        if j in late and entries[j - 1]["marker"] in before:
            continue
        return True
    return False


def _head_problem(head, subs, acked_erases, order, t):
    """Why the head cannot hold what it holds, or None."""
    if head["marker"] is None:
        why = f" ({head['note']})" if head.get("note") else ""
        return f"the head (revision {head['revision']}) holds no content this run sent{why}"
    candidates = [o for o in subs if o.marker == head["marker"] and t.applies(o)]
    if not candidates:
        return f"the head holds {head['marker']}, which no request that may have applied sent"
    for h in candidates:
        if any(t.precedes(h, e) for e in acked_erases):
            continue
        if order.beaten(h):
            continue
        return None
    winners = {o.marker for h in candidates for o in subs if order.beats(o, h)}
    return (f"the head holds {head['marker']}, but acknowledged content came after it"
            + (f" ({_some(winners)})" if winners else " or an erase removed it"))


class _Order:
    """Which content must be above which, by the two rules of order: `o` beats `h` when `o`
    is acknowledged and came after `h`, or is a later stage of the provider's events (which
    wins whatever the order, unless an erase may have removed it), never an earlier one.

    Each rule alone orders requests. Together, on one call id that gets both API sends and
    a provider's staged reports, they can go round: `call_analyzed`, then a Create Call Y,
    then `call_ended` (Y beats the analysis, `call_ended` beats Y, the analysis beats
    `call_ended`). The store keeps all three, and any of them may be current (DESIGN.md,
    "Retell's two events are one call"): ops that beat each other round a cycle are tied,
    and a head is judged only by what beats it from outside its cycle."""

    def __init__(self, subs, erases, t):
        self.subs, self.erases, self.t = subs, erases, t
        # A provider's retry answered `unchanged` is judged by its earlier request.
        self.retries = {id(o) for o in subs if _provider_retry(o, subs, t, erases)}
        self.ops = [o for o in subs if t.applies(o)]
        self.index = {id(o): k for k, o in enumerate(self.ops)}
        # Only a call with both kinds can go round; every other keeps the plain rules.
        mixed = any(_stage(o) for o in subs) and any(not _stage(o) for o in subs)
        self.reach = self._closure() if mixed else None

    def beats(self, later, h):
        t = self.t
        if not t.acked(later) or later.marker == h.marker or id(later) in self.retries:
            return False
        if _stage(later) and _stage(h):
            if _stage(later) > _stage(h):
                return all(t.precedes(e, later) for e in self.erases)
            if _stage(later) < _stage(h):
                return False
        return t.precedes(h, later)

    def _edge(self, later, h):
        """How the store may have put `later` above `h`: "stage" (a later stage of the
        provider's events, whatever the receipts), "receipt" (received after it: certainly,
        or possibly, the two requests overlapping: each was received at some moment of its
        request; `make chaos` seed 50), or None."""
        t = self.t
        if later.marker == h.marker or id(later) in self.retries or id(h) in self.retries:
            return None
        if _stage(later) and _stage(h):
            if _stage(later) > _stage(h):
                return "stage" if self.beats(later, h) else None
            if _stage(later) < _stage(h):
                return None
        if self.beats(later, h):
            return "receipt"
        overlap = not t.precedes(h, later) and not t.precedes(later, h)
        return "receipt" if overlap and later.end is not None and h.end is not None else None

    def _closure(self):
        """[for op k: {op j it reaches: whether a stage edge is on the way}] along `_edge`,
        where a path of receipt edges must fit receipt times that fall along it (a reviewer's
        find: chaining possible orders of overlapping requests could otherwise close loops
        the store cannot make): `u` is the latest the current op can have been received; a
        receipt edge to `h` needs `h` received before `u` (`h.start < u`); a stage edge
        resets it."""
        t, ops = self.t, self.ops
        edges = [[(j, kind) for j, h in enumerate(ops) if (kind := self._edge(o, h))] for o in ops]
        reach = []
        for k in range(len(ops)):
            best = {(k, False): t.done(ops[k])}
            todo = [(k, False)]
            while todo:
                node, seen = todo.pop()
                u = best[(node, seen)]
                for j, kind in edges[node]:
                    h = ops[j]
                    if kind == "stage":
                        state, bound = (j, True), t.done(h)
                    elif h.start < u:
                        state, bound = (j, seen), min(t.done(h), u)
                    else:
                        continue
                    if best.get(state, float("-inf")) < bound:
                        best[state] = bound
                        todo.append(state)
            found = {}
            for (j, seen) in best:
                found[j] = found.get(j, False) or seen
            reach.append(found)
        return reach

    def _tied(self, j, k):
        """Whether ops j and k beat each other round a cycle with a stage edge on it (or are
        one op): receipts alone never go round."""
        if j == k:
            return True
        return k in self.reach[j] and j in self.reach[k] and (self.reach[j][k] or self.reach[k][j])

    def beaten(self, h):
        """Whether content that must be above `h` beats it, from outside the cycle `h` is
        on, if any. (Not whatever beats another op of its cycle: content overlapping `h`
        may beat the rest of the cycle and still land below `h`.)"""
        k = self.index.get(id(h))
        if self.reach is None or k is None:
            return any(self.beats(o, h) for o in self.subs)
        return any(self.beats(o, h) and not self._tied(self.index[id(o)], k) for o in self.subs)

    def tied(self, marker, s):
        """Whether some request of `marker` and `s` beat each other round a cycle."""
        k = self.index.get(id(s))
        if self.reach is None or k is None:
            return False
        return any(o.marker == marker and self._tied(j, k) for j, o in enumerate(self.ops))


def _news(history, erases, t):
    """Messages for each stretch between erases with more than one 201 strictly inside."""
    news = [o for o in history if o.kind in ("create", "send") and o.status == 201 and o.end is not None]
    stretches = {}
    for a in news:
        if any(e.start <= a.end and a.start <= t.done(e) for e in erases):
            continue  # overlaps an erase: the boundary is fuzzy
        stretch = sum(1 for e in erases if t.done(e) < a.start)
        stretches.setdefault(stretch, []).append(a)
    return [f"{len(a)} answers 201 (is_new: true) between erases {k} and {k + 1}, at "
            + ", ".join(f"{o.start:.3f}" for o in a)
            for k, a in sorted(stretches.items()) if len(a) > 1]


def _span_rules(history, state, marker_call, call, t):
    """(rule, message) of one call's spans: span_lost, span_foreign."""
    found = []
    trace = state.get("trace")
    if trace is None:
        return found
    erases = [o for o in history if o.kind == ERASE and t.applies(o)]
    for s in history:
        if s.kind != EXPORT or not t.acked(s) or _rejected(s):
            continue
        if all(t.precedes(e, s) for e in erases) and s.marker not in trace:
            found.append(("span_lost", f"export {s.marker} at {s.start:.3f} was answered {s.status} after every erase, "
                                       f"and the call's trace does not hold its spans"))
    for marker in sorted(set(trace)):
        owner = marker_call.get(marker)
        if owner != call:
            found.append(("span_foreign", f"the call's trace holds {marker}, sent for "
                                          f"{owner or 'no call of this run'}"))
    return found


def _rejected(op):
    """Whether an export's answer says spans were refused (a partial success)."""
    partial = op.body.get("partialSuccess") if isinstance(op.body, dict) else None
    return bool(partial and int(partial.get("rejectedSpans") or 0))


def _erased_readable(marker, history, revisions, trace, bucket, t):
    """Where `marker` is still readable though an acknowledged erase came after every
    request that sent it, or None."""
    sent = [o for o in history if o.marker == marker and t.applies(o)]
    if not sent:
        return None
    erases = [e for e in history if e.kind == ERASE and t.acked(e)]
    after = [e for e in erases if all(t.precedes(o, e) for o in sent)]
    if not after:
        return None
    where = [f"revision {r['revision']}" for r in revisions if r["marker"] == marker]
    where += ["the call's trace"] if marker in trace else []
    where += [obj["key"] for obj in bucket if marker in obj["markers"]]
    if not where:
        return None
    return f"{marker} was erased (erase at {after[0].start:.3f}) and is still in {', '.join(where)}"


# Every prefix the service writes in the frames' bucket; an object elsewhere is an orphan.
BUCKET_PREFIXES = ("frames/", "pending/", "failed/", "held/", "traces/in/", "traces/spans/")


def prefix_of(key):
    """The bucket prefix an object's key is under (`traces/` keys by their first two
    segments): what `bucket` entries hold as `prefix`."""
    return "/".join(key.split("/", 2)[:2]) + "/" if key.startswith("traces/") else key.split("/", 1)[0] + "/"


def _orphan(obj, failed_expected):
    """Why a bucket object should not be there once settled, or None."""
    prefix = obj["prefix"]
    if prefix == "frames/" and not obj["named"]:
        return "a frame no item names"
    if prefix == "pending/":
        return "a pending submission left after settling"
    if prefix == "failed/" and not failed_expected:
        return "a pending submission that could not be committed (moved to failed/)"
    if prefix == "held/":
        return "a webhook report still held after settling (every hook of the run has an agent)"
    if prefix == "traces/in/":
        return "a trace batch never indexed"
    if prefix == "traces/spans/" and not obj["named"]:
        return "a trace part no trace item names"
    if prefix not in BUCKET_PREFIXES:
        return f"an object under {prefix}, which nothing writes"
    return None


def summary(violations):
    """{rule: count} over every rule, zeros included."""
    counts = {rule: 0 for rule in RULES}
    for v in violations:
        counts[v.rule] = counts.get(v.rule, 0) + 1
    return counts
