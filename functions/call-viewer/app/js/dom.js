// @ts-check
import { appPath } from "./paths.js";

// Building the page. Call content only ever becomes text nodes and attribute values set
// here; the page refuses HTML from strings altogether (Trusted Types, `trusted-types
// 'none'` in the Content-Security-Policy, and the lint rules).

/** @typedef {Node | string | number | null | undefined | false} Child */
/** @typedef {Record<string, string | number | boolean | null | undefined | ((event: any) => void)>} Attrs */

/** Attributes that take a URL: set only through `link` and `media`, which check it. */
const URL_ATTRIBUTES = new Set(["href", "src", "srcset", "action", "formaction", "poster", "style"]);

/**
 * An element with attributes (`on…` take a listener) and children (strings become text).
 * @param {string} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttributes(el, attrs);
  append(el, children);
  return el;
}

/**
 * @param {Element} el
 * @param {Attrs} attrs
 */
function setAttributes(el, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      if (!name.startsWith("on")) throw new Error(`listener for ${name}`);
      el.addEventListener(name.slice(2), value);
    } else if (name.startsWith("on") || URL_ATTRIBUTES.has(name)) {
      throw new Error(`attribute ${name} is set through link() or media()`);
    } else if (name === "class") {
      el.setAttribute("class", String(value));
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

const SVG = "http://www.w3.org/2000/svg";

/**
 * An SVG element, its attributes checked as `h` checks them, holding `text` if any (as text).
 * @param {string} tag
 * @param {Attrs} [attrs]
 * @param {string} [text]
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}, text) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG, tag));
  setAttributes(el, attrs);
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * Appends children; strings and numbers as text.
 * @param {Node} el
 * @param {Child[]} children
 */
export function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/**
 * Replaces `el`'s children.
 * @param {Element} el
 * @param {...Child} children
 */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/**
 * A URL of the web (`http:` or `https:`), absolute; anything else (`javascript:`, `data:`,
 * relative, unparsable) is null.
 * @param {unknown} value
 * @returns {string | null}
 */
export function webUrl(value) {
  if (typeof value !== "string") return null;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/**
 * A link to a page of the app (`/app/…`), followed without reloading.
 * @param {string} path
 * @param {Attrs} attrs
 * @param {...Child} children
 */
export function appLink(path, attrs, ...children) {
  if (!path.startsWith("/app/")) throw new Error(`not an app path: ${path}`);
  const a = h("a", { ...attrs, "data-route": true }, ...children);
  a.setAttribute("href", appPath(path));
  return a;
}

/**
 * A link out, when `url` is a web URL; else its text, not a link.
 * @param {unknown} url
 * @param {Attrs} [attrs]
 */
export function link(url, attrs = {}) {
  const href = webUrl(url);
  if (href === null) return h("span", { ...attrs, class: "c unsafe", title: "not an http(s) URL" }, String(url ?? ""));
  const a = h("a", { ...attrs, class: "c", rel: "noopener noreferrer", target: "_blank" }, href);
  a.setAttribute("href", href);
  return a;
}

/**
 * An <audio> of `url` when it is a web URL, else null.
 * @param {unknown} url
 * @returns {HTMLAudioElement | null}
 */
export function audio(url) {
  const src = webUrl(url);
  if (src === null) return null;
  const el = /** @type {HTMLAudioElement} */ (h("audio", { controls: true, preload: "metadata" }));
  el.setAttribute("src", src);
  return el;
}

/**
 * Call content as text, isolated from the text around it (a bidi override inside stays
 * inside).
 * @param {unknown} value
 * @param {string} [tag]
 */
export function content(value, tag = "span") {
  return h(tag, { class: "c" }, value === null || value === undefined ? "" : String(value));
}

/**
 * A value as indented JSON text.
 * @param {unknown} value
 */
export function json(value) {
  return h("pre", { class: "json c" }, JSON.stringify(value, null, 2) ?? "null");
}

/**
 * A `<dl>` of label and value pairs; pairs without a value are left out.
 * @param {[string, Child][]} pairs
 */
export function facts(pairs) {
  const dl = h("dl", { class: "facts" });
  for (const [label, value] of pairs) {
    if (value === null || value === undefined || value === "" || value === false) continue;
    append(dl, [h("dt", {}, label), h("dd", {}, value)]);
  }
  return dl;
}

/**
 * @param {string} message
 * @param {string} [kind]
 */
export function notice(message, kind = "error") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, message);
}
