import { createHash } from "node:crypto";
import type { JsonValue } from "../message/json.js";

/**
 * The RFC 8785 (JCS) canonical JSON of `value`: object keys sorted by UTF-16
 * code units, no whitespace, numbers and strings as ECMAScript's
 * `JSON.stringify` writes them (which is what JCS specifies). Lone
 * surrogates are refused (I-JSON), as are non-finite numbers.
 * @throws TypeError for a value that is not I-JSON
 */
export function canonicalize(value: JsonValue): string {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "string") return canonicalString(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`${String(value)} is not an I-JSON number`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (typeof value === "object") {
    const parts: string[] = [];
    for (const key of Object.keys(value).sort()) {
      const v = value[key];
      if (v === undefined) continue;
      parts.push(`${canonicalString(key)}:${canonicalize(v)}`);
    }
    return `{${parts.join(",")}}`;
  }
  throw new TypeError(`${typeof value} is not a JSON value`);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function canonicalString(text: string): string {
  if (LONE_SURROGATE.test(text)) throw new TypeError("a string with a lone surrogate is not I-JSON");
  return JSON.stringify(text);
}

/**
 * The digest of a held action (SPEC §12.1): lowercase hex SHA-256 of the
 * canonical JSON of `{ agent, type, payload }`.
 * @example
 * ```ts
 * actionDigest("payments", "pay", { amountCents: 250_000, to: "ACME" });
 * ```
 */
export function actionDigest(agent: string, type: string, payload: object): string {
  return createHash("sha256")
    .update(canonicalize({ agent, type, payload: payload as JsonValue }), "utf8")
    .digest("hex");
}
