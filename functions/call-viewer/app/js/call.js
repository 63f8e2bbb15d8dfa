// @ts-check
// A call's page: its header, the recording synced with the timeline, the latency chart,
// analysis, variables and metadata, revisions with what each changed, the raw body, and
// Erase for a credential that may erase.

import * as api from "./api.js";
import { appLink, audio, content, facts, fill, h, json, link, notice } from "./dom.js";
import { diff } from "./diff.js";
import { cost, duration, when } from "./format.js";
import { chart } from "./latency.js";
import { policyLine } from "./redactions.js";
import { itemsOf, timeline, wordAt } from "./timeline.js";
import { attach, breakdown, span } from "./waterfall.js";

/** Changes shown for a revision; the rest are counted. */
const MAX_CHANGES = 500;

/**
 * @param {HTMLElement} root
 * @param {import("./main.js").Context} context
 * @param {number} id
 */
export async function showCall(root, context, id) {
  const back = appLink(`/app/calls?workspace=${context.workspace}`, { class: "back" }, "← Calls");
  root.replaceChildren(back, notice("Loading the call…", "info"));
  let call;
  // The call's traces, read alongside: a call without any (or a reader that cannot) shows
  // its page without them.
  const traced = api.callTrace(context.token, context.workspace, id).catch(() => null);
  try {
    call = await api.getCall(context.token, context.workspace, id);
  } catch (e) {
    const status = e instanceof api.ApiError ? e.status : 0;
    root.replaceChildren(back, notice(status === 404 ? "No such call in this workspace." : `Cannot read the call: ${String(e)}`));
    return;
  }
  const doc = call.document ?? {};
  const body = doc.call ?? {};
  const summary = doc.summary ?? {};
  const { items, wordStarts } = itemsOf(body.transcript_with_tool_calls);

  const recordingUrl = body.recording_multi_channel_url ?? body.recording_url;
  const player = audio(recordingUrl) ?? audio(body.recording_url);
  const view = timeline(items, (ms) => {
    if (player) player.currentTime = ms / 1000;
  });
  // The traces come when they come: the page does not wait for them.
  const breakdownSlot = h("div", { class: "trace-slot" });
  void traced.then((answer) => {
    try {
      const turns = Array.isArray(answer?.turns) ? answer.turns.filter((/** @type {unknown} */ t) => t && typeof t === "object") : [];
      if (turns.length === 0) return;
      const over = span(turns);
      for (const [index, turn] of attach(items, turns)) Object.assign(items[index], { trace: turn, over });
      breakdownSlot.replaceChildren(breakdown(turns));
      view.redraw();
    } catch (e) {
      breakdownSlot.replaceChildren(notice(`The call's traces cannot be shown: ${String(e)}`, "info"));
    }
  });
  if (player) {
    let frame = 0;
    const follow = () => {
      view.highlight(wordAt(wordStarts, player.currentTime * 1000));
      frame = player.paused ? 0 : requestAnimationFrame(follow);
    };
    player.addEventListener("play", () => { frame = frame || requestAnimationFrame(follow); });
    player.addEventListener("seeked", follow);
    player.addEventListener("pause", follow);
    // A host that refuses, a format the browser cannot play, or an http: URL on an https:
    // page (the policy plays https: only): say so, and keep the link.
    player.addEventListener("error", () => {
      player.parentElement?.after(notice("The recording cannot be played here; its link is above.", "info"));
    }, { once: true });
  }
  const length = Number(summary.duration_ms) || items.reduce((most, i) => Math.max(most, i.kind === "turn" ? i.end ?? i.start : i.start), 0);
  const points = /** @type {[number, number][]} */ (items
    .filter((i) => i.kind === "turn" && typeof i.metadata?.e2e_latency === "number")
    .map((i) => [i.start, /** @type {any} */ (i).metadata.e2e_latency]));

  // Normalisation merges `metadata` into `general_meta_data_raw`.
  const models = body.general_meta_data_raw?.ai_models ?? body.metadata?.ai_models;
  fill(
    root,
    back,
    h("h1", {}, "Call ", content(call.provider_call_id)),
    facts([
      ["Id", String(call.id)],
      ["Provider call id", content(call.provider_call_id)],
      ["Agent", content(call.agent_remote_identifier)],
      ["Provider", body.provider === undefined ? null : content(body.provider)],
      ["Type", content(body.call_type)],
      ["Started", when(summary.start_ms ?? body.start_timestamp)],
      ["Ended", when(summary.end_ms ?? body.end_timestamp)],
      ["Duration", duration(summary.duration_ms ?? body.duration_ms)],
      ["Status", body.call_status === undefined ? null : content(body.call_status)],
      ["Disconnection", body.disconnection_reason === undefined ? null : content(body.disconnection_reason)],
      ["Sentiment", body.user_sentiment === undefined ? null : content(body.user_sentiment)],
      ["Cost", cost(body.call_cost)],
      ["Models", models && typeof models === "object" ? content(Object.entries(models).map(([k, v]) => `${k} ${String(v)}`).join(" · ")) : null],
      ["Revision", `${call.revision} (${call.operation ?? doc.operation ?? ""})`],
      ["Data policy", policyLine(doc)],
      ["Recording", body.recording_url === undefined ? null : link(body.recording_url, { id: "recording-link" })],
    ]),
    player ? h("div", { class: "player" }, player)
      : notice(doc.data_policy?.storage === "metadata_only" ? "No recording link: this call was kept as metadata only."
        : "No playable recording (only http and https URLs play).", "info"),
    chart(points, length),
    breakdownSlot,
    h("h2", {}, `Timeline · ${items.length} items`),
    view.element,
    section("Analysis", () => json(body.call_analysis ?? null)),
    section("Variables", () => json(body.collected_dynamic_variables ?? null)),
    section("Metadata", () => json({ metadata: body.metadata ?? null, general_meta_data_raw: body.general_meta_data_raw ?? null })),
    section("Revisions", () => revisions(context, id)),
    h("p", {}, h("button", { type: "button", id: "download-raw",
      onclick: (/** @type {Event} */ e) => void download(context, id, call.revision, /** @type {HTMLButtonElement} */ (e.currentTarget)) },
    "Download the raw body")),
    context.me.scopes.includes("erase") ? eraser(context, id) : null,
  );
  performance.mark("call-first-screen");
}

/**
 * A closed section whose content is made when it is first opened.
 * @param {string} title
 * @param {() => Node} make
 */
function section(title, make) {
  const el = /** @type {HTMLDetailsElement} */ (h("details", { class: "section", id: `section-${title.toLowerCase()}` }, h("summary", {}, title)));
  el.addEventListener("toggle", () => {
    if (el.open && el.childElementCount === 1) el.appendChild(make());
  });
  return el;
}

/**
 * The revisions: pick one and see what changed from the one before.
 * @param {import("./main.js").Context} context
 * @param {number} id
 */
function revisions(context, id) {
  const out = h("div", {}, notice("Loading revisions…", "info"));
  const changes = h("div", { id: "revision-diff" });
  void (async () => {
    try {
      const list = await api.revisions(context.token, context.workspace, id);
      const pick = /** @type {HTMLSelectElement} */ (h("select", { id: "revision-pick", "aria-label": "Revision" },
        h("option", { value: "" }, "Pick a revision…")));
      for (const r of list.revisions) {
        pick.appendChild(h("option", { value: r.revision }, `revision ${r.revision} · ${when(r.received_at)} · ${String(r.operation ?? "")}`));
      }
      // Only the last pick's answer is shown, whichever comes back first.
      let asked = 0;
      pick.addEventListener("change", () => {
        const mine = ++asked;
        void showChanges(context, id, Number(pick.value), changes, () => mine === asked);
      });
      out.replaceChildren(pick, changes);
    } catch (e) {
      out.replaceChildren(notice(`Cannot list revisions: ${String(e)}`));
    }
  })();
  return out;
}

/**
 * @param {import("./main.js").Context} context
 * @param {number} id
 * @param {number} n
 * @param {HTMLElement} out
 * @param {() => boolean} current whether this is still the revision asked for
 */
async function showChanges(context, id, n, out, current) {
  if (!n) return out.replaceChildren();
  out.replaceChildren(notice("Comparing…", "info"));
  try {
    const after = await api.getCall(context.token, context.workspace, id, n);
    const before = n > 1 ? await api.getCall(context.token, context.workspace, id, n - 1) : null;
    if (!current()) return;
    const { shown, total } = diff(before === null ? undefined : before.document, after.document, MAX_CHANGES);
    const title = before ? `What revision ${n} changed from revision ${n - 1}: ${total} values` : `Revision ${n} is the first: every value is new`;
    const rows = h("tbody", {});
    for (const c of shown) {
      rows.appendChild(h("tr", { class: c.op },
        h("td", {}, c.op), h("td", { class: "c path" }, c.path), h("td", { class: "c before" }, c.before ?? ""), h("td", { class: "c after" }, c.after ?? "")));
    }
    fill(
      out,
      h("p", {}, title),
      h("table", { class: "diff" }, rows),
      total > shown.length ? h("p", { class: "muted" }, `and ${total - shown.length} more`) : null,
    );
  } catch (e) {
    if (current()) out.replaceChildren(notice(`Cannot compare: ${String(e)}`));
  }
}

/**
 * Saves a revision's raw body as a file.
 * @param {import("./main.js").Context} context
 * @param {number} id
 * @param {number} revision
 * @param {HTMLButtonElement} button
 */
async function download(context, id, revision, button) {
  let blob;
  try {
    button.disabled = true;
    blob = await api.raw(context.token, context.workspace, id, revision);
  } catch (e) {
    button.after(notice(`Cannot download the raw body: ${String(e)}`));
    return;
  } finally {
    button.disabled = false;
  }
  const url = URL.createObjectURL(blob);
  const a = h("a", { download: `call-${id}-revision-${revision}.json` });
  a.setAttribute("href", url);
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * Erase, asked twice.
 * @param {import("./main.js").Context} context
 * @param {number} id
 */
function eraser(context, id) {
  const box = h("div", { class: "erase" });
  const ask = () => box.replaceChildren(
    h("span", {}, "Erase this call, every revision and its raw bodies? This cannot be undone. "),
    h("button", { type: "button", id: "erase-confirm", class: "danger", onclick: () => void erase() }, "Erase for good"),
    h("button", { type: "button", onclick: idle }, "Keep it"),
  );
  const idle = () => box.replaceChildren(h("button", { type: "button", id: "erase", class: "danger", onclick: ask }, "Erase…"));
  const erase = async () => {
    try {
      await api.erase(context.token, context.workspace, id);
      context.navigate(`/app/calls?workspace=${context.workspace}`);
    } catch (e) {
      box.replaceChildren(notice(`Cannot erase: ${String(e)}`));
    }
  };
  idle();
  return box;
}
