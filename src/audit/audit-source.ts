import type { JsonObject } from "../message/json.js";
import { canonicalJson, type AuditRow } from "./audit-row.js";
import { readAuditFile } from "./read-audit-file.js";

/**
 * What the offline verifiers read: the path of a JSONL log, its bytes, or
 * the rows themselves (`await postgresAuditSink.rows()`).
 */
export type AuditLogSource = string | Uint8Array | readonly AuditRow[];

/** How a message names `source`: its path, or what it is. @internal */
export function sourceLabel(source: AuditLogSource): string {
  if (typeof source === "string") return source;
  return source instanceof Uint8Array ? "(log bytes)" : "(audit rows)";
}

/**
 * The bytes of `source` as a JSONL log: a file's contents, or each row's
 * canonical line (a value that is not a row becomes a line the verifier
 * reports as malformed).
 * @throws (rejects) `AUDIT_UNREADABLE` when a file cannot be read.
 * @internal
 */
export async function auditLogBytes(source: AuditLogSource): Promise<Buffer> {
  if (typeof source === "string") return readAuditFile(source);
  if (source instanceof Uint8Array) return Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  const lines = source.map((row) => {
    try {
      return `${canonicalJson(row as unknown as JsonObject)}\n`;
    } catch {
      return "null\n";
    }
  });
  return Buffer.from(lines.join(""), "utf8");
}
