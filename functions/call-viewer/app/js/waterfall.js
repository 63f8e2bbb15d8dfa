// @ts-check
// The call's traces (GET …/call/{id}/trace): each agent turn's waterfall (its STT, LLM,
// tool and TTS spans, to one scale for every turn of the call), and the per-turn latency
// breakdown chart with the percentiles of the caller's wait.

import { h, svg } from "./dom.js";
import { percentile } from "./latency.js";

/** The steps a waterfall draws, in the order a turn runs them, with their labels. */
export const STEPS = [
  { kind: "stt", label: "STT" },
  { kind: "llm", label: "LLM" },
  { kind: "tool", label: "Tools" },
  { kind: "tts", label: "TTS" },
];


/** The furthest a waterfall reaches from its turn's start, ms: one absurd span (an agent
 * may send any number) must not squash every other bar of the call. */
const REACH = 10 * 60 * 1000;
/** Turns drawn as bars of their own; more are drawn in as many groups (the worst of each). */
const MAX_BARS = 400;
/** Steps drawn in one waterfall; the rest are counted. */
const MAX_STEPS = 200;

/**
 * `v` when it is a finite number, else 0.
 * @param {unknown} v
 */
function finite(v) {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/**
 * A name from a span, as text that cannot reorder what follows it (bidi isolated), at
 * most `n` characters (code points, never half of one).
 * @param {unknown} name
 * @param {number} n
 */
function isolated(name, n) {
  const chars = [...String(name ?? "")];
  return `\u2068${chars.slice(0, n).join("")}${chars.length > n ? "…" : ""}\u2069`;
}

/**
 * @typedef {{kind: string, name: string, offset_ms: number, duration_ms: number}} Step
 * @typedef {{turn: number, offset_ms?: number, duration_ms: number, user_to_agent_latency_ms?: number,
 *   stt?: {ttfb_ms?: number, duration_ms: number}, llm?: {ttfb_ms?: number, duration_ms: number},
 *   tts?: {ttfb_ms?: number, duration_ms: number}, tools_ms: number, tool_calls: number, interrupted: boolean,
 *   steps: Step[]}} TraceTurn
 */

/**
 * The span of time every waterfall of the call is drawn over: [from, to] ms from a turn's
 * start (from ≤ 0: LiveKit's speech-to-text comes before its agent turn).
 * @param {TraceTurn[]} turns
 * @returns {[number, number]}
 */
export function span(turns) {
  let from = 0;
  let to = 1;
  for (const t of turns) {
    for (const s of Array.isArray(t?.steps) ? t.steps : []) {
      from = Math.min(from, finite(s?.offset_ms));
      to = Math.max(to, finite(s?.offset_ms) + finite(s?.duration_ms));
    }
  }
  return [Math.max(from, -REACH), Math.min(to, REACH)];
}

/**
 * The timeline item (an index into `items`) each trace turn belongs to: the first agent
 * turn that starts within the trace turn, else the first after its start. A trace turn
 * without an offset (the call has no start) belongs to none.
 * @param {{kind: string, role?: string, start: number}[]} items
 * @param {TraceTurn[]} turns
 * @returns {Map<number, TraceTurn>}
 */
export function attach(items, turns) {
  const agents = items.flatMap((item, index) => (item.kind === "turn" && item.role === "agent" ? [[item.start, index]] : []))
    .sort((a, b) => a[0] - b[0]);
  /** @type {Map<number, TraceTurn>} */
  const out = new Map();
  let at = 0;
  const timed = turns.filter((t) => typeof t?.offset_ms === "number" && Number.isFinite(t.offset_ms))
    .sort((a, b) => /** @type {number} */ (a.offset_ms) - /** @type {number} */ (b.offset_ms));
  for (const t of timed) {
    const start = /** @type {number} */ (t.offset_ms);
    while (at < agents.length && agents[at][0] < start) at++;
    // Only an agent turn that starts within the trace turn (and a little after: clocks
    // differ): a trace turn with no agent line (the greeting, an interruption) takes none.
    if (at < agents.length && agents[at][0] <= start + finite(t.duration_ms) + SLACK) out.set(agents[at++][1], t);
  }
  return out;
}

/** How late after its trace turn's end an agent turn may start and still be its own, ms. */
const SLACK = 2000;

const ROW = 16;
const WIDTH = 600;
const LABEL = 150;

/**
 * One turn's waterfall: a row per step, its bar to the call's common scale.
 * @param {TraceTurn} turn
 * @param {[number, number]} over
 */
export function waterfall(turn, over) {
  const [from, to] = over;
  const x = (/** @type {number} */ ms) => LABEL + ((Math.min(Math.max(ms, from), to) - from) / (to - from)) * WIDTH;
  const all = Array.isArray(turn.steps) ? turn.steps : [];
  const steps = all.slice(0, MAX_STEPS).map((s) => ({ kind: String(s?.kind), name: s?.name, offset_ms: finite(s?.offset_ms), duration_ms: finite(s?.duration_ms) }));
  const height = steps.length * ROW + 4;
  const root = svg("svg", { viewBox: `0 0 ${LABEL + WIDTH + 70} ${height}`, class: "waterfall-bars", role: "img" });
  root.setAttribute("aria-label", `turn ${turn.turn}: ${steps.map((s) => `${s.kind} ${s.duration_ms} ms`).join(", ")}`);
  steps.forEach((s, i) => {
    const y = i * ROW + 2;
    root.appendChild(svg("text", { x: 0, y: y + 11, class: "step-label" }, `${label(s.kind)} · ${isolated(s.name, 18)}`));
    const bar = svg("rect", { x: x(s.offset_ms).toFixed(1), y, height: ROW - 4, class: `step ${s.kind}`,
      width: Math.max(1, x(s.offset_ms + s.duration_ms) - x(s.offset_ms)).toFixed(1), "data-kind": s.kind,
      "data-offset": s.offset_ms, "data-duration": s.duration_ms });
    bar.appendChild(svg("title", {}, `${label(s.kind)} ${isolated(s.name, 200)}: ${s.duration_ms} ms, from ${s.offset_ms} ms`));
    root.appendChild(bar);
    root.appendChild(svg("text", { x: (x(s.offset_ms + s.duration_ms) + 4).toFixed(1), y: y + 11, class: "step-ms" }, `${Math.round(s.duration_ms)} ms`));
  });
  const facts = [
    typeof turn.user_to_agent_latency_ms === "number" ? `caller waited ${turn.user_to_agent_latency_ms} ms` : null,
    turn.interrupted ? "interrupted" : null,
    all.length > steps.length ? `${all.length - steps.length} more steps not drawn` : null,
  ].filter(Boolean).join(" · ");
  return h("figure", { class: "waterfall", "data-turn": turn.turn }, root,
    h("figcaption", { class: "muted" }, `Trace turn ${turn.turn}${facts ? ` · ${facts}` : ""}`));
}

/** @param {string} kind */
function label(kind) {
  return STEPS.find((s) => s.kind === kind)?.label ?? kind;
}

/**
 * What a turn's bar is made of, per step kind: a service's time to first byte (its whole
 * time when it gives none), and the tools' time.
 * @param {TraceTurn} t
 * @returns {[string, number][]}
 */
export function shares(t) {
  const service = (/** @type {{ttfb_ms?: number, duration_ms: number} | undefined} */ s) =>
    (s ? (typeof s.ttfb_ms === "number" ? finite(s.ttfb_ms) : finite(s.duration_ms)) : 0);
  return [["stt", service(t.stt)], ["llm", service(t.llm)], ["tool", finite(t.tools_ms)], ["tts", service(t.tts)]];
}

/**
 * The per-turn latency breakdown: a stacked bar per turn (STT, LLM, tools, TTS), the
 * caller's wait as a dot, its p50 and p95 as lines, and labelled axes.
 * @param {TraceTurn[]} turns
 */
export function breakdown(turns) {
  if (turns.length === 0) return h("p", { class: "muted" }, "No traced turns for this call.");
  const wait = (/** @type {TraceTurn} */ t) => (typeof t.user_to_agent_latency_ms === "number" && Number.isFinite(t.user_to_agent_latency_ms) ? t.user_to_agent_latency_ms : null);
  const waits = turns.flatMap((t) => (wait(t) === null ? [] : [/** @type {number} */ (wait(t))]));
  const p50 = percentile(waits, 50);
  const p95 = percentile(waits, 95);
  const p99 = percentile(waits, 99);
  // A bar per turn, or per group of turns when there are more than fit (each group shows
  // its worst turn's share of every step and its longest wait).
  const size = Math.ceil(turns.length / MAX_BARS);
  const bars = [];
  for (let i = 0; i < turns.length; i += size) {
    const group = turns.slice(i, i + size);
    const worst = new Map();
    for (const t of group) for (const [kind, v] of shares(t)) worst.set(kind, Math.max(worst.get(kind) ?? 0, v));
    const longest = group.reduce((most, t) => Math.max(most, wait(t) ?? -1), -1);
    bars.push({ turn: group[0].turn, label: size > 1 ? `${group[0].turn}–${group[group.length - 1].turn}` : String(group[0].turn),
      shares: [...worst], wait: longest < 0 ? null : longest });
  }
  // The scale: up to the tallest bar, but a few absurd values (an agent may send any number)
  // do not flatten the rest: past 1.5 times the 99th percentile, bars are cut at the top.
  const heights = [...bars.map((b) => b.shares.reduce((sum, [, v]) => sum + v, 0)), ...waits];
  const highest = heights.reduce((most, v) => Math.max(most, v), 1);
  const top = Math.min(highest, Math.max(1, /** @type {number} */ (percentile(heights, 99)) * 1.5)) * 1.1;
  const [left, bottom, width, height] = [56, 34, 760, 200];
  const y = (/** @type {number} */ v) => height - (Math.min(Math.max(v, 0), top) / top) * height;
  const step = width / bars.length;
  const root = svg("svg", { viewBox: `0 0 ${left + width + 10} ${height + bottom + 6}`, class: "breakdown", role: "img" });
  root.setAttribute("aria-label", `latency by turn, ${turns.length} turns` + (p50 === null ? "" : `: the caller waited p50 ${p50} ms, p95 ${p95} ms`));
  const plot = svg("g", { transform: `translate(${left}, 4)` });
  root.appendChild(plot);
  // The y axis: 5 ticks in ms, and its label.
  for (let i = 0; i <= 4; i++) {
    const v = (top / 1.1) * (i / 4);
    plot.appendChild(svg("line", { x1: 0, x2: width, y1: y(v).toFixed(1), y2: y(v).toFixed(1), class: "grid" }));
    plot.appendChild(svg("text", { x: -6, y: (y(v) + 4).toFixed(1), class: "tick y" }, String(Math.round(v))));
  }
  plot.appendChild(svg("text", { x: -left + 12, y: height / 2, class: "axis-label", transform: `rotate(-90 ${-left + 12} ${height / 2})` }, "latency (ms)"));
  plot.appendChild(svg("text", { x: width / 2, y: height + bottom - 4, class: "axis-label" }, size > 1 ? `turn (groups of ${size})` : "turn"));
  plot.appendChild(svg("line", { x1: 0, x2: width, y1: height, y2: height, class: "axis" }));
  plot.appendChild(svg("line", { x1: 0, x2: 0, y1: 0, y2: height, class: "axis" }));
  const every = Math.max(1, Math.ceil(bars.length / 20));
  bars.forEach((b, i) => {
    const x = i * step + step * 0.15;
    const w = Math.max(0.5, step * 0.7);
    let base = 0;
    const bar = svg("g", { class: "turn-bar", "data-turn": b.turn });
    for (const [kind, v] of b.shares) {
      if (v <= 0) continue;
      const rect = svg("rect", { x: x.toFixed(1), width: w.toFixed(1), y: y(base + v).toFixed(1), height: (y(base) - y(base + v)).toFixed(1), class: `step ${kind}`, "data-kind": kind, "data-ms": v });
      rect.appendChild(svg("title", {}, `turn ${b.label}: ${label(kind)} ${v} ms`));
      bar.appendChild(rect);
      base += v;
    }
    if (b.wait !== null) {
      const dot = svg("circle", { cx: (x + w / 2).toFixed(1), cy: y(b.wait).toFixed(1), r: 3, class: "wait" });
      dot.appendChild(svg("title", {}, `turn ${b.label}: the caller waited ${b.wait} ms`));
      bar.appendChild(dot);
    }
    plot.appendChild(bar);
    if (i % every === 0) plot.appendChild(svg("text", { x: (x + w / 2).toFixed(1), y: height + 14, class: "tick x" }, String(b.turn)));
  });
  for (const [name, v] of /** @type {[string, number | null][]} */ ([["p50", p50], ["p95", p95]])) {
    if (v === null) continue;
    plot.appendChild(svg("line", { x1: 0, x2: width, y1: y(v).toFixed(1), y2: y(v).toFixed(1), class: `mark ${name}` }));
    plot.appendChild(svg("text", { x: width - 4, y: (y(v) - 3).toFixed(1), class: `mark-label ${name}` }, `${name} ${v} ms`));
  }
  const legend = h("p", { class: "legend" }, ...STEPS.map((s) => h("span", { class: `key ${s.kind}` }, s.label)),
    h("span", { class: "key wait" }, "caller's wait"));
  return h("figure", { class: "latency-breakdown" }, root, legend,
    h("figcaption", {}, `Latency by turn, from the call's traces · ${turns.length} turns`,
      p50 === null ? "" : " · the caller waited ",
      p50 === null ? "" : h("span", { id: "wait-p50" }, `p50 ${p50} ms`), p50 === null ? "" : " · ",
      p95 === null ? "" : h("span", { id: "wait-p95" }, `p95 ${p95} ms`), p99 === null ? "" : " · ",
      p99 === null ? "" : h("span", { id: "wait-p99" }, `p99 ${p99} ms`)));
}
