import { open, type FileHandle } from "node:fs/promises";
import { AuditCorruptError, AuditUnreadableError } from "./audit-errors.js";
import { walkAuditLog } from "./verify-audit-log.js";

/** The outcome of {@link repairAuditLog}. */
export interface RepairResult {
  /** `true` when a torn final line was removed. */
  repaired: boolean;
  /** How many bytes were removed (0 when nothing was repaired). */
  removedBytes: number;
}

/**
 * Removes a torn final line (a row cut short by a crash: bytes after the last
 * newline that can only be the start of a row) and nothing else. A no-op
 * when the log does not end in one.
 *
 * The removed fragment is covered by no hash, so the repaired log is exactly
 * the log as it was before the interrupted append. Every complete row is
 * checked first (shape, `seq`, `prev` and `hash`; MACs need the key and are
 * left to `verifyAuditLog`): damage anywhere but the tail is corruption, and
 * the log is left untouched. Nothing calls this automatically.
 *
 * Do not run it while a sink is writing to the same file.
 *
 * @example
 * ```ts
 * const { repaired, removedBytes } = await repairAuditLog("./audit.jsonl");
 * ```
 * @throws (rejects) `AUDIT_CORRUPT` when a complete row is damaged or the
 *   final bytes are not a torn row; `AUDIT_UNREADABLE` ({@link AuditUnreadableError})
 *   when the file cannot be opened or read (missing, a directory, no
 *   permission); the I/O error when the truncation fails.
 */
export async function repairAuditLog(path: string): Promise<RepairResult> {
  let handle: FileHandle;
  let bytes: Buffer;
  try {
    handle = await open(path, "r+");
  } catch (error) {
    throw new AuditUnreadableError(path, "open for repair", error);
  }
  try {
    try {
      bytes = await handle.readFile();
    } catch (error) {
      throw new AuditUnreadableError(path, "read", error);
    }
    const walk = walkAuditLog(bytes, null);
    if (walk.brokenAt !== undefined) {
      throw new AuditCorruptError(
        path,
        `the audit log '${path}' is damaged at line ${walk.brokenAt} (${walk.reason ?? "unknown"}); only a torn final line can be repaired, so nothing was changed`,
        { index: walk.brokenAt },
      );
    }
    if (!walk.tornTail) return { repaired: false, removedBytes: 0 };
    await handle.truncate(walk.tailStart);
    await handle.sync();
    return { repaired: true, removedBytes: bytes.length - walk.tailStart };
  } finally {
    await handle.close();
  }
}
