// @ts-check
// The call as a timeline: user and agent turns with their words, node transitions as
// dividers, tool calls as cards (a call joined with its result by request id), latency
// badges. Virtualised: the timeline is cut into blocks, and only the blocks near the
// screen hold elements (a 25 MB call has tens of thousands of turns). Words know their
// time: clicking one seeks the recording, and the word being played is highlighted.

import { append, content, h, json } from "./dom.js";
import { offset } from "./format.js";
import { badges } from "./latency.js";
import { withRedactions } from "./redactions.js";
import { waterfall } from "./waterfall.js";

/** Roles with a style of their own; any other role (content says it) is styled as `other`. */
const ROLES = new Set(["user", "agent"]);
/** Items per block. */
const BLOCK = 40;
/** A block's height before it is first drawn, per item (px). */
const GUESS_PX = 72;

/**
 * @typedef {{kind: "turn", role: string, text: string, start: number, end: number | null, words: {text: string, start: number, end: number}[], firstWord: number, metadata: any, trace?: import("./waterfall.js").TraceTurn, over?: [number, number]}} Turn
 * @typedef {{kind: "node", from: string, to: string, reason: unknown, start: number}} Node
 * @typedef {{kind: "tool", name: string, requestId: unknown, params: unknown, result: unknown, error: boolean, start: number, end: number | null, hasResult: boolean}} Tool
 * @typedef {Turn | Node | Tool} Item
 */

/**
 * @param {unknown} v
 * @returns {number | null}
 */
function num(v) {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/**
 * The timeline's items from a document's segments, and every word's start (ms), in order.
 * @param {any[]} segments
 */
export function itemsOf(segments) {
  /** @type {Item[]} */
  const items = [];
  /** @type {Map<string, Tool>} */
  const tools = new Map();
  /** @type {number[]} */
  const wordStarts = [];
  /** @type {number[]} */
  const wordItems = [];
  for (const s of Array.isArray(segments) ? segments : []) {
    const start = num(s?.start_ms) ?? num(s?.tool?.start_ms) ?? 0;
    if (s?.role === "node_transition") {
      items.push({ kind: "node", from: String(s.node?.from ?? ""), to: String(s.node?.to ?? ""), reason: s.node?.reason, start });
    } else if (s?.role === "agent_function" || s?.role === "agent_result") {
      const tool = s.tool ?? {};
      const key = tool.request_id === undefined ? null : JSON.stringify(tool.request_id);
      let card = key === null ? undefined : tools.get(key);
      if (!card || (s.role === "agent_function" && card.params !== undefined)) {
        card = { kind: "tool", name: String(tool.name ?? "tool"), requestId: tool.request_id, params: undefined, result: undefined,
          error: false, start, end: null, hasResult: false };
        items.push(card);
        if (key !== null) tools.set(key, card);
      }
      if (s.role === "agent_function") {
        card.params = tool.params ?? tool.arguments ?? null;
        card.start = num(tool.start_ms) ?? start;
      } else {
        card.result = tool.result ?? tool.error ?? null;
        card.error = tool.is_error === true || tool.error !== undefined;
        card.end = num(tool.end_ms) ?? start;
        card.hasResult = true;
      }
    } else {
      const words = (Array.isArray(s?.words) ? s.words : [])
        .filter((/** @type {any} */ w) => num(w?.start_ms) !== null)
        .map((/** @type {any} */ w) => ({ text: String(w.word ?? ""), start: /** @type {number} */ (w.start_ms), end: num(w.end_ms) ?? w.start_ms }));
      const turn = /** @type {Turn} */ ({ kind: "turn", role: String(s?.role ?? ""), text: String(s?.text ?? ""), start,
        end: num(s?.end_ms), words, firstWord: wordStarts.length, metadata: s?.metadata ?? {} });
      for (const w of words) {
        wordStarts.push(w.start);
        wordItems.push(items.length);
      }
      items.push(turn);
    }
  }
  return { items, wordStarts, wordItems };
}

/**
 * @param {Item} item
 * @param {number} index
 */
function draw(item, index) {
  if (item.kind === "node") {
    return h("div", { class: "node", role: "separator", "data-item": index },
      h("span", { class: "at" }, offset(item.start)), " node ", content(item.from), " → ", content(item.to),
      item.reason === undefined ? null : h("span", { class: "muted" }, " · ", content(item.reason)));
  }
  if (item.kind === "tool") {
    const took = item.end === null ? null : item.end - item.start;
    return h("details", { class: `tool${item.error ? " error" : ""}`, "data-item": index },
      h("summary", {}, h("span", { class: "at", "data-t": item.start }, offset(item.start)), " tool ",
        h("b", { class: "tool-name c" }, item.name),
        took === null ? null : h("span", { class: "took" }, ` ${took} ms`),
        item.hasResult ? (item.error ? h("span", { class: "badge slow" }, "error") : null) : h("span", { class: "muted" }, " no result")),
      h("div", { class: "tool-body" },
        h("h4", {}, "Parameters"), json(item.params ?? null),
        h("h4", {}, item.error ? "Error" : "Result"), item.hasResult ? json(item.result) : h("p", { class: "muted" }, "none received")));
  }
  const words = h("p", { class: "words c" });
  const pieces = aligned(item.text, item.words);
  if (pieces) {
    // The text as sent (case and punctuation), its words where the timings found them.
    for (const p of pieces) {
      append(words, p.word === null ? withRedactions(p.text) : [h("span", { class: "w", "data-w": item.firstWord + p.word, "data-t": item.words[p.word].start }, ...withRedactions(p.text))]);
    }
  } else if (item.words.length) {
    item.words.forEach((w, i) => append(words, [h("span", { class: "w", "data-w": item.firstWord + i, "data-t": w.start }, ...withRedactions(w.text)), " "]));
  } else {
    append(words, withRedactions(item.text));
  }
  return h("div", { class: `turn ${ROLES.has(item.role) ? item.role : "other"}`, "data-item": index },
    h("div", { class: "turn-head" },
      h("span", { class: "at", "data-t": item.start, title: "play from here" }, offset(item.start)),
      h("span", { class: "role c" }, item.role),
      item.end === null ? null : h("span", { class: "muted" }, ` – ${offset(item.end)}`),
      ...badges(item.metadata),
      item.metadata?.interrupted === true ? h("span", { class: "badge fair" }, "interrupted") : null),
    words,
    item.trace && item.over ? waterfall(item.trace, item.over) : null);
}

/** Letters and digits of a word, lower-case: what a word and its place in the text share. */
function bare(/** @type {string} */ word) {
  return word.normalize("NFKD").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
}

/** How far ahead in the text a word is looked for (words the text spells otherwise are skipped). */
const LOOKAHEAD = 32;

/**
 * The turn's text cut into pieces, each word with timings (its index) on the token of the
 * text it is, in order; or null when the text has no words or most of them are not found
 * (then the words are shown as they are). Linear in the text and the words.
 * @param {string} text
 * @param {{text: string}[]} words
 * @returns {{text: string, word: number | null}[] | null}
 */
export function aligned(text, words) {
  if (!text || words.length === 0) return null;
  const tokens = [...text.matchAll(/\S+/gu)].map((m) => ({ at: /** @type {number} */ (m.index), end: /** @type {number} */ (m.index) + m[0].length, key: bare(m[0]) }));
  /** @type {(number | null)[]} */
  const owner = tokens.map(() => null);
  let next = 0;
  let found = 0;
  let spoken = 0;
  words.forEach((w, i) => {
    const key = bare(w.text);
    if (!key) return;
    spoken++;
    for (let k = next; k < Math.min(tokens.length, next + LOOKAHEAD); k++) {
      if (tokens[k].key === key) {
        owner[k] = i;
        next = k + 1;
        found++;
        return;
      }
    }
  });
  if (found * 2 < spoken || found === 0) return null;
  /** @type {{text: string, word: number | null}[]} */
  const out = [];
  let at = 0;
  tokens.forEach((t, k) => {
    const i = owner[k];
    if (i === null) return;
    if (t.at > at) out.push({ text: text.slice(at, t.at), word: null });
    out.push({ text: text.slice(t.at, t.end), word: i });
    at = t.end;
  });
  if (at < text.length) out.push({ text: text.slice(at), word: null });
  return out;
}

/**
 * The timeline element for `items`, drawing blocks as they come near the screen.
 * @param {Item[]} items
 * @param {(ms: number) => void} seek
 */
export function timeline(items, seek) {
  const root = h("section", { class: "timeline", "aria-label": "Timeline" });
  /** @type {Map<number, HTMLElement>} */
  const drawnWords = new Map();
  let current = -1;
  /**
   * Draws block `block`, holding items from `first`.
   * @param {HTMLElement} block
   * @param {number} first
   */
  const fillBlock = (block, first) => {
    block.replaceChildren(...items.slice(first, first + BLOCK).map((item, i) => draw(item, first + i)));
    block.style.height = "";
    block.dataset.drawn = "1";
    for (const w of block.querySelectorAll("[data-w]")) drawnWords.set(Number(/** @type {HTMLElement} */ (w).dataset.w), /** @type {HTMLElement} */ (w));
    drawnWords.get(current)?.classList.add("now");
  };
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const block = /** @type {HTMLElement} */ (entry.target);
      const first = Number(block.dataset.first);
      if (entry.isIntersecting && block.dataset.drawn !== "1") {
        fillBlock(block, first);
      } else if (!entry.isIntersecting && block.dataset.drawn === "1") {
        block.style.height = `${block.offsetHeight}px`;
        for (const w of block.querySelectorAll("[data-w]")) drawnWords.delete(Number(/** @type {HTMLElement} */ (w).dataset.w));
        block.replaceChildren();
        block.dataset.drawn = "0";
      }
    }
  }, { rootMargin: "1500px 0px" });
  for (let first = 0; first < items.length; first += BLOCK) {
    const block = h("div", { class: "block", "data-first": first });
    block.style.height = `${Math.min(BLOCK, items.length - first) * GUESS_PX}px`;
    root.appendChild(block);
    observer.observe(block);
  }
  root.addEventListener("click", (event) => {
    const at = event.target instanceof Element ? event.target.closest("[data-t]") : null;
    if (at) seek(Number(/** @type {HTMLElement} */ (at).dataset.t));
  });
  return {
    element: root,
    /** Draws again the blocks on screen (items gained their traces). */
    redraw() {
      for (const block of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll(".block[data-drawn='1']"))) {
        fillBlock(block, Number(block.dataset.first));
      }
    },
    /**
     * Highlights word `index` (-1: none).
     * @param {number} index
     */
    highlight(index) {
      if (index === current) return;
      drawnWords.get(current)?.classList.remove("now");
      current = index;
      drawnWords.get(current)?.classList.add("now");
    },
  };
}

/**
 * The index of the last word starting at or before `ms`, or -1.
 * @param {number[]} starts
 * @param {number} ms
 */
export function wordAt(starts, ms) {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
