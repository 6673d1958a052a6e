import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { findNonJson, type JsonObject, type JsonValue } from "../message/json.js";

/**
 * One line of a {@link JsonlAuditSink} log, as stored.
 *
 * - `seq` counts rows from 0, with no gaps.
 * - `prev` is the previous row's `hash`; the first row's `prev` is
 *   {@link GENESIS_PREV} (64 zeros).
 * - `hash` is the SHA-256 (lower-case hex) of the canonical JSON of the row
 *   without `hash` and `mac`, so it covers `prev` and through it the whole
 *   chain before the row.
 * - `mac` is the HMAC-SHA256 (lower-case hex) of the ASCII `hash` string under
 *   the key named by `keyId`.
 *
 * The line itself is the canonical JSON of the whole row (keys sorted, no
 * whitespace) followed by `\n`; a verifier refuses any other spelling.
 */
export interface AuditRow {
  /** Position in the log, from 0. */
  seq: number;
  /** When the event happened (the event's `ts`), ISO-8601 UTC. */
  ts: string;
  /** The event kind: `agent.suspend`, `agent.resume`, … */
  event: string;
  /** The agent concerned. */
  agent: string;
  /** Who recorded the row. */
  signerId: string;
  /** Names the HMAC key that signed `mac` (for rotation). */
  keyId: string;
  /** Event-specific facts. */
  details: JsonObject;
  /** The previous row's `hash`, or 64 zeros for row 0. */
  prev: string;
  /** SHA-256 hex of the canonical JSON of the row without `hash` and `mac`. */
  hash: string;
  /** HMAC-SHA256 hex of `hash` under the key `keyId`. */
  mac: string;
}

/** The row fields the hash covers. */
export type UnsignedAuditRow = Omit<AuditRow, "hash" | "mac">;

/** `prev` of the first row: 64 zeros. */
export const GENESIS_PREV = "0".repeat(64);

const HEX64 = /^[0-9a-f]{64}$/;
const ROW_KEYS = ["agent", "details", "event", "hash", "keyId", "mac", "prev", "seq", "signerId", "ts"] as const;
/** Every stored line starts with these bytes (keys are sorted, `agent` first). */
export const ROW_PREFIX = Buffer.from('{"agent":"', "utf8");

/**
 * Canonical JSON: object keys sorted by UTF-16 code unit order, no
 * whitespace, strings and numbers as `JSON.stringify` writes them.
 * @throws `TypeError` for a value that is not plain JSON.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`${String(value)} is not a JSON number`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(",")}]`;
  if (typeof value === "object") {
    const keys = Object.keys(value).sort();
    const parts: string[] = [];
    for (const key of keys) {
      const v = value[key];
      if (v === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
    }
    return `{${parts.join(",")}}`;
  }
  throw new TypeError(`${typeof value} is not a JSON value`);
}

/** Returns a JSON-path description of the first non-JSON part of `details`, or `undefined`. */
export function nonJsonDetails(details: unknown): string | undefined {
  const bad = findNonJson(details, "$.details");
  return bad ? `${bad[0]}: ${bad[1]}` : undefined;
}

/** The SHA-256 hex of the canonical JSON of `row` without `hash` and `mac`. */
export function hashRow(row: UnsignedAuditRow): string {
  const unsigned: JsonObject = {
    seq: row.seq,
    ts: row.ts,
    event: row.event,
    agent: row.agent,
    signerId: row.signerId,
    keyId: row.keyId,
    details: row.details,
    prev: row.prev,
  };
  return createHash("sha256").update(canonicalJson(unsigned), "utf8").digest("hex");
}

/** The HMAC-SHA256 hex of the ASCII string `hash` under `key`. */
export function macOf(hash: string, key: Uint8Array): string {
  return createHmac("sha256", key).update(hash, "utf8").digest("hex");
}

/** Compares two hex MACs in constant time. */
export function macEquals(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A key as bytes: strings are UTF-8 encoded. `undefined` for an empty or missing key. */
export function keyBytes(key: string | Uint8Array | undefined): Uint8Array | undefined {
  if (key === undefined) return undefined;
  if (typeof key === "string") return key.length > 0 ? Buffer.from(key, "utf8") : undefined;
  if (key instanceof Uint8Array) return key.length > 0 ? key : undefined;
  return undefined;
}

/** Completes `row` with its hash and mac. */
export function signRow(row: UnsignedAuditRow, key: Uint8Array): AuditRow {
  const hash = hashRow(row);
  return { ...row, hash, mac: macOf(hash, key) };
}

/** The stored bytes of `row`: its canonical JSON and a newline. */
export function encodeRow(row: AuditRow): Buffer {
  return Buffer.from(`${canonicalJson(row as unknown as JsonObject)}\n`, "utf8");
}

/** Why a line is not a well-formed row. */
export interface RowParseFailure {
  kind: "malformed" | "noncanonical";
  message: string;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Parses one stored line (without its `\n`) into a row, checking its shape
 * and that its bytes are exactly the canonical spelling. Does not check the
 * chain, the hash or the mac.
 */
export function parseRowLine(line: Buffer): AuditRow | RowParseFailure {
  let value: unknown;
  try {
    value = JSON.parse(line.toString("utf8"));
  } catch {
    return { kind: "malformed", message: "the line is not valid JSON" };
  }
  if (!isPlainObject(value)) return { kind: "malformed", message: "the line is not a JSON object" };
  const keys = Object.keys(value).sort();
  if (keys.length !== ROW_KEYS.length || keys.some((k, i) => k !== ROW_KEYS[i])) {
    return { kind: "malformed", message: `the row's fields are [${keys.join(", ")}], expected [${ROW_KEYS.join(", ")}]` };
  }
  const { seq, ts, event, agent, signerId, keyId, details, prev, hash, mac } = value;
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0) return { kind: "malformed", message: "seq is not a non-negative integer" };
  for (const [name, field] of [["ts", ts], ["event", event], ["agent", agent], ["signerId", signerId], ["keyId", keyId]] as const) {
    if (typeof field !== "string") return { kind: "malformed", message: `${name} is not a string` };
  }
  for (const [name, field] of [["prev", prev], ["hash", hash], ["mac", mac]] as const) {
    if (typeof field !== "string" || !HEX64.test(field)) return { kind: "malformed", message: `${name} is not 64 lower-case hex digits` };
  }
  if (!isPlainObject(details)) return { kind: "malformed", message: "details is not a JSON object" };
  const row = value as unknown as AuditRow;
  if (!encodeRow(row).subarray(0, -1).equals(line)) {
    return { kind: "noncanonical", message: "the line is not the canonical spelling of its row (bytes were changed)" };
  }
  return row;
}

/** `true` when `value` is a {@link RowParseFailure}. */
export function isParseFailure(value: AuditRow | RowParseFailure): value is RowParseFailure {
  return "kind" in value && !("seq" in value);
}

/**
 * Whether a final fragment (the bytes after the last `\n`, non-empty) can be
 * a row cut short by a crash: a prefix of `{"agent":"…` whose top-level
 * object is not closed before its last byte. A complete row followed by
 * more bytes, or bytes that cannot start a row, are damage, not a torn write.
 */
export function isTornRow(fragment: Buffer): boolean {
  if (fragment.length === 0) return false;
  const head = Math.min(fragment.length, ROW_PREFIX.length);
  if (!fragment.subarray(0, head).equals(ROW_PREFIX.subarray(0, head))) return false;
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < fragment.length; i++) {
    const byte = fragment[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (byte === 0x5c) escaped = true;
      else if (byte === 0x22) inString = false;
      continue;
    }
    if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) depth += 1;
    else if (byte === 0x7d || byte === 0x5d) {
      depth -= 1;
      if (depth <= 0) return depth === 0 && i === fragment.length - 1;
    }
  }
  return true;
}
