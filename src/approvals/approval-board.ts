import type { ApprovalRecord } from "./approval-request.js";
import { viewOf } from "./approval-request.js";
import type { ApprovalListFilter, ApprovalView } from "./approval-types.js";

/** Where one agent keeps its records: what the board reads them through. @internal */
export interface ApprovalHolder {
  readonly agentName: string;
  record(approvalId: string): ApprovalRecord | undefined;
}

/**
 * The runtime-wide index of approval requests: which agent of this runtime
 * holds each id. The records stay with their agent (in its state); the board
 * only finds them, by exact id (a lookalike id finds nothing).
 * @internal
 */
export class ApprovalBoard {
  private readonly holders = new Map<string, ApprovalHolder>();
  /** Told of every change (`approval.changed`); never throws. */
  constructor(private readonly changed: (view: ApprovalView) => void) {}

  add(approvalId: string, holder: ApprovalHolder): void {
    this.holders.set(approvalId, holder);
  }

  remove(approvalId: string): void {
    this.holders.delete(approvalId);
  }

  /** The agent holding `approvalId`, if this runtime knows it. */
  holderOf(approvalId: string): ApprovalHolder | undefined {
    return this.holders.get(approvalId);
  }

  /** The view of `approvalId`, or `undefined`. */
  get(approvalId: string): ApprovalView | undefined {
    const record = this.holders.get(approvalId)?.record(approvalId);
    return record === undefined ? undefined : viewOf(record);
  }

  /** Every request matching `filter`, oldest first (ids are UUIDv7: time-ordered). */
  list(filter: ApprovalListFilter): ApprovalView[] {
    const views: ApprovalView[] = [];
    for (const [id, holder] of this.holders) {
      if (filter.agent !== undefined && holder.agentName !== filter.agent) continue;
      const record = holder.record(id);
      if (record === undefined || (filter.status !== undefined && record.status !== filter.status)) continue;
      views.push(viewOf(record));
    }
    return views.sort((a, b) => (a.approvalId < b.approvalId ? -1 : a.approvalId > b.approvalId ? 1 : 0));
  }

  /** Reports a change of `record` as `approval.changed`. */
  report(record: ApprovalRecord): void {
    this.changed(viewOf(record));
  }
}
