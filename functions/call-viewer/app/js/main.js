// @ts-check
// The viewer's entry: signs in, then routes `/app/calls` (the list) and `/app/calls/{id}`
// (a call) in the browser. The URL holds the workspace and filters, never the credential,
// so a view can be shared and opens for whoever signs in.

import * as api from "./api.js";
import { h, notice } from "./dom.js";
import { showCall } from "./call.js";
import { showList } from "./list.js";
import { appPath, BASE } from "./paths.js";
import * as session from "./session.js";

const root = /** @type {HTMLElement} */ (document.getElementById("app"));
const who = /** @type {HTMLElement} */ (document.getElementById("who"));
const signOut = /** @type {HTMLButtonElement} */ (document.getElementById("sign-out"));

/**
 * What a page needs: the credential, who it is, and the workspace in view.
 * @typedef {{token: string, me: import("./session.js").Me, workspace: number, navigate: (path: string) => void}} Context
 */

/** @param {string} path */
function navigate(path) {
  history.pushState(null, "", appPath(path));
  void route();
}

async function route() {
  const signedIn = session.current();
  signOut.hidden = signedIn === null;
  if (signedIn === null) {
    who.replaceChildren();
    return showSignIn();
  }
  const url = new URL(location.href);
  const asked = Number(url.searchParams.get("workspace"));
  const workspace = signedIn.me.workspaces.includes(asked) ? asked : signedIn.me.workspaces[0];
  /** @type {Context} */
  const context = { ...signedIn, workspace, navigate };
  who.replaceChildren(whoIsIt(context));
  const call = /^\/app\/calls\/(\d+)$/.exec(url.pathname.slice(BASE.length));
  if (call) return showCall(root, context, Number(call[1]));
  return showList(root, context);
}

/** @param {Context} context */
function whoIsIt(context) {
  const name = context.me.public_id ? `key ${context.me.public_id}` : "session";
  const scopes = context.me.scopes.join(", ");
  // The workspace's data policy, when it keeps less than everything (README, "Data policies").
  const storage = context.me.data_policies?.find((p) => p.workspace_id === context.workspace)?.policy?.storage;
  const policy = storage && storage !== "everything" ? h("span", { class: "redacted policy", title: "this workspace's data policy" }, storage.replace("_", " ")) : null;
  if (context.me.workspaces.length < 2) return h("span", {}, `${name} · workspace ${context.workspace} · ${scopes} `, policy);
  const pick = h(
    "select",
    {
      "aria-label": "Workspace",
      onchange: (/** @type {Event} */ e) =>
        navigate(`/app/calls?workspace=${/** @type {HTMLSelectElement} */ (e.target).value}`),
    },
    ...context.me.workspaces.map((w) => h("option", { value: w, selected: w === context.workspace }, `workspace ${w}`)),
  );
  return h("span", {}, `${name} · `, pick, ` · ${scopes} `, policy);
}

function showSignIn() {
  const input = /** @type {HTMLInputElement} */ (
    h("input", { id: "credential", type: "password", autocomplete: "off", spellcheck: "false", required: true })
  );
  const message = h("div", { id: "sign-in-message" });
  const form = h(
    "form",
    { class: "sign-in", onsubmit: (/** @type {SubmitEvent} */ e) => void signIn(e, input, message) },
    h("h1", {}, "Sign in"),
    h("p", {}, "An API key with the read scope (cik_…) or a session token (cis_…). It stays in this tab only."),
    h("label", { for: "credential" }, "Credential"),
    input,
    h("button", { type: "submit" }, "Sign in"),
    message,
  );
  root.replaceChildren(form);
  input.focus();
}

/**
 * @param {SubmitEvent} event
 * @param {HTMLInputElement} input
 * @param {HTMLElement} message
 */
async function signIn(event, input, message) {
  event.preventDefault();
  const token = input.value.trim();
  message.replaceChildren(notice("Checking…", "info"));
  try {
    const me = await api.me(token);
    if (!me.scopes.includes("read")) {
      message.replaceChildren(
        notice(`This key may ${me.scopes.join(", ") || "do nothing"}, not read calls. Sign in with a key made with --scope read.`),
      );
      return;
    }
    session.remember(token, me);
    input.value = "";
    await route();
  } catch (e) {
    const status = e instanceof api.ApiError ? e.status : 0;
    message.replaceChildren(
      notice(status === 401 ? "This credential is not valid: unknown, revoked or expired." : `Cannot sign in: ${String(e)}`),
    );
  }
}

signOut.addEventListener("click", () => {
  session.forget();
  history.pushState(null, "", appPath(`/app/calls${location.search}`));
  void route();
});

// Links of the app change the page without reloading it.
document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target.closest("a[data-route]") : null;
  if (!target || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  history.pushState(null, "", /** @type {HTMLAnchorElement} */ (target).href);
  void route();
});
window.addEventListener("popstate", () => void route());
void route();
