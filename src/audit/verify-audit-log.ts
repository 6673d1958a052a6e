import { AuditKeyMissingError } from "./audit-errors.js";
import { auditLogBytes, sourceLabel, type AuditLogSource } from "./audit-source.js";
import { GENESIS_PREV, hashRow, isParseFailure, isTornRow, keyBytes, macEquals, macOf, parseRowLine, type AuditRow } from "./audit-row.js";

/**
 * Keys for verifying an audit log. `keys` maps a row's `keyId` to its key
 * (for logs written across a key rotation); `key` is used for every `keyId`
 * that `keys` does not name. When neither is given, the
 * `CIVITAS_AUDIT_KEY` environment variable is used as `key`.
 */
export interface VerifyOptions {
  /** The key for every `keyId` not named in `keys`. */
  key?: string | Uint8Array;
  /** Keys by `keyId`, for logs signed under several keys. */
  keys?: Record<string, string | Uint8Array>;
}

/**
 * The outcome of {@link verifyAuditLog}.
 *
 * `reason` starts with a stable kind, then a colon and an explanation:
 * `malformed`, `noncanonical`, `seq-mismatch`, `prev-mismatch`,
 * `hash-mismatch`, `unknown-key`, `mac-mismatch`, `garbage-tail`.
 */
export interface AuditLogVerification {
  /** `true` when every complete row verified (a torn final line does not count against it). */
  ok: boolean;
  /** The number of rows that verified: all complete rows when `ok`, else `brokenAt`. */
  rows: number;
  /** The 0-based line index of the first row that failed. */
  brokenAt?: number;
  /** Why that row failed: `"<kind>: <explanation>"`. */
  reason?: string;
  /** `true` when the file ends with a torn line (a row cut short by a crash) that readers ignore. */
  tornTail: boolean;
}

/** What {@link walkAuditLog} found. @internal */
export interface AuditLogWalk {
  /** The rows that verified, in order. */
  rows: AuditRow[];
  /** Byte offset just after each verified row's newline. */
  ends: number[];
  brokenAt?: number;
  reason?: string;
  tornTail: boolean;
  /** Byte offset where the torn fragment starts (= file length when there is none). */
  tailStart: number;
}

/** Resolves the key of a `keyId`, or `undefined` when none is known; `null` skips MAC checks. */
export type KeyResolver = ((keyId: string) => Uint8Array | undefined) | null;

/** Builds a {@link KeyResolver} from {@link VerifyOptions}. @internal */
export function keyResolver(path: string, options: VerifyOptions | undefined): (keyId: string) => Uint8Array | undefined {
  const fallback = keyBytes(options?.key) ?? (options?.keys === undefined ? keyBytes(process.env.CIVITAS_AUDIT_KEY) : undefined);
  const byId = new Map<string, Uint8Array>();
  for (const [id, key] of Object.entries(options?.keys ?? {})) {
    const bytes = keyBytes(key);
    if (bytes !== undefined) byId.set(id, bytes);
  }
  if (fallback === undefined && byId.size === 0) {
    throw new AuditKeyMissingError(
      path,
      `verifying the audit log '${path}' needs its HMAC key, got none; pass { key } or { keys: { <keyId>: key } }, or set CIVITAS_AUDIT_KEY`,
    );
  }
  return (keyId) => byId.get(keyId) ?? fallback;
}

/**
 * Walks the bytes of a log and checks every complete row: shape, canonical
 * spelling, `seq`, `prev`, `hash` and (unless `keyFor` is `null`) `mac`.
 * Stops at the first failure. @internal
 */
export function walkAuditLog(bytes: Buffer, keyFor: KeyResolver): AuditLogWalk {
  const rows: AuditRow[] = [];
  const ends: number[] = [];
  let prev = GENESIS_PREV;
  let start = 0;
  const fail = (reason: string): AuditLogWalk => ({ rows, ends, brokenAt: rows.length, reason, tornTail: false, tailStart: bytes.length });
  for (;;) {
    const nl = bytes.indexOf(0x0a, start);
    if (nl === -1) break;
    const index = rows.length;
    const parsed = parseRowLine(bytes.subarray(start, nl));
    if (isParseFailure(parsed)) return fail(`${parsed.kind}: line ${index}: ${parsed.message}`);
    if (parsed.seq !== index) {
      return fail(`seq-mismatch: line ${index} holds seq ${parsed.seq}; a row was deleted, inserted or moved`);
    }
    if (parsed.prev !== prev) {
      return fail(`prev-mismatch: row ${index}'s prev does not equal the hash of row ${index - 1}; the chain was cut or rows were swapped`);
    }
    if (hashRow(parsed) !== parsed.hash) {
      return fail(`hash-mismatch: row ${index}'s hash does not match its contents; the row was edited`);
    }
    if (keyFor !== null) {
      const key = keyFor(parsed.keyId);
      if (key === undefined) return fail(`unknown-key: row ${index} is signed under keyId '${parsed.keyId}', for which no key was given`);
      if (!macEquals(macOf(parsed.hash, key), parsed.mac)) {
        return fail(`mac-mismatch: row ${index}'s mac is not the HMAC of its hash under keyId '${parsed.keyId}'; the row was re-signed with another key, or the key is wrong`);
      }
    }
    rows.push(parsed);
    ends.push(nl + 1);
    prev = parsed.hash;
    start = nl + 1;
  }
  if (start === bytes.length) return { rows, ends, tornTail: false, tailStart: bytes.length };
  const fragment = bytes.subarray(start);
  if (isTornRow(fragment)) return { rows, ends, tornTail: true, tailStart: start };
  return fail(`garbage-tail: the ${fragment.length} bytes after row ${rows.length - 1} are neither a row nor a row cut short by a crash`);
}

/**
 * Verifies a {@link JsonlAuditSink} log offline: every row's shape, its
 * position (`seq`), its link to the previous row (`prev`), its `hash`, and its
 * `mac` under the key of its `keyId`. An edited, dropped, reordered or
 * re-signed row breaks the chain at its index. A torn final line (a row cut
 * short by a crash) is ignored and reported as `tornTail: true`.
 *
 * `path` may also be the log's bytes, or its rows (`await postgresAuditSink.rows()`).
 *
 * What it cannot see: rows cut off the end together with their newlines (compare
 * `rows` with a count kept elsewhere, or let `verifySuspension` check the
 * anchors the state store keeps), and anything done by someone who holds the key.
 *
 * @example
 * ```ts
 * const result = await verifyAuditLog("./audit.jsonl", { key: process.env.CIVITAS_AUDIT_KEY! });
 * if (!result.ok) console.error(`broken at row ${result.brokenAt}: ${result.reason}`);
 * ```
 * @throws (rejects) `AUDIT_UNREADABLE` (`AuditUnreadableError`) when the file cannot be
 *   read (missing, a directory, no permission; the file-system error is the `cause`), or
 *   `AUDIT_KEY_MISSING` when no key is given. A damaged log resolves with `ok: false`.
 */
export async function verifyAuditLog(path: AuditLogSource, options: VerifyOptions): Promise<AuditLogVerification> {
  const keyFor = keyResolver(sourceLabel(path), options);
  const bytes = await auditLogBytes(path);
  return summarize(walkAuditLog(bytes, keyFor));
}

/** The public summary of a walk. @internal */
export function summarize(walk: AuditLogWalk): AuditLogVerification {
  const result: AuditLogVerification = { ok: walk.brokenAt === undefined, rows: walk.rows.length, tornTail: walk.tornTail };
  if (walk.brokenAt !== undefined) result.brokenAt = walk.brokenAt;
  if (walk.reason !== undefined) result.reason = walk.reason;
  return result;
}
