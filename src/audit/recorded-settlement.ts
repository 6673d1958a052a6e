import { settles, type AuditEvent } from "./audit-event.js";
import { hashRow, macEquals, macOf, type AuditRow } from "./audit-row.js";

/**
 * The settlement of the pause `suspensionId` of `agent` among `rows` (the
 * rows of a chained log), as an event; `undefined` when none. A row must
 * match its hash; one
 * signed under the sink's own `keyId` counts only when its mac is the HMAC of
 * its hash under `key`: a decision must not be taken from a row nobody with
 * the key wrote. @internal
 */
export function settlementAmong(rows: readonly AuditRow[], agent: string, suspensionId: string, keyId: string, key: Uint8Array): AuditEvent | undefined {
  for (const row of rows) {
    if (!settles(row, agent, suspensionId) || hashRow(row) !== row.hash) continue;
    if (row.keyId === keyId && !macEquals(macOf(row.hash, key), row.mac)) continue;
    return { event: row.event, ts: row.ts, agent: row.agent, signerId: row.signerId, details: row.details };
  }
  return undefined;
}
