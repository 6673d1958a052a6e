import { cancelRecord } from "../approvals/approval-request.js";
import { changeReceipts, disarmDeadlines, rejectAsker } from "./approval-release.js";
import { storeWithReceipts } from "./approval-receipts.js";
import type { CancelCause } from "./pause-settlement.js";
import type { ProcessRunner } from "./process-runner.js";

/**
 * Cancels, on the record, every pending approval request of an agent
 * removed for good (`cause`: despawned, stopped, out of restarts, a clean
 * exit), decided by `by` (its supervisor): each is stored `cancelled` with
 * its `approval.decided` receipt (decision `cancelled`) written ahead, shown
 * as `approval.changed`, and its asker, if one still waits, is rejected with
 * `APPROVAL_DENIED` (outcome `cancelled`). `onApprovalDenied` does not run:
 * the agent is gone. Runs after the agent stopped and before its state is
 * closed to writes; never rejects (a request that cannot be stored
 * cancelled is logged and stays pending in the store).
 * @internal
 */
export async function cancelApprovalsOnRemoval(r: ProcessRunner, cause: CancelCause, by: string): Promise<void> {
  const gate = r.gate;
  const services = r.services;
  if (gate === undefined || services === undefined) return;
  disarmDeadlines(gate);
  const reason = `'${r.agent.name}' was removed for good (${cause}); its held action will not run`;
  let cancelled = 0;
  for (const record of [...gate.records.values()]) {
    if (record.status !== "pending") continue;
    const next = cancelRecord(record, services.clock.now(), by, reason);
    try {
      await storeWithReceipts(gate, next, changeReceipts(gate, record, next));
    } catch (error) {
      services.logger.error(`'${r.agent.name}' was removed for good, but the cancellation of its approval request ${record.approvalId} could not be stored; it stays pending in the store (a new agent of that name restores it)`, { error });
      continue;
    }
    cancelled++;
    services.approvals.report(next);
    rejectAsker(gate, next);
  }
  // No later write of this agent would drop the receipts appended above from its record: one more does.
  if (cancelled > 0 && gate.receipts.size === 0) {
    await r.persist().catch((error: unknown) => services.logger.warn(`'${r.agent.name}' could not store its cancelled approval requests without their appended receipts; a new agent of that name appends them again (counted once)`, { error }));
  }
}
