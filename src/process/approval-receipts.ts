import type { ApprovalRecord } from "../approvals/approval-request.js";
import type { ApprovalVote } from "../approvals/approval-types.js";
import { receiptFor, type PendingReceipt, type ReceiptEvent } from "../approvals/pending-receipts.js";
import { uuidv7 } from "../message/ids.js";
import type { ApprovalGate } from "./approval-gate.js";

// Approval receipts are written ahead: each is stored with the record whose change it
// records (under APPROVALS_KEY, in the same atomic write), appended to the audit log after
// that write, and left out of the next write once appended. A kill between the write and
// the append leaves it in the store; the restore appends it again (restoreApprovals).

/** A new receipt of `event` for `record` (as it stands after the change), at `at` (see `receiptFor` for `vote` and `handled`). @internal */
export function newReceipt(gate: ApprovalGate, record: ApprovalRecord, event: ReceiptEvent, at: string, vote?: ApprovalVote, handled?: boolean): PendingReceipt {
  const receipt = receiptFor(record, event, uuidv7(gate.runner.requireServices().clock.now()), at, vote, handled);
  if (receipt === undefined) throw new Error(`internal: approval ${record.approvalId} does not show the change its ${event} receipt records`);
  return receipt;
}

/**
 * Stores `next` in place of its earlier record, with `receipts` written
 * ahead beside it (one write of the agent's state), then appends every
 * receipt still owed. When the write fails, memory goes back to the earlier
 * record and the receipts are dropped (nothing happened), and this rejects.
 * @internal
 */
export async function storeWithReceipts(gate: ApprovalGate, next: ApprovalRecord, receipts: readonly PendingReceipt[]): Promise<void> {
  const id = next.approvalId;
  const before = gate.records.get(id);
  gate.records.set(id, next);
  if (receipts.length > 0) gate.receipts.set(id, [...(gate.receipts.get(id) ?? []), ...receipts]);
  try {
    await gate.runner.persist();
  } catch (error) {
    if (before !== undefined) gate.records.set(id, before);
    else gate.records.delete(id);
    withoutReceipts(gate, id, receipts);
    throw error;
  }
  await appendReceipts(gate);
}

/**
 * Appends the receipts the agent still owes, oldest first per request, one
 * run at a time (a run asked for while one is going runs after it). A
 * receipt the sink refused stays owed, and so do the later ones of its
 * request (their order is kept); the next run, or the next restore, tries
 * again. Never rejects.
 * @internal
 */
export function appendReceipts(gate: ApprovalGate): Promise<void> {
  if (gate.receipts.size === 0 && gate.appending === undefined) return Promise.resolve();
  const run = (gate.appending ?? Promise.resolve()).then(() => appendOwed(gate));
  gate.appending = run;
  void run.then(() => {
    if (gate.appending === run) gate.appending = undefined;
  });
  return run;
}

async function appendOwed(gate: ApprovalGate): Promise<void> {
  const services = gate.runner.services;
  if (services === undefined) return;
  const agent = gate.runner.agent.name;
  for (const id of [...gate.receipts.keys()]) {
    for (;;) {
      const receipt = gate.receipts.get(id)?.[0];
      if (receipt === undefined) break;
      if (!(await services.telemetry.audit(receipt.event, agent, receipt.details))) break;
      withoutReceipts(gate, id, [receipt]);
    }
  }
}

function withoutReceipts(gate: ApprovalGate, id: string, gone: readonly PendingReceipt[]): void {
  const left = (gate.receipts.get(id) ?? []).filter((receipt) => !gone.includes(receipt));
  if (left.length === 0) gate.receipts.delete(id);
  else gate.receipts.set(id, left);
}
