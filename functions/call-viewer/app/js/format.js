// @ts-check
// Times, durations and money as the viewer shows them. Times are UTC.

/**
 * `m:ss` (or `h:mm:ss`) of milliseconds.
 * @param {unknown} ms
 */
export function duration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  const s = Math.round(ms / 1000);
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return hh > 0 ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

/**
 * A place in the call: `m:ss.s`.
 * @param {number} ms
 */
export function offset(ms) {
  const tenths = Math.floor(Math.max(0, ms) / 100);
  const m = Math.floor(tenths / 600);
  const s = ((tenths % 600) / 10).toFixed(1).padStart(4, "0");
  return `${m}:${s}`;
}

/**
 * `YYYY-MM-DD HH:MM:SS UTC` of an RFC 3339 string or milliseconds since 1970.
 * @param {unknown} value
 */
export function when(value) {
  if (typeof value !== "string" && typeof value !== "number") return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * A call's cost, stored in cents.
 * @param {unknown} cents
 */
export function cost(cents) {
  if (typeof cents !== "number" || !Number.isFinite(cents)) return "";
  return `$${(cents / 100).toFixed(cents >= 100 || cents === 0 ? 2 : 4)} (${cents}¢)`;
}
