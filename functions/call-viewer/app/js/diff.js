// @ts-check
// What changed between two normalised documents: every leaf by its JSON pointer, added,
// removed or changed. Linear in the documents' size.

/**
 * @typedef {{op: "added" | "removed" | "changed", path: string, before?: string, after?: string}} Change
 */

/**
 * @param {unknown} value
 * @param {string} path
 * @param {Map<string, string>} out
 */
function flatten(value, path, out) {
  if (Array.isArray(value)) {
    if (value.length === 0) out.set(path, "[]");
    value.forEach((v, i) => flatten(v, `${path}/${i}`, out));
  } else if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 0) out.set(path, "{}");
    for (const [k, v] of entries) flatten(v, `${path}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`, out);
  } else {
    out.set(path, JSON.stringify(value));
  }
}

/**
 * The changes from `before` to `after`, in the order of `after`'s leaves, then removals.
 * @param {unknown} before
 * @param {unknown} after
 * @returns {Change[]}
 */
export function diff(before, after) {
  const a = new Map();
  const b = new Map();
  flatten(before, "", a);
  flatten(after, "", b);
  /** @type {Change[]} */
  const changes = [];
  for (const [path, value] of b) {
    if (!a.has(path)) changes.push({ op: "added", path, after: value });
    else if (a.get(path) !== value) changes.push({ op: "changed", path, before: a.get(path), after: value });
  }
  for (const [path, value] of a) if (!b.has(path)) changes.push({ op: "removed", path, before: value });
  return changes;
}
