"""A Pydantic v2 peer of call-ingest's operation B (Create Call) pipeline, and its timer.

The Rust side measured by ``cargo bench -p call-ingest-core --bench pipeline`` is
``call::ingest(Operation::CreateCall, body)``: parse the bytes into typed records, validate
them (every rule of the specification's sections 2.3 and 8 and of the contract), and
normalise the valid record into the stored document. This file does the same work the way
a Pydantic v2 service would: ``CreateCall.model_validate_json(body)`` (parse + field rules +
the cross-field rules as a model validator), then ``normalize(call)``.

Mirrored from shared/core/src (api/create_call.rs, api/rules.rs, api/lenient.rs,
validate/checks.rs, normalize/, api/counts.rs):

* The same fields and JSON types, read strictly as serde reads them: a string is only a
  JSON string, a boolean only true/false, a number int or decimal (an integer stays an
  integer, as ``api::Number`` keeps it); ``agent_version`` and ``duration_ms`` are
  integers, where an integral decimal (3.0) is accepted as ``api::lenient`` does. ``null``
  is the same as an absent field, so a required field sent as null is refused.
* Required: call_id, call_type, transcript_with_tool_calls, start_timestamp, end_timestamp,
  recording_url, and each segment's role.
* Lengths in characters (code points): call_id 1-200, call_type 1-100, recording_url
  1-1024, recording_multi_channel_url <= 1024, call_status and disconnection_reason <= 100,
  caller_phone_number and user_sentiment <= 50; at least one segment.
* Allowed values: segment role in user, agent, agent_function, agent_result,
  node_transition; user_sentiment positive/neutral/negative/unknown, ASCII
  case-insensitive. agent_version >= 0, duration_ms >= 0.
* Millisecond fields (segment start_ms/end_ms/duration_ms, word start_ms/end_ms, tool
  start_ms/end_ms): int or decimal, 0 <= value <= 2^53 - 1 (``rules::millis``).
* Cross-field rules (``validate::checks``), one walk in an ``after`` model validator that
  collects every violation: both timestamps are Unix seconds (< 10^11) or milliseconds,
  positive and below 10^14, normalised each on its own, end >= start; a user/agent segment
  needs a non-empty words list, or start_ms with end_ms, or start_ms with duration_ms; a
  node_transition needs node with from and to; the segment's stored bounds (sent, else
  from its first/last word, else start + duration) are in order and end by 2^53 - 1; each
  word's and each tool's end_ms >= start_ms, compared rounded up to whole milliseconds;
  the typed members of metadata (ai_models.* strings, usage_token.* numbers).
* Count limits of ``api::counts`` that concern the schema: at most 50,000 segments, 20,000
  words per segment and 400,000 words per call.
* Unknown fields kept, at the top level and in every nested record (``extra='allow'``, as
  ``record!`` keeps them in ``extra``).
* Normalisation (``normalize::create_call``): both timestamps in epoch milliseconds;
  duration_ms as sent, else end - start; each segment's start_ms/end_ms filled in and
  rounded up, decimal duration_ms and word/tool times rounded up; the plain-text transcript
  derived when absent ("Agent: ..." / "User: ..." lines of segments with non-blank text);
  user_sentiment lower-cased; metadata merged into general_meta_data_raw (top-level keys,
  general_meta_data_raw wins).

Not mirrored (see also README.md):

* The count limits on keys per object (10,000), nesting depth (64) and values per body
  (1.5 million): pydantic has no such limits (its JSON parser only has a recursion limit).
  They cost Rust a few per cent of its parse; on the benchmark's calls they refuse nothing.
* The shape of the answer: Rust reports every violation at once, each with a JSON pointer
  and a code, sorted, with a cap on word violations. Pydantic reports all field-level
  errors at once, but a model validator runs only once its fields are valid, so the
  cross-field violations come only when the fields are right. 400 (not JSON) and 422 (not
  valid) are both a ``ValidationError`` here.
* JSON edge cases decided by the parser: pydantic's parser (jiter) reads ``NaN``,
  ``Infinity`` and numbers beyond f64 (as inf), which serde_json refuses as not JSON. In
  typed fields they are refused here too (``allow_inf_nan=False``); inside free-form
  objects (call_analysis, unknown fields, ...) the peer keeps them.
* The stored document's JSON and digest, and the compressed raw body: done by the store,
  outside ``call::ingest``, and not part of the Rust benchmark's ratio either.

Usage: ``python peer.py [--seconds S] [--batches N] FILE [FILE...]``
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import pydantic
import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

# Limits, as in shared/core/src (api/number.rs, normalize/timestamps.rs, api/counts.rs).
MAX_SAFE_INTEGER = (1 << 53) - 1
I64_MAX = (1 << 63) - 1
SECONDS_BELOW = 1e11
MILLIS_BELOW = 1e14
MAX_SEGMENTS = 50_000
MAX_WORDS_PER_SEGMENT = 20_000
MAX_WORDS = 400_000
SENTIMENTS = frozenset(("positive", "neutral", "negative", "unknown"))

CONFIG = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

# A JSON number as sent (api::Number): an integer stays an integer.
Num = Union[StrictInt, StrictFloat]
# A time in milliseconds (rules::millis): int or decimal, 0 <= value <= 2^53 - 1.
Millis = Union[
    Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)],
    Annotated[StrictFloat, Field(ge=0, le=MAX_SAFE_INTEGER)],
]


def _whole(v: int | float) -> int:
    """An i64 field (api::lenient): an integer, or a decimal with no fraction."""
    if v.__class__ is float:
        if not (v.is_integer() and abs(v) < 9.2e18):
            raise ValueError("must be an integer")
        v = int(v)
    elif v > I64_MAX:
        raise ValueError("must be an integer")
    if v < 0:
        raise ValueError("must be >= 0")
    return v


NonNegativeI64 = Annotated[Union[StrictInt, StrictFloat], AfterValidator(_whole)]


def _sentiment(v: str) -> str:
    if not (v.isascii() and v.lower() in SENTIMENTS):
        raise ValueError("must be one of positive, neutral, negative, unknown")
    return v


class Word(BaseModel):
    model_config = CONFIG
    word: Optional[StrictStr] = None
    start_ms: Optional[Millis] = None
    end_ms: Optional[Millis] = None
    confidence: Optional[Num] = None


class Node(BaseModel):
    model_config = CONFIG
    from_: Optional[StrictStr] = Field(None, alias="from")
    to: Optional[StrictStr] = None
    reason: Optional[StrictStr] = None


class Tool(BaseModel):
    model_config = CONFIG
    name: Optional[StrictStr] = None
    request_id: Optional[StrictStr] = None
    params: Any = None
    result: Any = None
    is_error: Optional[StrictBool] = None
    error: Optional[StrictStr] = None
    start_ms: Optional[Millis] = None
    end_ms: Optional[Millis] = None


class SegmentMetadata(BaseModel):
    model_config = CONFIG
    e2e_latency: Optional[Num] = None
    interrupted: Optional[StrictBool] = None
    llm_node_ttft: Optional[Num] = None
    tts_node_ttfb: Optional[Num] = None
    transcript_confidence: Optional[Num] = None
    stt_node_ttfb: Optional[Num] = None


class Segment(BaseModel):
    model_config = CONFIG
    role: Literal["user", "agent", "agent_function", "agent_result", "node_transition"]
    text: Optional[StrictStr] = None
    words: Optional[Annotated[list[Word], Field(max_length=MAX_WORDS_PER_SEGMENT)]] = None
    start_ms: Optional[Millis] = None
    end_ms: Optional[Millis] = None
    duration_ms: Optional[Millis] = None
    node: Optional[Node] = None
    tool: Optional[Tool] = None
    metadata: Optional[SegmentMetadata] = None


def _ms(v: int | float) -> int:
    """Whole milliseconds, rounded up (Number::ceil_non_negative on a checked value)."""
    return v if v.__class__ is int else math.ceil(v)


def _round_half_away(x: float) -> int:
    """f64::round for x >= 0: halves go away from zero (Python's round() goes to even)."""
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def seconds_to_millis(seconds: float) -> Optional[int]:
    """timestamps::seconds_to_millis: round to a microsecond first, then up to a ms."""
    ms = math.ceil(_round_half_away(seconds * 1_000_000.0) / 1000.0)
    return ms if 0 <= ms <= MAX_SAFE_INTEGER else None


def epoch_millis(value: int | float) -> int | str:
    """timestamps::epoch_millis: epoch ms, or the message of why the value is refused."""
    v = float(value)
    if v <= 0.0:
        return "must be a positive Unix time in seconds or milliseconds"
    if v >= MILLIS_BELOW:
        return "must be a Unix time in seconds or milliseconds, not microseconds or nanoseconds"
    if value.__class__ is int:
        ms = value if v >= SECONDS_BELOW else value * 1000
    elif value >= SECONDS_BELOW:
        ms = math.ceil(value)
    else:
        ms = seconds_to_millis(value) or 0
    if ms == 0:
        return "must be a positive Unix time in seconds or milliseconds"
    return ms


def segment_bounds(s: Segment) -> tuple[Optional[int], Optional[int]]:
    """normalize::segment_bounds: start and end as stored, in whole milliseconds."""
    words = s.words
    start = s.start_ms
    if start is not None:
        start = _ms(start)
    elif words:
        first = words[0].start_ms
        start = None if first is None else _ms(first)
    end = s.end_ms
    if end is not None:
        end = _ms(end)
    else:
        if words:
            last = words[-1].end_ms
            end = None if last is None else _ms(last)
        if end is None and start is not None and s.duration_ms is not None:
            end = start + _ms(s.duration_ms)
    return start, end


# The typed members of the call metadata object (checks::call_metadata).
_METADATA_MEMBERS = (
    ("ai_models", ("asr_model", "llm_model", "tts_model"), (str,), "a string"),
    ("usage_token", ("stt_duration_seconds", "llm_token", "tts_characters_count"), (int, float), "a number"),
)


class CreateCall(BaseModel):
    """The body of POST /api/v1/public/call (api::create_call::CreateCall)."""

    model_config = CONFIG
    call_id: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    call_type: Annotated[StrictStr, Field(min_length=1, max_length=100)]
    transcript_with_tool_calls: Annotated[list[Segment], Field(min_length=1, max_length=MAX_SEGMENTS)]
    start_timestamp: Num
    end_timestamp: Num
    recording_url: Annotated[StrictStr, Field(min_length=1, max_length=1024)]
    agent_version: Optional[NonNegativeI64] = None
    transcript: Optional[StrictStr] = None
    duration_ms: Optional[NonNegativeI64] = None
    call_status: Optional[Annotated[StrictStr, Field(max_length=100)]] = None
    disconnection_reason: Optional[Annotated[StrictStr, Field(max_length=100)]] = None
    caller_phone_number: Optional[Annotated[StrictStr, Field(max_length=50)]] = None
    call_successful: Optional[StrictBool] = None
    user_sentiment: Optional[Annotated[StrictStr, Field(max_length=50), AfterValidator(_sentiment)]] = None
    in_voicemail: Optional[StrictBool] = None
    collected_dynamic_variables: Optional[dict[str, Any]] = None
    call_cost: Optional[Num] = None
    call_analysis: Optional[dict[str, Any]] = None
    metadata: Optional[dict[str, Any]] = None
    general_meta_data_raw: Optional[dict[str, Any]] = None
    recording_multi_channel_url: Optional[Annotated[StrictStr, Field(max_length=1024)]] = None

    @model_validator(mode="after")
    def _cross_field(self) -> "CreateCall":
        """validate::checks::create_call: every rule that spans fields, all violations."""
        errors: list[str] = []
        start = epoch_millis(self.start_timestamp)
        if start.__class__ is str:
            errors.append(f"/start_timestamp: {start}")
        end = epoch_millis(self.end_timestamp)
        if end.__class__ is str:
            errors.append(f"/end_timestamp: {end}")
        if start.__class__ is int and end.__class__ is int and end < start:
            errors.append(f"/end_timestamp: must be >= start_timestamp ({start} ms once both are in milliseconds)")

        total_words = 0
        for i, s in enumerate(self.transcript_with_tool_calls):
            role = s.role
            words = s.words
            if role == "user" or role == "agent":
                if not (words or (s.start_ms is not None and (s.end_ms is not None or s.duration_ms is not None))):
                    errors.append(
                        f"/transcript_with_tool_calls/{i}: a user or agent segment needs timing: a non-empty "
                        "words list, start_ms with end_ms, or start_ms with duration_ms"
                    )
            elif role == "node_transition":
                node = s.node
                if node is None:
                    errors.append(f"/transcript_with_tool_calls/{i}/node: a node_transition needs node with from and to")
                else:
                    if node.from_ is None:
                        errors.append(f"/transcript_with_tool_calls/{i}/node/from: is required")
                    if node.to is None:
                        errors.append(f"/transcript_with_tool_calls/{i}/node/to: is required")
            lo, hi = segment_bounds(s)
            if lo is not None and hi is not None:
                if hi > MAX_SAFE_INTEGER:
                    field = "end_ms" if s.end_ms is not None else "duration_ms"
                    errors.append(f"/transcript_with_tool_calls/{i}/{field}: must end by {MAX_SAFE_INTEGER} ms")
                elif hi < lo:
                    errors.append(f"/transcript_with_tool_calls/{i}: ends ({hi} ms) before it starts ({lo} ms)")
            if words:
                total_words += len(words)
                for j, w in enumerate(words):
                    ws = w.start_ms
                    we = w.end_ms
                    if ws is not None and we is not None and _ms(we) < _ms(ws):
                        errors.append(
                            f"/transcript_with_tool_calls/{i}/words/{j}/end_ms: must be >= start_ms ({_ms(ws)})"
                        )
            tool = s.tool
            if tool is not None:
                ts = tool.start_ms
                te = tool.end_ms
                if ts is not None and te is not None and _ms(te) < _ms(ts):
                    errors.append(f"/transcript_with_tool_calls/{i}/tool/end_ms: must be >= start_ms ({_ms(ts)})")
        if total_words > MAX_WORDS:
            errors.append(f"/transcript_with_tool_calls: more than {MAX_WORDS} words")

        metadata = self.metadata
        if metadata:
            for group, keys, types, expected in _METADATA_MEMBERS:
                members = metadata.get(group)
                if members is None:
                    continue
                if members.__class__ is not dict:
                    errors.append(f"/metadata/{group}: must be an object")
                    continue
                for key in keys:
                    v = members.get(key)
                    if v is not None and (v.__class__ is bool or not isinstance(v, types)):
                        errors.append(f"/metadata/{group}/{key}: must be {expected}")
        if errors:
            raise ValueError(f"{len(errors)} fields are invalid: " + "; ".join(errors))
        return self


def derive_transcript(segments: list[Segment]) -> str:
    """normalize::transcript::derive."""
    lines = []
    for s in segments:
        role = s.role
        if role == "agent":
            speaker = "Agent: "
        elif role == "user":
            speaker = "User: "
        else:
            continue
        text = s.text
        if text is None or not text.strip():
            continue
        lines.append(speaker + text)
    return "\n".join(lines)


def normalize(call: CreateCall) -> dict[str, Any]:
    """normalize::create_call on a validated call: the document to store."""
    start = epoch_millis(call.start_timestamp)
    end = epoch_millis(call.end_timestamp)
    call.start_timestamp = start
    call.end_timestamp = end
    duration = call.duration_ms if call.duration_ms is not None else max(end - start, 0)
    call.duration_ms = duration
    for s in call.transcript_with_tool_calls:
        s.start_ms, s.end_ms = segment_bounds(s)
        if s.duration_ms.__class__ is float:
            s.duration_ms = math.ceil(s.duration_ms)
        words = s.words
        if words:
            for w in words:
                if w.start_ms.__class__ is float:
                    w.start_ms = math.ceil(w.start_ms)
                if w.end_ms.__class__ is float:
                    w.end_ms = math.ceil(w.end_ms)
        tool = s.tool
        if tool is not None:
            if tool.start_ms.__class__ is float:
                tool.start_ms = math.ceil(tool.start_ms)
            if tool.end_ms.__class__ is float:
                tool.end_ms = math.ceil(tool.end_ms)
    if call.transcript is None:
        call.transcript = derive_transcript(call.transcript_with_tool_calls)
    if call.user_sentiment is not None:
        call.user_sentiment = call.user_sentiment.lower()
    if call.metadata is not None:
        merged = dict(call.metadata)
        if call.general_meta_data_raw is not None:
            merged.update(call.general_meta_data_raw)
        call.general_meta_data_raw = merged
        call.metadata = None
    return {
        "operation": "create_call",
        "call": call,
        "summary": {"start_ms": start, "end_ms": end, "duration_ms": duration},
    }


def ingest(body: bytes) -> dict[str, Any]:
    """The peer of call::ingest(Operation::CreateCall, body): parse, validate, normalise."""
    return normalize(CreateCall.model_validate_json(body))


def time_file(body: bytes, seconds: float, batches: int) -> tuple[float, int, int]:
    """Median seconds per ingest over at least `batches` batches of equal size, and at
    least `seconds` of timed calls in all; also the calls per batch and the batches run.

    The garbage collector stays on, as in a service; each batch starts after a collection,
    so no batch pays for the garbage of the one before.
    """
    # Warm up and calibrate: how many calls fill one batch of seconds / batches.
    t0 = time.perf_counter()
    n = 0
    while True:
        ingest(body)
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= 0.2:
            break
    per_batch = max(1, math.ceil(seconds / batches / (elapsed / n)))
    per_call = []
    total = 0.0
    while len(per_call) < batches or total < seconds:
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(per_batch):
            ingest(body)
        spent = time.perf_counter() - t0
        total += spent
        per_call.append(spent / per_batch)
    return statistics.median(per_call), per_batch, len(per_call)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="operation B body (JSON)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time spent timing each file (default 3)")
    parser.add_argument("--batches", type=int, default=7, help="batches per file, median taken (default 7, min 5)")
    args = parser.parse_args(argv)
    if args.batches < 5:
        parser.error("--batches must be at least 5")

    print(f"# pydantic {pydantic.VERSION}, pydantic-core {pydantic_core.__version__}, "
          f"Python {sys.version.split()[0]}: model_validate_json + normalise, MB = 10^6 bytes")
    print(f"# {'label':<40} {'bytes':>10} {'ms_per_call':>12} {'MB_per_s':>9}")
    results = []
    for path in args.files:
        try:
            body = path.read_bytes()
        except OSError as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return 1
        try:
            ingest(body)
        except ValidationError as e:
            print(f"{path}: refused by the peer model ({e.error_count()} errors):\n{e}", file=sys.stderr)
            return 1
        per_call, iterations, batches = time_file(body, args.seconds, args.batches)
        ms = per_call * 1000.0
        mb_per_s = len(body) / per_call / 1e6
        print(f"{path.stem:<42} {len(body):>10} {ms:>12.4f} {mb_per_s:>9.2f}")
        results.append({
            "path": str(path), "label": path.stem, "bytes": len(body), "ms": ms,
            "mb_per_s": mb_per_s, "iterations_per_batch": iterations, "batches": batches,
        })
    print(json.dumps({"files": results, "pydantic": pydantic.VERSION, "pydantic_core": pydantic_core.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
