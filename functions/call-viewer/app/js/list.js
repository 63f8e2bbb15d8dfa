// @ts-check
// The calls list: a workspace's calls, newest first, a page at a time (the list API's
// cursor); filters by agent and start date live in the URL.

import * as api from "./api.js";
import { appLink, content, h, notice } from "./dom.js";
import { duration, when } from "./format.js";

const COLUMNS = ["Provider call id", "Start", "Duration", "Agent", "Status", "Sentiment", "Revision"];

/**
 * The filters in the URL: `agent`, `from` and `to` (dates, `to` included).
 * @param {URL} url
 */
function filtersOf(url) {
  const date = (/** @type {string} */ name) => {
    const v = url.searchParams.get(name) ?? "";
    return /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : "";
  };
  return { agent: url.searchParams.get("agent") ?? "", from: date("from"), to: date("to") };
}

/**
 * The day after `date` (YYYY-MM-DD), at midnight UTC.
 * @param {string} date
 */
function dayAfter(date) {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().replace(".000Z", "Z");
}

/**
 * @param {HTMLElement} root
 * @param {import("./main.js").Context} context
 */
export function showList(root, context) {
  const filters = filtersOf(new URL(location.href));
  const field = (/** @type {string} */ name, /** @type {string} */ label, /** @type {string} */ type, /** @type {string} */ value) =>
    h("label", {}, label, h("input", { name, type, value, id: `filter-${name}` }));
  const form = h(
    "form",
    {
      class: "filters",
      onsubmit: (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        const data = new FormData(/** @type {HTMLFormElement} */ (e.target));
        const q = new URLSearchParams({ workspace: String(context.workspace) });
        for (const name of ["agent", "from", "to"]) {
          const v = String(data.get(name) ?? "").trim();
          if (v) q.set(name, v);
        }
        context.navigate(`/app/calls?${q}`);
      },
    },
    field("agent", "Agent", "text", filters.agent),
    field("from", "Started from", "date", filters.from),
    field("to", "Started to", "date", filters.to),
    h("button", { type: "submit" }, "Filter"),
    appLink(`/app/calls?workspace=${context.workspace}`, { class: "clear" }, "Clear"),
  );
  const body = h("tbody", {});
  const table = h("table", { class: "calls" }, h("thead", {}, h("tr", {}, ...COLUMNS.map((c) => h("th", {}, c)))), body);
  const status = h("div", { class: "list-status" });
  const more = /** @type {HTMLButtonElement} */ (h("button", { type: "button", id: "load-more", hidden: true }, "Load more"));
  root.replaceChildren(h("h1", {}, "Calls"), form, table, status, more);

  /** @type {string | null} */
  let cursor = null;
  let shown = 0;
  const load = async () => {
    more.disabled = true;
    status.replaceChildren(notice("Loading…", "info"));
    try {
      const page = await api.listCalls(context.token, context.workspace, {
        agent: filters.agent,
        from: filters.from ? `${filters.from}T00:00:00Z` : "",
        before: filters.to ? dayAfter(filters.to) : "",
        cursor,
      });
      for (const call of page.calls) body.appendChild(row(context, call));
      shown += page.calls.length;
      cursor = page.next_cursor ?? null;
      status.replaceChildren(shown === 0 ? notice("No calls match.", "info") : h("span", { class: "muted" }, `${shown} calls`));
      more.hidden = cursor === null;
    } catch (e) {
      status.replaceChildren(notice(`Cannot list calls: ${e instanceof Error ? e.message : String(e)}`));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", () => void load());
  void load();
}

/**
 * @param {import("./main.js").Context} context
 * @param {any} call
 */
function row(context, call) {
  const id = Number(call.id);
  return h(
    "tr",
    { "data-id": id },
    h("td", {}, appLink(`/app/calls/${id}?workspace=${context.workspace}`, { class: "c" }, String(call.provider_call_id ?? id))),
    h("td", {}, when(call.started_at)),
    h("td", { class: "num" }, duration(call.duration_ms)),
    h("td", {}, content(call.agent_remote_identifier)),
    h("td", {}, content(call.call_status)),
    h("td", {}, content(call.user_sentiment)),
    h("td", { class: "num" }, String(call.revision ?? "")),
  );
}
