"""OpenTelemetry exporters as voice agents run them, for `make chaos`'s traces phase: each
batch of spans sent once to `POST /otel/v1/traces` (an exporter drops a batch its retries
did not place, and a one-shot one retries nothing), in OTLP's JSON mapping or as protobuf
(opentelemetry-proto's Python messages), gzip-compressed or not; and the spans read back
through the API (`GET /api/v1/public/call/{id}/trace`).

    calls = make_calls(stack, "traces-7", 6)             # call id -> service id
    sent = send_batches(stack, calls, "random", 20, seed=7, workers=4)
    table, lost = lost_spans(stack, calls, sent)         # by stage; each lost batch, and why
"""
import gzip
import hashlib
import json
import random
import time
from collections import namedtuple

from devstack.stack import request
from devstack.threads import run_each

# A batch sent: the call its spans name, their span ids, how it was sent, and the answer
# (status or None, seconds).
Batch = namedtuple("Batch", "call_id span_ids stage encoding status seconds")
TIMEOUT = 10  # the OTLP exporters' default
T0_NS = 1_763_700_000_000_000_000


def trace_id(call_id):
    """One trace per call (as pipecat makes one per conversation)."""
    return hashlib.sha256(call_id.encode()).hexdigest()[:32]


def make_calls(stack, prefix, n):
    """`n` calls of the development workspace, faults off: {call id: service id}."""
    calls = {}
    for i in range(n):
        call_id = f"{prefix}-{i}"
        body = json.dumps({"call_id": call_id, "call_type": "phone_call", "start_timestamp": 1763700000,
                           "end_timestamp": 1763700600, "recording_url": "pipecat://no-recording",
                           "transcript_with_tool_calls": [
                               {"role": "agent", "text": "Hello", "start_ms": 0, "end_ms": 900}]}).encode()
        a = stack.post_create_call(body)
        if a.status not in (200, 201):
            raise RuntimeError(f"the traces phase's call {call_id} was not stored: {a}")
        calls[call_id] = a.body["id"]
    return calls


def spans_json(call_id, span_ids, turn, trace=None, key="conversation.id", extra=()):
    """A pipecat turn's spans naming `call_id` (by `key`, conversation.id unless said), in
    OTLP's JSON mapping; of trace `trace` (the call's own unless said), each span with the
    `extra` (key, string) attributes too."""
    tid = trace or trace_id(call_id)
    spans = []
    for k, sid in enumerate(span_ids):
        start = T0_NS + (turn * 10_000 + k * 300) * 1_000_000
        name, op = [("turn", None), ("stt", "stt"), ("llm", "chat"), ("tts", "tts")][k % 4]
        attributes = [{"key": key, "value": {"stringValue": call_id}},
                      {"key": "turn.number", "value": {"intValue": str(turn)}}]
        attributes += [{"key": k, "value": {"stringValue": v}} for k, v in extra]
        if op:
            attributes.append({"key": "gen_ai.operation.name", "value": {"stringValue": op}})
        span = {"traceId": tid, "spanId": sid, "name": name, "kind": 1, "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 250_000_000), "attributes": attributes}
        if k:
            span["parentSpanId"] = span_ids[0]
        spans.append(span)
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bot"}}]},
                               "scopeSpans": [{"scope": {"name": "pipecat"}, "spans": spans}]}]}


def encoded(document, encoding):
    """The request body and its headers: OTLP JSON, or protobuf built by OpenTelemetry's own
    Python messages from the same JSON; gzip on top when `encoding` says so."""
    if encoding.startswith("json"):
        body, content_type = json.dumps(document).encode(), "application/json"
    else:
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        # protobuf's JSON parser takes ids as base64 (proto3's bytes); OTLP's JSON has hex.
        import base64
        doc = json.loads(json.dumps(document))
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if k in s:
                            s[k] = base64.b64encode(bytes.fromhex(s[k])).decode()
        body, content_type = ParseDict(doc, ExportTraceServiceRequest()).SerializeToString(), "application/x-protobuf"
    headers = {"Content-Type": content_type}
    if encoding.endswith("+gzip"):
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return body, headers


def send_batches(stack, calls, stage, seconds, seed, workers):
    """`workers` one-shot exporters for `seconds`, each sending a batch of 4 spans of a call
    of `calls` at a time: every batch once, new span ids each time."""
    deadline = time.time() + seconds
    sent = [[] for _ in range(workers)]
    ids = sorted(calls)

    def exporter(n):
        rng = random.Random(f"traces-{stage}-{seed}-{n}")
        turn = 0
        while time.time() < deadline:
            call_id = rng.choice(ids)
            span_ids = [f"{rng.getrandbits(64) | 1:016x}" for _ in range(4)]
            encoding = rng.choice(["json", "protobuf", "json+gzip", "protobuf+gzip"])
            body, headers = encoded(spans_json(call_id, span_ids, turn), encoding)
            started = time.time()
            try:
                a = request("POST", f"{stack.url}/otel/v1/traces", body, stack.auth(headers), timeout=TIMEOUT)
                status = a.status
            except OSError:
                status = None
            sent[n].append(Batch(call_id, span_ids, stage, encoding, status, time.time() - started))
            turn += 1
            time.sleep(rng.uniform(0.05, 0.3))

    run_each(workers, exporter)
    return [b for batches in sent for b in batches]


def read_spans(stack, service_id, attempts=5):
    """The span ids the call's trace holds (retried while the API answers 5xx)."""
    url = f"{stack.url}/api/v1/public/call/{service_id}/trace?workspace_id={stack.dev['workspace_id']}"
    for i in range(attempts):
        a = request("GET", url, headers=stack.auth())
        if a.status == 200:
            return {s["span_id"] for s in a.body["spans"]}
        time.sleep(0.5 * (i + 1))
    raise RuntimeError(f"the trace of call {service_id} could not be read: {a}")


def lost_spans(stack, calls, batches):
    """Batches sent and lost, by stage, with their answers; and each lost batch with why. A
    batch is lost unless answered 200 and then every span of it reads back in its call's
    trace."""
    table, lost, stored = {}, [], {}
    for b in batches:
        row = table.setdefault(b.stage, {"sent": 0, "spans": 0, "lost": 0, "statuses": {}, "seconds": []})
        row["sent"] += 1
        row["seconds"].append(b.seconds)
        row["spans"] += len(b.span_ids)
        row["statuses"][b.status] = row["statuses"].get(b.status, 0) + 1
        if b.status != 200:
            row["lost"] += 1
            lost.append((b, f"answered {b.status or 'nothing'}"))
            continue
        if b.call_id not in stored:
            stored[b.call_id] = read_spans(stack, calls[b.call_id])
        missing = [s for s in b.span_ids if s not in stored[b.call_id]]
        if missing:
            row["lost"] += 1
            lost.append((b, f"answered 200, {len(missing)} of its spans not in the call's trace"))
    for row in table.values():
        times = sorted(row.pop("seconds"))
        row["p50 ms"] = round(1000 * times[len(times) // 2]) if times else None
        row["p99 ms"] = round(1000 * times[min(len(times) - 1, int(len(times) * 0.99))]) if times else None
    return table, lost
