"""OpenTelemetry traces through the local stack, sent by the OpenTelemetry Python SDK's own
OTLP/HTTP exporters (opentelemetry-exporter-otlp-proto-http, and -json-http for OTLP JSON),
unchanged, and by a real pipecat pipeline with pipecat's own tracing (pipecat_agent.py):
configured only by its standard environment (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`), as a
pipecat or LiveKit agent's is. The spans are a pipecat conversation's (conversation → turn →
stt / llm / tts, with pipecat's attributes); the batch is announced on the queue, indexed by
commit-pending, joined to the call posted after it, and read back with its per-turn table."""
import asyncio
import json
import time

import pytest

from opentelemetry import trace
from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter as JsonSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from devstack.stack import request, wait_for

T0_NS = 1_763_700_000_000_000_000


def ms(offset):
    return T0_NS + offset * 1_000_000


def pipecat_spans(provider, call_id):
    """A two-turn pipecat conversation, as pipecat's tracing names and attributes it."""
    tracer = provider.get_tracer("pipecat")
    conversation = tracer.start_span("conversation", start_time=ms(0), attributes={"conversation.id": call_id})
    ctx = otel_context(conversation)
    turn = tracer.start_span("turn", context=ctx, start_time=ms(1000), attributes={
        "turn.number": 1, "turn.duration_seconds": 3.2, "turn.user_bot_latency_seconds": 0.85,
        "turn.was_interrupted": False, "conversation.id": call_id})
    tctx = otel_context(turn)
    for name, op, start, end, extra in [
        ("stt", "stt", 1000, 1300, {"metrics.ttfb": 0.12, "transcript": "SECRET-WORDS"}),
        ("llm", "chat", 1300, 2100, {"metrics.ttfb": 0.35, "gen_ai.usage.input_tokens": 120,
                                     "gen_ai.usage.output_tokens": 30, "input": "SECRET-PROMPT"}),
        ("tts", "tts", 2100, 4000, {"metrics.ttfb": 0.2, "text": "SECRET-SPOKEN"}),
    ]:
        span = tracer.start_span(name, context=tctx, start_time=ms(start),
                                 attributes={"gen_ai.operation.name": op, **extra})
        span.end(end_time=ms(end))
    turn.end(end_time=ms(4200))
    conversation.end(end_time=ms(42000))


def otel_context(span):
    return trace.set_span_in_context(span)


def body(call_id):
    return json.dumps({
        "call_id": call_id, "call_type": "phone_call", "start_timestamp": 1763700000,
        "end_timestamp": 1763700042, "recording_url": "pipecat://no-recording",
        "transcript_with_tool_calls": [{"role": "agent", "text": "Hello", "start_ms": 0, "end_ms": 900}],
    }).encode()


@pytest.mark.parametrize("exporter_class", [OTLPSpanExporter, JsonSpanExporter], ids=["protobuf", "json"])
def test_the_sdks_own_exporter_reaches_the_receiver_and_the_call_posted_after_shows_its_turns(stack, monkeypatch,
                                                                                               exporter_class):
    call_id = f"traced-e2e-{int(time.time() * 1000)}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{stack.url}/otel")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer {stack.dev['api_key']}")
    # Protobuf (opentelemetry-exporter-otlp-proto-http) or OTLP JSON
    # (opentelemetry-exporter-otlp-json-http), to $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces.
    exporter = exporter_class()
    provider = TracerProvider(resource=Resource.create({"service.name": "pipecat-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pipecat_spans(provider, call_id)
    provider.shutdown()
    # The spans came first; the call after them.
    a = stack.post_create_call(body(call_id))
    assert a.status == 201, a
    url = f"{stack.url}/api/v1/public/call/{a.body['id']}/trace?workspace_id={stack.dev['workspace_id']}"

    def joined():
        t = request("GET", url, headers=stack.auth())
        return t if t.status == 200 and len(t.body["spans"]) == 5 else None

    t = wait_for(joined, 20)
    assert t is not None, "the exporter's spans were not indexed and joined within 20 s"
    [turn] = t.body["turns"]
    assert (turn["turn"], turn["offset_ms"], turn["user_to_agent_latency_ms"]) == (1, 1000, 850)
    assert (turn["stt"], turn["llm"]["ttfb_ms"], turn["tts"]["duration_ms"]) == (
        {"ttfb_ms": 120, "duration_ms": 300}, 350, 1900)
    assert (turn["input_tokens"], turn["output_tokens"], turn["interrupted"]) == (120, 30, False)
    assert "SECRET" not in json.dumps(t.body), "content attributes are dropped at ingest"
    # Erased with its call, through the functions' own IAM statements (a refusal fails the test).
    erase = request("DELETE", f"{stack.url}/api/v1/public/call/{a.body['id']}?workspace_id={stack.dev['workspace_id']}",
                    headers=stack.auth())
    assert erase.status == 200 and erase.body["erased"], erase
    again = stack.post_create_call(body(call_id))
    assert again.status == 201, again
    url = f"{stack.url}/api/v1/public/call/{again.body['id']}/trace?workspace_id={stack.dev['workspace_id']}"
    assert request("GET", url, headers=stack.auth()).body["spans"] == [], "the erased call's spans do not come back"


def test_logs_and_metrics_are_answered_not_refused_and_a_bad_type_is_415(stack):
    headers = stack.auth({"Content-Type": "application/json"})
    for signal in ("logs", "metrics"):
        a = request("POST", f"{stack.url}/otel/v1/{signal}", b"{}", headers)
        assert a.status == 200 and "not kept" in a.body["partialSuccess"]["errorMessage"], a
    a = request("POST", f"{stack.url}/otel/v1/traces", b"x", stack.auth({"Content-Type": "text/plain"}))
    assert a.status == 415 and a.body["code"] == 3, a


def trace_of(stack, id):
    return request("GET", f"{stack.url}/api/v1/public/call/{id}/trace?workspace_id={stack.dev['workspace_id']}",
                   headers=stack.auth())


TIMES = ("start_unix_ms", "offset_ms", "duration_ms", "user_to_agent_latency_ms", "ttfb_ms", "tools_ms")


def shape(turns):
    """A per-turn table without its measured times (two runs of a pipeline take their own)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in TIMES}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(turns)


@pytest.fixture(scope="module")
def pipecat_tracing(stack):
    """pipecat's own tracing set up once for the process (its `setup_tracing`: a global
    provider, BatchSpanProcessor), exporting through the SDK's OTLP/HTTP exporter to the stack."""
    from pipecat.utils.tracing.setup import setup_tracing
    exporter = OTLPSpanExporter(endpoint=f"{stack.url}/otel/v1/traces",
                                headers={"Authorization": f"Bearer {stack.dev['api_key']}"})
    setup_tracing("pipecat-bot", exporter=exporter)
    return trace.get_tracer_provider()


def test_a_pipecat_pipeline_with_its_own_tracing_gives_every_turn_its_stt_llm_and_tts(stack, pipecat_tracing):
    from pipecat_agent import run_conversation
    tables = {}
    for order in ("call after its spans", "call before its spans"):
        call_id = f"pipecat-e2e-{order.split()[1]}-{int(time.time() * 1000)}"
        if order == "call before its spans":
            a = stack.post_create_call(body(call_id))
            assert a.status == 201, a
        asyncio.run(run_conversation(call_id, n_turns=3))
        assert pipecat_tracing.force_flush(10_000)
        if order == "call after its spans":
            a = stack.post_create_call(body(call_id))
            assert a.status == 201, a

        def joined():
            t = trace_of(stack, a.body["id"])
            return t if t.status == 200 and len(t.body["turns"]) == 3 and all(
                "tts" in turn for turn in t.body["turns"]) else None

        t = wait_for(joined, 30)
        assert t is not None, f"{order}: {trace_of(stack, a.body['id']).body}"
        turns = t.body["turns"]
        assert [turn["turn"] for turn in turns] == [1, 2, 3]
        for turn in turns:
            assert [s["kind"] for s in turn["steps"]] == ["stt", "llm", "tts"], turn
            assert turn["llm"]["ttfb_ms"] > 0 and turn["tts"]["ttfb_ms"] > 0 and "ttfb_ms" in turn["stt"], turn
            assert (turn["input_tokens"], turn["output_tokens"], turn["interrupted"]) == (12, 6, False), turn
            assert turn["user_to_agent_latency_ms"] > 0, turn
        names = {s["name"] for s in t.body["spans"]}
        assert {"conversation", "turn", "stt", "llm", "tts"} <= names, names
        # pipecat's content attributes (the transcript, the prompt, the spoken text) are dropped.
        said = json.dumps(t.body)
        assert "user says" not in said and "How can I help" not in said and "You are a test bot" not in said
        tables[order] = shape(turns)
    assert tables["call after its spans"] == tables["call before its spans"], tables
