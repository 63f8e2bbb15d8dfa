// The viewer's pure modules under Node's own test runner (`node --test`, in `make test`):
// the revision diff, the word being played, tools joined with their results, percentiles.
import assert from "node:assert/strict";
import { test } from "node:test";

import { diff } from "../app/js/diff.js";
import { percentile } from "../app/js/latency.js";
import { policyLine, redactedPieces } from "../app/js/redactions.js";
import { aligned, itemsOf, wordAt } from "../app/js/timeline.js";
import { attach, shares, span } from "../app/js/waterfall.js";

test("the diff names every added, removed and changed leaf by its JSON pointer", () => {
  const before = { call: { sentiment: "positive", tags: ["a", "b"], "a/b~c": 1, gone: { x: null }, kind: [1] } };
  const after = { call: { sentiment: "negative", tags: ["a"], "a/b~c": 2, kind: { one: 1 }, new: {} } };
  const { shown, total } = diff(before, after, 100);
  assert.equal(total, shown.length);
  const by = Object.fromEntries(shown.map((c) => [c.path, [c.op, c.before, c.after]]));
  assert.deepEqual(by, {
    "/call/sentiment": ["changed", '"positive"', '"negative"'],
    "/call/tags/1": ["removed", '"b"', undefined],
    "/call/a~1b~0c": ["changed", "1", "2"],
    "/call/kind/0": ["removed", "1", undefined],
    "/call/kind/one": ["added", undefined, "1"],
    "/call/new": ["added", undefined, "{}"],
    "/call/gone/x": ["removed", "null", undefined],
  });
  // In the new document's order, removed members after the rest; a changed kind removed, then added.
  assert.deepEqual(shown.map((c) => c.path), ["/call/sentiment", "/call/tags/1", "/call/a~1b~0c", "/call/kind/0",
    "/call/kind/one", "/call/new", "/call/gone/x"]);
  assert.deepEqual(diff({ a: {} }, { a: {} }, 10).total, 0);
  assert.deepEqual(diff({ a: { b: 1 } }, { a: {} }, 10).shown.map((c) => [c.op, c.path]), [["removed", "/a/b"]]);
  assert.deepEqual(diff(after, after, 100), { shown: [], total: 0 });
  // The first revision: every value is new.
  assert.deepEqual(diff(undefined, { a: [true] }, 100).shown, [{ op: "added", path: "/a/0", before: undefined, after: "true" }]);
});

test("the diff shows the first changes and counts the rest", () => {
  const { shown, total } = diff({ xs: [] }, { xs: Array.from({ length: 1000 }, (_, i) => i) }, 10);
  assert.equal(shown.length, 10);
  assert.equal(total, 1000, "an empty list that fills: its members added, nothing removed");
  assert.deepEqual(shown.slice(0, 2).map((c) => [c.op, c.path]), [["added", "/xs/0"], ["added", "/xs/1"]]);
});

test("the diff stays linear under a long key holding many leaves", { timeout: 20_000 }, () => {
  // Spelling every leaf's pointer would copy the 1 MB key 200,000 times (200 GB).
  const key = "k".repeat(1 << 20);
  const leaves = Array.from({ length: 200_000 }, (_, i) => i);
  const { shown, total } = diff({ [key]: leaves }, { [key]: leaves.map((i) => i + 1) }, 5);
  assert.equal(total, 200_000);
  assert.equal(shown[0].path, `/${key}/0`);
});

test("the word being played is the last one started", () => {
  const starts = [0, 400, 400, 900];
  assert.deepEqual([-1, 0, 1, 2, 2, 3].map((_, i) => wordAt(starts, [-5, 0, 399, 400, 899, 5000][i])), [-1, 0, 0, 2, 2, 3]);
});

test("tool calls join their results by request id, in order, and any role keeps its text", () => {
  const { items, wordStarts } = itemsOf([
    { role: "agent", text: "hi", start_ms: 0, end_ms: 500, words: [{ word: "hi", start_ms: 10, end_ms: 300 }] },
    { role: "agent_function", tool: { name: "lookup", request_id: "r1", params: { q: 1 }, start_ms: 600 } },
    { role: "agent_function", tool: { name: "other", request_id: "r2", params: {}, start_ms: 700 } },
    { role: "agent_result", tool: { name: "lookup", request_id: "r1", result: { ok: true }, start_ms: 600, end_ms: 950 } },
    { role: "node_transition", start_ms: 1000, node: { from: "a", to: "b" } },
    { role: "<b>", text: "x", start_ms: 1100 },
  ]);
  assert.deepEqual(items.map((i) => i.kind), ["turn", "tool", "tool", "node", "turn"]);
  assert.deepEqual(wordStarts, [10]);
  const [lookup, other] = /** @type {any[]} */ (items.slice(1, 3));
  assert.deepEqual([lookup.name, lookup.params, lookup.result, lookup.end - lookup.start], ["lookup", { q: 1 }, { ok: true }, 350]);
  assert.equal(other.hasResult, false);
});

test("percentiles are nearest-rank", () => {
  const values = Array.from({ length: 20 }, (_, i) => 20 - i);
  assert.equal(percentile(values, 50), 10);
  assert.equal(percentile(values, 95), 19);
  assert.equal(percentile([], 50), null);
});

test("a turn's text keeps its case and punctuation, each timed word on the token it is", () => {
  const words = ["hi", "i'd", "like", "my", "order", "status"].map((text) => ({ text }));
  const pieces = aligned("Hi, I'd like my ORDER  status!", words);
  assert.deepEqual(pieces, [
    { text: "Hi,", word: 0 }, { text: " ", word: null }, { text: "I'd", word: 1 }, { text: " ", word: null },
    { text: "like", word: 2 }, { text: " ", word: null }, { text: "my", word: 3 }, { text: " ", word: null },
    { text: "ORDER", word: 4 }, { text: "  ", word: null }, { text: "status!", word: 5 },
  ]);
  assert.equal(pieces?.map((p) => p.text).join(""), "Hi, I'd like my ORDER  status!", "the text as sent");
  // A word the text spells otherwise is skipped; the rest still find their tokens.
  const some = aligned("It costs 20 dollars today", ["it", "costs", "twenty", "dollars", "today"].map((text) => ({ text })));
  assert.deepEqual(some?.filter((p) => p.word !== null).map((p) => [p.text, p.word]), [["It", 0], ["costs", 1], ["dollars", 3], ["today", 4]]);
  // Words that are not the text's: shown as words.
  assert.equal(aligned("Something else entirely", ["a", "b", "c"].map((text) => ({ text }))), null);
  assert.equal(aligned("", [{ text: "a" }]), null);
  // Linear: a long turn of words none of which match is done at once.
  const many = Array.from({ length: 50_000 }, () => ({ text: "zz" }));
  assert.equal(aligned("a ".repeat(50_000), many), null);
});

test("trace turns belong to the agent turn they contain, and every waterfall has one scale", () => {
  const items = [{ kind: "turn", role: "user", start: 0 }, { kind: "turn", role: "agent", start: 1_800 },
    { kind: "tool", start: 2_000 }, { kind: "turn", role: "user", start: 4_000 }, { kind: "turn", role: "agent", start: 6_100 }];
  const turn = (/** @type {number} */ n, /** @type {number} */ at) => ({ turn: n, offset_ms: at, duration_ms: 3_000, tools_ms: 0, tool_calls: 0,
    interrupted: false, steps: [{ kind: "stt", name: "stt", offset_ms: -120, duration_ms: 120 }, { kind: "tts", name: "tts", offset_ms: 900, duration_ms: 1_900 }] });
  const map = attach(items, [turn(2, 5_000), turn(1, 1_000), { ...turn(3, 0), offset_ms: undefined }]);
  assert.deepEqual([...map].map(([i, t]) => [i, t.turn]), [[1, 1], [4, 2]]);
  assert.deepEqual(span([turn(1, 0), turn(2, 0)]), [-120, 2_800]);
  assert.deepEqual(shares({ ...turn(1, 0), stt: { ttfb_ms: 120, duration_ms: 300 }, llm: { duration_ms: 800 }, tools_ms: 200 }),
    [["stt", 120], ["llm", 800], ["tool", 200], ["tts", 0]]);
});

test("one absurd span squashes no waterfall, and a trace turn with no agent line takes none", () => {
  const steps = [{ kind: "stt", name: "x", offset_ms: -1e300, duration_ms: 1e300 }, { kind: "tts", name: "y", offset_ms: 900, duration_ms: 1e308 }];
  assert.deepEqual(span([{ turn: 1, duration_ms: 1, tools_ms: 0, tool_calls: 0, interrupted: false, steps }]), [-600_000, 600_000]);
  const items = [{ kind: "turn", role: "agent", start: 20_000 }];
  const greeting = { turn: 1, offset_ms: 0, duration_ms: 1_000, tools_ms: 0, tool_calls: 0, interrupted: false, steps: [] };
  assert.equal(attach(items, [greeting]).size, 0, "the agent line 19 s later is not the greeting's");
  // The same word written in two Unicode forms is one word.
  assert.deepEqual(aligned("Café crème", [{ text: "cafe\u0301" }, { text: "crème" }])?.map((p) => p.word), [0, null, 1]);
});

test("values a data policy replaced are pieces of their own, named by kind; other brackets are text", () => {
  assert.deepEqual(redactedPieces("call [PHONE_NUMBER], or [EMAIL][SSN] [NAME]"), [
    { text: "call ", kind: null, label: "" },
    { text: "[PHONE_NUMBER]", kind: "phone_number", label: "phone number" },
    { text: ", or ", kind: null, label: "" },
    { text: "[EMAIL]", kind: "email", label: "e-mail" },
    { text: "[SSN]", kind: "ssn", label: "social security number" },
    { text: " [NAME]", kind: null, label: "" },
  ]);
  assert.deepEqual(redactedPieces(""), [{ text: "", kind: null, label: "" }]);
  assert.equal(redactedPieces("[DATE_OF_BIRTH]").length, 1);
  assert.deepEqual(redactedPieces("[PERSON_NAME] at [ADDRESS]").filter((p) => p.kind).map((p) => p.label),
    ["name", "address"]);
});

test("a call's data policy is said in its header; everything says nothing", () => {
  assert.equal(policyLine({ schema_version: 1 }), null);
  assert.equal(policyLine({ data_policy: { storage: "redacted", pii_entities: ["email", "ssn"] }, redactions: [{}, {}] }),
    "redacted (email, ssn) · 2 stretches of audio said a value replaced");
  const modelled = { data_policy: { storage: "redacted", pii_entities: ["person_name"] }, redactions: [{}] };
  assert.match(String(policyLine({ ...modelled, redaction: { model: "aws_comprehend" } })), /found by AWS Comprehend$/);
  assert.match(String(policyLine({ ...modelled, redaction: { model: "nothing_to_read" } })), /no turns for the model to read$/);
  assert.match(String(policyLine({ ...modelled, redaction: { model: "unavailable" } })), /unavailable: rules alone$/);
  assert.match(String(policyLine({ data_policy: { storage: "metadata_only" }, counts: { segments: 5, words: 11 } })),
    /^metadata only · 5 segments, .* 11 words were not kept$/);
});
