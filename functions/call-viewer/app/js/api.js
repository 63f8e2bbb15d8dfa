// @ts-check
// The public API, as the person's credential may use it. Same origin: the page and the API
// are one API Gateway. A 429 is waited out (its Retry-After) a few times; an answer too
// large to send whole (406) is read in the byte ranges the API serves, asked in the query
// (`bytes=`): with a `Range` header the browser would not take them gzip-compressed.

import { BASE as ROOT } from "./paths.js";

const BASE = `${ROOT}/api/v1/public`;
const RETRIES_ON_429 = 5;

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * @param {string} token
 * @param {string} path
 * @param {{method?: string, headers?: Record<string, string>}} [options]
 * @returns {Promise<Response>}
 */
async function send(token, path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(path, {
      method: options.method ?? "GET",
      headers: { Authorization: `Bearer ${token}`, ...options.headers },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    if (response.status !== 429 || attempt >= RETRIES_ON_429) return response;
    const wait = Math.min(Number(response.headers.get("retry-after")) || 1, 10);
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

/**
 * The problem an answer carries, as an error.
 * @param {Response} response
 */
async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const problem = await response.json();
    message = String(problem.detail ?? problem.message ?? problem.title ?? message);
  } catch {
    // not a problem document: the status says it
  }
  return new ApiError(response.status, message);
}

/**
 * @param {string} token
 * @param {string} path
 * @param {{method?: string}} [options]
 */
async function jsonOf(token, path, options) {
  const response = await send(token, path, options);
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * The whole answer's bytes, in byte ranges joined: each part is up to 12 MiB of the answer,
 * gzip-compressed (which the browser undoes), so every call but the largest comes in one
 * part, and none is read twice to learn it is too large for one answer (406). `path` has a
 * query.
 * @param {string} token
 * @param {string} path
 * @returns {Promise<Uint8Array<ArrayBuffer>>}
 */
async function bytesOf(token, path) {
  /** @type {Uint8Array<ArrayBuffer>[]} */
  let parts = [];
  let from = 0;
  let length = Infinity;
  /** @type {string | null} */
  let etag = null;
  for (let restarts = 0; from < length; ) {
    const part = await send(token, `${path}&bytes=${from}-`);
    // The call changed between parts (a new revision, perhaps shorter than where we are):
    // read it again from the start.
    const tag = part.headers.get("etag");
    if (from > 0 && (part.status === 416 || (part.status === 206 && tag !== etag))) {
      if (++restarts > 3) throw new ApiError(409, "the call keeps changing while it is read");
      [parts, from, length, etag] = [[], 0, Infinity, null];
      continue;
    }
    if (part.status !== 206) throw await failure(part);
    const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(part.headers.get("content-range") ?? "");
    if (!range || Number(range[1]) !== from) throw new ApiError(206, "unexpected Content-Range");
    etag = tag;
    const bytes = new Uint8Array(await part.arrayBuffer());
    if (bytes.length !== Number(range[2]) - from + 1) throw new ApiError(206, "a part is not as long as its Content-Range");
    parts.push(bytes);
    from = Number(range[2]) + 1;
    length = Number(range[3]);
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
}

/**
 * @param {Record<string, string | number | null | undefined>} params
 */
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, String(v));
  return q.toString();
}

/**
 * Who the credential is.
 * @param {string} token
 * @returns {Promise<import("./session.js").Me>}
 */
export function me(token) {
  return jsonOf(token, `${BASE}/me`);
}

/**
 * One page of a workspace's calls, newest first.
 * @param {string} token
 * @param {number} workspace
 * @param {{agent?: string, from?: string, before?: string, cursor?: string | null}} filters
 */
export function listCalls(token, workspace, filters) {
  const q = query({
    workspace_id: workspace,
    agent_remote_identifier: filters.agent,
    started_from: filters.from,
    started_before: filters.before,
    limit: 50,
    cursor: filters.cursor,
  });
  return jsonOf(token, `${BASE}/calls?${q}`);
}

/**
 * A call (or one revision of it) with its normalised document.
 * @param {string} token
 * @param {number} workspace
 * @param {number} id
 * @param {number} [revision]
 */
export async function getCall(token, workspace, id, revision) {
  const path = revision === undefined ? `${BASE}/call/${id}` : `${BASE}/call/${id}/revisions/${revision}`;
  const bytes = await bytesOf(token, `${path}?${query({ workspace_id: workspace })}`);
  return JSON.parse(new TextDecoder().decode(bytes));
}

/**
 * @param {string} token
 * @param {number} workspace
 * @param {number} id
 */
export async function callTrace(token, workspace, id) {
  return jsonOf(token, `${BASE}/call/${id}/trace?${query({ workspace_id: workspace })}`);
}

/**
 * @param {string} token
 * @param {number} workspace
 * @param {number} id
 */
export function revisions(token, workspace, id) {
  return jsonOf(token, `${BASE}/call/${id}/revisions?${query({ workspace_id: workspace })}`);
}

/**
 * A revision's body as it was received.
 * @param {string} token
 * @param {number} workspace
 * @param {number} id
 * @param {number} revision
 */
export async function raw(token, workspace, id, revision) {
  const bytes = await bytesOf(token, `${BASE}/call/${id}/raw?${query({ workspace_id: workspace, revision })}`);
  return new Blob([bytes], { type: "application/json" });
}

/**
 * @param {string} token
 * @param {number} workspace
 * @param {number} id
 */
export function erase(token, workspace, id) {
  return jsonOf(token, `${BASE}/call/${id}?${query({ workspace_id: workspace })}`, { method: "DELETE" });
}
