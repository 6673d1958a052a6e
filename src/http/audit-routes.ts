import { auditLogBytes } from "../audit/audit-source.js";
import type { AuditRow } from "../audit/audit-row.js";
import { keyResolver, summarize, walkAuditLog } from "../audit/verify-audit-log.js";
import { verifyApproval, type ApprovalVerificationStatus } from "../audit/verify-approval.js";
import { verifySuspension, type SuspensionRecord } from "../audit/verify-suspension.js";
import { AuditRecordNotFoundError } from "./http-errors.js";
import type { InboxAuditOptions } from "./inbox-options.js";
import { limitParam } from "./paging.js";
import { route, type Route } from "./route.js";

/** The events that settle a pause. */
const SETTLING = new Set(["agent.resume", "agent.deny", "agent.suspend.cancelled"]);

/** One decided (or open) pause in the history, with its offline verification. */
export interface PauseHistoryEntry extends SuspensionRecord {
  readonly kind: "pause";
  readonly agent: string;
  /** The reason the decider gave (a denial's), when the settling receipt records one. */
  readonly decisionReason?: string;
}

/** One decided approval request in the history, with its offline verification (`verifyApproval`). */
export interface ApprovalHistoryEntry {
  readonly kind: "approval";
  readonly agent: string;
  readonly approvalId: string;
  /** The held message's type. */
  readonly type?: string;
  readonly decision: string;
  readonly decidedBy: string;
  readonly decisionReason?: string;
  /** When it was decided (the `approval.decided` row's `ts`). */
  readonly settledAt: string;
  readonly status: ApprovalVerificationStatus;
}

function configured(audit: InboxAuditOptions | undefined): InboxAuditOptions {
  if (audit === undefined) throw new AuditRecordNotFoundError("this server reads no audit log: pass createInboxHandler({ audit: { source, key } }) to serve audit trails and the history");
  return audit;
}

async function logBytes(audit: InboxAuditOptions): Promise<Buffer> {
  const source = typeof audit.source === "function" ? await audit.source() : audit.source;
  return auditLogBytes(source);
}

function verifyOptions(audit: InboxAuditOptions): Parameters<typeof verifySuspension>[2] {
  return {
    ...(audit.key === undefined ? {} : { key: audit.key }),
    ...(audit.keys === undefined ? {} : { keys: audit.keys }),
    ...(audit.store === undefined ? {} : { store: audit.store }),
  };
}

/**
 * The audit routes: the trail of one pause with its offline verification
 * (`verifySuspension`, the same check `civitas audit verify-suspension`
 * makes), and the history of decided pauses, newest first.
 * @internal
 */
export function auditRoutes(audit: InboxAuditOptions | undefined): Route[] {
  return [
    route("GET", "/api/v1/agents/:name/suspensions/:suspensionId/audit", async ({ params }) => {
      const options = configured(audit);
      const agent = params.name ?? "";
      const suspensionId = params.suspensionId ?? "";
      const bytes = await logBytes(options);
      const verification = await verifySuspension(bytes, agent, verifyOptions(options));
      const record = verification.suspensions.find((entry) => entry.suspensionId === suspensionId);
      if (record === undefined) throw new AuditRecordNotFoundError(`the audit log records no suspension '${suspensionId}' of '${agent}'`);
      const walk = walkAuditLog(bytes, keyResolver("(audit log)", options));
      const rows = walk.rows.filter((row) => row.agent === agent && row.details.suspensionId === suspensionId);
      return {
        status: 200,
        body: {
          agent,
          suspension: record,
          log: { status: verification.status, failures: verification.failures, ...(verification.reason === undefined ? {} : { reason: verification.reason }), chain: summarize(walk) },
          rows,
        },
      };
    }),
    route("GET", "/api/v1/approvals/:id/audit", async ({ params }) => {
      const options = configured(audit);
      const approvalId = params.id ?? "";
      const bytes = await logBytes(options);
      const walk = walkAuditLog(bytes, keyResolver("(audit log)", options));
      const rows = walk.rows.filter((row) => row.details.approvalId === approvalId);
      if (rows.length === 0) throw new AuditRecordNotFoundError(`the audit log records no approval request '${approvalId}'`);
      const verification = await verifyApproval(bytes, approvalId, verifyOptions(options));
      return { status: 200, body: { approvalId, verification, chain: summarize(walk), rows } };
    }),
    route("GET", "/api/v1/history", async ({ query }) => {
      const options = configured(audit);
      const limit = limitParam(query, 50);
      const onlyAgent = query.get("agent");
      const bytes = await logBytes(options);
      const walk = walkAuditLog(bytes, keyResolver("(audit log)", options));
      const wanted = latestSettled(walk.rows, limit, onlyAgent);
      const entries: PauseHistoryEntry[] = [];
      const reasons = decisionReasons(walk.rows);
      for (const agent of new Set(wanted.map((row) => row.agent))) {
        const verification = await verifySuspension(bytes, agent, verifyOptions(options));
        for (const record of verification.suspensions) {
          if (record.settledAt === undefined) continue;
          const decisionReason = reasons.get(record.suspensionId);
          entries.push(decisionReason === undefined ? { kind: "pause", agent, ...record } : { kind: "pause", agent, ...record, decisionReason });
        }
      }
      const all: (PauseHistoryEntry | ApprovalHistoryEntry)[] = [...entries, ...(await approvalHistory(bytes, walk.rows, limit, onlyAgent, options))];
      all.sort((a, b) => ((b.settledAt ?? "") < (a.settledAt ?? "") ? -1 : (b.settledAt ?? "") > (a.settledAt ?? "") ? 1 : 0));
      return { status: 200, body: { chain: summarize(walk), items: all.slice(0, limit) } };
    }),
  ];
}

/** The last `limit` settling rows (of `agent` only, when given), newest first. */
function latestSettled(rows: readonly AuditRow[], limit: number, agent: string | null): AuditRow[] {
  const found: AuditRow[] = [];
  for (let i = rows.length - 1; i >= 0 && found.length < limit; i--) {
    const row = rows[i];
    if (row !== undefined && SETTLING.has(row.event) && (agent === null || row.agent === agent)) found.push(row);
  }
  return found;
}

/** The reason each denial recorded, by suspension id (the first settling row of each). */
function decisionReasons(rows: readonly AuditRow[]): Map<string, string> {
  const reasons = new Map<string, string>();
  const settled = new Set<string>();
  for (const row of rows) {
    const id = row.details.suspensionId;
    if (!SETTLING.has(row.event) || typeof id !== "string" || settled.has(id)) continue;
    settled.add(id);
    const reason = row.details.reason;
    if (row.event === "agent.deny" && typeof reason === "string" && reason !== "") reasons.set(id, reason);
  }
  return reasons;
}

/** The last `limit` decided approval requests (of `agent` only, when given), each verified offline. */
async function approvalHistory(bytes: Buffer, rows: readonly AuditRow[], limit: number, agent: string | null, options: InboxAuditOptions): Promise<ApprovalHistoryEntry[]> {
  const types = new Map<string, string>();
  for (const row of rows) {
    const id = row.details.approvalId;
    const type = row.details.type;
    if (row.event === "approval.requested" && typeof id === "string" && typeof type === "string") types.set(id, type);
  }
  const entries: ApprovalHistoryEntry[] = [];
  // A decision's receipt appended again after a crash (written ahead, re-emitted at restore) is listed once.
  const listed = new Set<string>();
  for (let i = rows.length - 1; i >= 0 && entries.length < limit; i--) {
    const row = rows[i];
    if (row === undefined || row.event !== "approval.decided" || (agent !== null && row.agent !== agent)) continue;
    const { approvalId, decision, decidedBy, reason } = row.details;
    if (typeof approvalId !== "string" || listed.has(approvalId)) continue;
    listed.add(approvalId);
    const { status } = await verifyApproval(bytes, approvalId, verifyOptions(options));
    const type = types.get(approvalId);
    entries.push({
      kind: "approval",
      agent: row.agent,
      approvalId,
      ...(type === undefined ? {} : { type }),
      decision: typeof decision === "string" ? decision : "",
      decidedBy: typeof decidedBy === "string" ? decidedBy : "",
      ...(typeof reason === "string" && reason !== "" ? { decisionReason: reason } : {}),
      settledAt: row.ts,
      status,
    });
  }
  return entries;
}
