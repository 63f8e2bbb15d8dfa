// @ts-check
// The credential, kept in this tab's sessionStorage only: never in a URL, a cookie or a
// log. Closing the tab or signing out forgets it.

const CREDENTIAL = "call-ingest.credential";
const WHO = "call-ingest.me";

/**
 * What `GET /api/v1/public/me` says of a credential.
 * @typedef {{kind: string, public_id?: string, workspaces: number[], scopes: string[], data_policies?: {workspace_id: number, policy: {storage: string} | null}[]}} Me
 */

/** @typedef {{token: string, me: Me}} Session */

/** @returns {Session | null} */
export function current() {
  const token = sessionStorage.getItem(CREDENTIAL);
  const who = sessionStorage.getItem(WHO);
  if (!token || !who) return null;
  try {
    return { token, me: /** @type {Me} */ (JSON.parse(who)) };
  } catch {
    return null;
  }
}

/**
 * @param {string} token
 * @param {Me} me
 */
export function remember(token, me) {
  sessionStorage.setItem(CREDENTIAL, token);
  sessionStorage.setItem(WHO, JSON.stringify(me));
}

export function forget() {
  sessionStorage.clear();
}
