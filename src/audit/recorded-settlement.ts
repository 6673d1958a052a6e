import type { AuditEvent } from "./audit-event.js";
import { hashRow, macEquals, macOf, type AuditRow } from "./audit-row.js";
import { effectiveSettlement } from "./owner-fence.js";

/**
 * The settlement of the pause `suspensionId` of `agent` among `rows` (the
 * rows of a chained log), as an event; `undefined` when none. A row must
 * match its hash; one signed under the sink's own `keyId` counts only when
 * its mac is the HMAC of its hash under `key`: a decision must not be taken
 * from a row nobody with the key wrote. A settlement written by an owner
 * fenced out by then (see owner-fence.ts) is not a decision. @internal
 */
export function settlementAmong(rows: readonly AuditRow[], agent: string, suspensionId: string, keyId: string, key: Uint8Array): AuditEvent | undefined {
  const trusted = rows.filter((row) => hashRow(row) === row.hash && (row.keyId !== keyId || macEquals(macOf(row.hash, key), row.mac)));
  const row = effectiveSettlement(trusted, agent, suspensionId);
  return row === undefined ? undefined : { event: row.event, ts: row.ts, agent: row.agent, signerId: row.signerId, details: row.details };
}
