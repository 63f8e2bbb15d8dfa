// @ts-check
// Per-turn latencies (from each turn's metadata) as badges with thresholds, and a small
// chart of end-to-end latency across the call with its p50 and p95.

import { h, svg } from "./dom.js";

/** Each metric: its label and the thresholds (ms) under which it is good, then fair. */
export const METRICS = [
  { key: "e2e_latency", label: "e2e", good: 1000, fair: 2000 },
  { key: "llm_node_ttft", label: "LLM TTFT", good: 500, fair: 1000 },
  { key: "tts_node_ttfb", label: "TTS TTFB", good: 250, fair: 500 },
  { key: "stt_node_ttfb", label: "STT", good: 300, fair: 600 },
];

/**
 * The badges of a turn's metadata, each showing the stored number as it is.
 * @param {any} metadata
 */
export function badges(metadata) {
  const out = [];
  for (const m of METRICS) {
    const v = metadata?.[m.key];
    if (typeof v !== "number" || !Number.isFinite(v)) continue;
    const grade = v <= m.good ? "good" : v <= m.fair ? "fair" : "slow";
    out.push(
      h("span", { class: `badge ${grade}`, "data-metric": m.key, title: `${m.label}: ${grade} (≤${m.good} ms good, ≤${m.fair} ms fair)` },
        `${m.label} `, h("b", { class: "value" }, String(v)), " ms"),
    );
  }
  return out;
}

/**
 * The nearest-rank percentile `p` (0–100) of `values`, or null when there are none.
 * @param {number[]} values
 * @param {number} p
 */
export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}


/**
 * The chart of `points` ([offset ms, e2e ms]) over a call of `length` ms.
 * @param {[number, number][]} points
 * @param {number} length
 */
export function chart(points, length) {
  const values = points.map((p) => p[1]);
  const p50 = percentile(values, 50);
  const p95 = percentile(values, 95);
  if (p50 === null || p95 === null) return h("p", { class: "muted" }, "No per-turn latencies in this call.");
  const width = 800;
  const height = 120;
  const top = values.reduce((most, v) => Math.max(most, v), 1) * 1.1;
  const x = (/** @type {number} */ t) => ((t / Math.max(length, 1)) * width).toFixed(1);
  const y = (/** @type {number} */ v) => (height - (v / top) * height).toFixed(1);
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img" });
  root.setAttribute("aria-label", `end-to-end latency per turn: p50 ${p50} ms, p95 ${p95} ms`);
  root.appendChild(svg("polyline", { points: points.map(([t, v]) => `${x(t)},${y(v)}`).join(" "), class: "line" }));
  for (const [name, v] of /** @type {[string, number][]} */ ([["p50", p50], ["p95", p95]])) {
    root.appendChild(svg("line", { x1: 0, x2: width, y1: y(v), y2: y(v), class: `mark ${name}` }));
  }
  return h(
    "figure",
    { class: "latency" },
    root,
    h("figcaption", {}, "End-to-end latency per agent turn · ",
      h("span", { id: "p50" }, `p50 ${p50} ms`), " · ", h("span", { id: "p95" }, `p95 ${p95} ms`), ` · ${values.length} turns`),
  );
}
