// @ts-check
// What changed between two normalised documents: every leaf by its JSON pointer, added,
// removed or changed. One walk over both trees; a pointer is spelled out only for a
// change that is shown, so time stays linear in the documents' size whatever their keys.

/**
 * @typedef {{op: "added" | "removed" | "changed", path: string, before?: string, after?: string}} Change
 * @typedef {{parent: Chain | null, key: string}} Chain
 */

/** @param {unknown} v */
function container(v) {
  return v !== null && typeof v === "object";
}

/**
 * A leaf's text (an empty array or object is a leaf too), or null for a container with
 * members.
 * @param {unknown} v
 * @returns {string | null}
 */
function leaf(v) {
  if (!container(v)) return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return v.length === 0 ? "[]" : null;
  for (const _ in /** @type {object} */ (v)) return null;
  return "{}";
}

/**
 * @param {Chain | null} chain
 * @param {string} key
 * @returns {Chain}
 */
function child(chain, key) {
  return { parent: chain, key: key.replaceAll("~", "~0").replaceAll("/", "~1") };
}

/** @param {Chain | null} chain */
function pointer(chain) {
  /** @type {string[]} */
  const keys = [];
  for (let c = chain; c !== null; c = c.parent) keys.push(c.key);
  return keys.reverse().map((k) => `/${k}`).join("");
}

/**
 * The changes from `before` to `after` (undefined: absent), in `after`'s order (an
 * object's keys as JavaScript orders them), each container's removed members after its
 * other members; a value whose kind changed is removed, then added. An empty container
 * that gains members only has them added (and one that loses them, removed). The first
 * `most`, and how many in all.
 * @param {unknown} before
 * @param {unknown} after
 * @param {number} most
 * @returns {{shown: Change[], total: number}}
 */
export function diff(before, after, most) {
  /** @type {Change[]} */
  const shown = [];
  let total = 0;
  /**
   * @param {Change["op"]} op
   * @param {Chain | null} chain
   * @param {string | undefined} b
   * @param {string | undefined} a
   */
  const record = (op, chain, b, a) => {
    total += 1;
    if (shown.length < most) shown.push({ op, path: pointer(chain), before: b, after: a });
  };
  /**
   * Every leaf of `v`, as added or removed.
   * @param {unknown} v
   * @param {Chain | null} chain
   * @param {"added" | "removed"} op
   */
  const every = (v, chain, op) => {
    const l = leaf(v);
    if (l !== null) return op === "added" ? record(op, chain, undefined, l) : record(op, chain, l, undefined);
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(/** @type {object} */ (v));
    for (const [k, x] of entries) every(x, child(chain, k), op);
  };
  /**
   * @param {unknown} b
   * @param {unknown} a
   * @param {Chain | null} chain
   */
  const walk = (b, a, chain) => {
    if (b === undefined) return a === undefined ? undefined : every(a, chain, "added");
    if (a === undefined) return every(b, chain, "removed");
    const lb = leaf(b);
    const la = leaf(a);
    if (lb !== null && la !== null) {
      if (lb !== la) record("changed", chain, lb, la);
      return;
    }
    const sameKind = Array.isArray(a) === Array.isArray(b) && container(a) && container(b);
    if (sameKind && lb !== null) return every(a, chain, "added");
    if (sameKind && la !== null) return every(b, chain, "removed");
    if (lb !== null || la !== null || !sameKind) {
      every(b, chain, "removed");
      return every(a, chain, "added");
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) walk(b[i], a[i], child(chain, String(i)));
      return;
    }
    const ob = /** @type {Record<string, unknown>} */ (b);
    const oa = /** @type {Record<string, unknown>} */ (a);
    for (const [k, x] of Object.entries(oa)) walk(Object.hasOwn(ob, k) ? ob[k] : undefined, x, child(chain, k));
    for (const [k, x] of Object.entries(ob)) if (!Object.hasOwn(oa, k)) walk(x, undefined, child(chain, k));
  };
  walk(before, after, null);
  return { shown, total };
}
