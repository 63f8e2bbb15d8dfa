// @ts-check
// Where the app and the API are: beside this file's `/app/assets/…`, under the API
// Gateway stage's prefix if the URL has one (`/prod/app/…` → `/prod`).

export const BASE = new URL(import.meta.url).pathname.replace(/\/app\/assets\/.*$/, "");

/**
 * The URL path of an app page given as `/app/…`.
 * @param {string} path
 */
export function appPath(path) {
  return `${BASE}${path}`;
}
