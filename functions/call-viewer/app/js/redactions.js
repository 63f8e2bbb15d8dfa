// @ts-check
// Values a workspace's data policy replaced before the call was stored (`[PHONE_NUMBER]`,
// `[EMAIL]`…): shown as such, styled with their kind, never as if the caller said them.

import { h } from "./dom.js";

/** The kinds the service replaces, and how a person reads them. */
const KINDS = /** @type {Record<string, string>} */ ({
  PHONE_NUMBER: "phone number",
  EMAIL: "e-mail",
  CREDIT_CARD: "card number",
  SSN: "social security number",
  IBAN: "IBAN",
  DATE_OF_BIRTH: "date of birth",
  PERSON_NAME: "name",
  ADDRESS: "address",
});
const PLACEHOLDER = /\[(PHONE_NUMBER|EMAIL|CREDIT_CARD|SSN|IBAN|DATE_OF_BIRTH|PERSON_NAME|ADDRESS)\]/g;

/**
 * `text` cut into its plain pieces and its placeholders (`kind` set: the placeholder's, as
 * the document names it, and how a person reads it).
 * @param {string} text
 * @returns {{text: string, kind: string | null, label: string}[]}
 */
export function redactedPieces(text) {
  /** @type {{text: string, kind: string | null, label: string}[]} */
  const out = [];
  let at = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    const index = /** @type {number} */ (m.index);
    if (index > at) out.push({ text: text.slice(at, index), kind: null, label: "" });
    out.push({ text: m[0], kind: m[1].toLowerCase(), label: KINDS[m[1]] ?? m[1] });
    at = index + m[0].length;
  }
  if (at < text.length || out.length === 0) out.push({ text: text.slice(at), kind: null, label: "" });
  return out;
}

/**
 * `text` for the page: each placeholder a pill naming its kind.
 * @param {string} text
 * @returns {(string | Node)[]}
 */
export function withRedactions(text) {
  return redactedPieces(text).map((p) => p.kind === null ? p.text
    : h("span", { class: "redacted", "data-kind": p.kind, title: `${p.label}, redacted before it was stored` }, p.label));
}

/**
 * What a call's data policy kept, in a line for its header; null for `everything`.
 * @param {any} doc the stored document
 * @returns {string | null}
 */
export function policyLine(doc) {
  const policy = doc?.data_policy;
  if (!policy || typeof policy.storage !== "string") return null;
  if (policy.storage === "redacted") {
    const n = Array.isArray(doc.redactions) ? doc.redactions.length : 0;
    const kinds = Array.isArray(policy.pii_entities) ? policy.pii_entities.join(", ") : "";
    const model = doc.redaction?.model === "aws_comprehend" ? " · names and addresses found by AWS Comprehend"
      : doc.redaction?.model === "unavailable" ? " · the model was unavailable: rules alone"
      : doc.redaction?.model === "nothing_to_read" ? " · no turns for the model to read" : "";
    return `redacted (${kinds}) · ${n} stretch${n === 1 ? "" : "es"} of audio said a value replaced${model}`;
  }
  if (policy.storage === "metadata_only") {
    const c = doc.counts ?? {};
    return `metadata only · ${c.segments ?? 0} segments, ${c.user_turns ?? 0} caller and ${c.agent_turns ?? 0} agent turns, ${c.tool_calls ?? 0} tool calls, ${c.words ?? 0} words were not kept`;
  }
  return String(policy.storage);
}
