import { readFile } from "node:fs/promises";
import { AuditUnreadableError } from "./audit-errors.js";

/**
 * The bytes of the audit log at `path`.
 * @throws (rejects) {@link AuditUnreadableError} (`AUDIT_UNREADABLE`) when it cannot be read, the file-system error as `cause`
 * @internal
 */
export async function readAuditFile(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new AuditUnreadableError(path, "read", error);
  }
}
