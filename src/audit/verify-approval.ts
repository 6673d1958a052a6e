import { castVote, escalateIfDue, newRecord, type ApprovalRecord } from "../approvals/approval-request.js";
import { checkApprovalRule } from "../approvals/approval-rule.js";
import type { ApprovalStatus } from "../approvals/approval-types.js";
import { canonicalJson, type AuditRow } from "./audit-row.js";
import { auditLogBytes, sourceLabel, type AuditLogSource } from "./audit-source.js";
import { keyResolver, walkAuditLog, type VerifyOptions } from "./verify-audit-log.js";

/**
 * `verified`: requested once, every counted vote allowed by the rule's stage
 * at the time, decided once, and (approved) its action handled at most once
 * and only after its rule was satisfied. `pending`: not decided yet, or
 * approved and not handled yet. `failed`: a real break.
 */
export type ApprovalVerificationStatus = "verified" | "pending" | "failed";

/** The outcome of {@link verifyApproval}. */
export interface ApprovalVerification {
  readonly status: ApprovalVerificationStatus;
  readonly approvalId: string;
  /** The agent that held the action (from `approval.requested`). */
  readonly agent?: string;
  /** The action's digest the request recorded. */
  readonly digest?: string;
  /** How it was decided, once decided. */
  readonly decision?: Exclude<ApprovalStatus, "pending">;
  readonly decidedBy?: string;
  /** The counted votes, in order. */
  readonly votes: readonly { approver: string; vote: string; stage: number; ts: string }[];
  /** Whether the released action was handled (an `approval.consumed` with `handled: true`). */
  readonly handled: boolean;
  /** One sentence per break found. */
  readonly failures: readonly string[];
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * Answers offline, from a signed audit log alone, whether the held action of
 * `approvalId` had every vote its rule required before it ran, and ran at
 * most once: the chain must verify; `approval.requested` must come first and
 * once; every event must carry its digest and agent; the counted votes,
 * replayed through the rule recorded with the request (with its escalation),
 * must reach the recorded decision; one `approval.decided`; at most one
 * `approval.consumed`, only after an approval. A receipt appended again
 * after a crash (the runtime writes receipts ahead and re-emits the ones a
 * crash may have lost) counts once: same `receiptId` and the same event,
 * agent and details (its `fence` aside); the same `receiptId` with any
 * other content is a failure, never a second vote. A vote counts at its
 * recorded `at` (when it was cast), which may not be later than its row.
 * @example
 * ```ts
 * const { status, votes } = await verifyApproval("./audit.jsonl", approvalId, { key });
 * ```
 * @throws (rejects) `AUDIT_UNREADABLE`, or `AUDIT_KEY_MISSING` when no key is given
 */
export async function verifyApproval(source: AuditLogSource, approvalId: string, options: VerifyOptions): Promise<ApprovalVerification> {
  const walk = walkAuditLog(await auditLogBytes(source), keyResolver(sourceLabel(source), options));
  const failures: string[] = [];
  if (walk.brokenAt !== undefined) failures.push(`the audit chain is broken at row ${walk.brokenAt}: ${walk.reason ?? "unknown"}`);
  const rows = onceEach(
    walk.rows.filter((row) => row.details.approvalId === approvalId),
    failures,
  );
  const result = replay(rows, approvalId, failures);
  const status: ApprovalVerificationStatus = failures.length > 0 ? "failed" : result.decision === undefined || (result.decision === "approved" && !result.handled) ? "pending" : "verified";
  return { status, approvalId, ...result, failures };
}

type Replayed = Omit<ApprovalVerification, "status" | "approvalId" | "failures">;

/**
 * The rows with each re-emitted receipt counted once: a row whose
 * `receiptId` came before, with identical event, agent and details (the
 * owner `fence` aside: a re-emission comes from the restarted owner), is
 * left out; one with different content is a failure (and left out too: it
 * never counts as a vote of its own).
 */
function onceEach(rows: readonly AuditRow[], failures: string[]): AuditRow[] {
  const seen = new Map<string, { seq: number; content: string }>();
  const kept: AuditRow[] = [];
  for (const row of rows) {
    const receiptId = row.details.receiptId;
    if (typeof receiptId !== "string") {
      kept.push(row);
      continue;
    }
    const { fence: _fence, ...details } = row.details;
    const content = canonicalJson({ event: row.event, agent: row.agent, details });
    const first = seen.get(receiptId);
    if (first === undefined) {
      seen.set(receiptId, { seq: row.seq, content });
      kept.push(row);
    } else if (first.content !== content) {
      failures.push(`row ${row.seq}: ${row.event} reuses receipt id ${receiptId} of row ${first.seq} with other content`);
    }
  }
  return kept;
}

/** When the row's change happened: its recorded `at` (a re-emission is appended later), else the row's time. */
function changeTime(row: AuditRow, failures: string[], where: string): number {
  const ts = Date.parse(row.ts);
  const at = typeof row.details.at === "string" ? Date.parse(row.details.at) : Number.NaN;
  if (typeof row.details.at !== "string") return ts;
  if (Number.isNaN(at) || at > ts) {
    failures.push(`${where}: its time ${JSON.stringify(row.details.at)} is not a time before it was recorded (${row.ts})`);
    return ts;
  }
  return at;
}

function replay(rows: readonly AuditRow[], approvalId: string, failures: string[]): Replayed {
  const votes: { approver: string; vote: string; stage: number; ts: string }[] = [];
  const requested = rows[0];
  if (requested === undefined) {
    failures.push(`the log holds no event of approval ${approvalId}`);
    return { votes, handled: false };
  }
  if (requested.event !== "approval.requested") {
    failures.push(`row ${requested.seq}: the first event of approval ${approvalId} is ${requested.event}, not approval.requested`);
    return { votes, handled: false };
  }
  const agent = requested.agent;
  const digest = text(requested.details.digest) ?? "";
  let record: ApprovalRecord;
  try {
    const rule = checkApprovalRule(`approval ${approvalId}`, requested.details.rule);
    const at = Date.parse(text(requested.details.requestedAt) ?? requested.ts);
    record = newRecord(approvalId, agent, { id: "", type: "", sender: "", payload: {}, correlation_id: null }, digest, rule, "", at);
  } catch (error) {
    failures.push(`row ${requested.seq}: approval.requested of ${approvalId} records no valid rule (${(error as Error).message})`);
    return { agent, digest, votes, handled: false };
  }
  let decision: Replayed["decision"];
  let decidedBy: string | undefined;
  let handled = false;
  let consumed = false;
  for (const row of rows.slice(1)) {
    const where = `row ${row.seq}: ${row.event} of approval ${approvalId}`;
    if (row.agent !== agent) failures.push(`${where} names agent '${row.agent}', not '${agent}'`);
    if (row.details.digest !== digest) failures.push(`${where} carries another digest than its request`);
    const ts = changeTime(row, failures, where);
    switch (row.event) {
      case "approval.requested":
        failures.push(`${where}: requested a second time`);
        break;
      case "approval.escalated":
        record = escalateIfDue(record, Math.max(ts, Date.parse(record.escalateAt ?? row.ts))) ?? record;
        break;
      case "approval.voted": {
        if (row.details.accepted !== true) break; // a refused vote, recorded as such
        const approver = text(row.details.approver) ?? "";
        const vote = row.details.vote === "deny" ? "deny" : "approve";
        try {
          const outcome = castVote(record, approver, vote, ts);
          if (outcome.kind === "counted") record = outcome.record;
          votes.push({ approver, vote, stage: typeof row.details.stage === "number" ? row.details.stage : -1, ts: row.ts });
        } catch (error) {
          failures.push(`${where}: the vote of '${approver}' could not count (${(error as Error).message})`);
        }
        break;
      }
      case "approval.decided": {
        if (decision !== undefined) failures.push(`${where}: decided a second time`);
        const recorded = text(row.details.decision) as Replayed["decision"];
        decision = recorded;
        decidedBy = text(row.details.decidedBy);
        if (recorded === "approved" && record.status !== "approved") failures.push(`${where}: approved without every required vote (the votes reach '${record.status}' at stage ${record.stage})`);
        if (recorded === "denied" && record.status !== "denied") failures.push(`${where}: denied without a counted deny`);
        break;
      }
      case "approval.consumed":
        if (consumed) failures.push(`${where}: consumed a second time`);
        if (decision !== "approved") failures.push(`${where}: consumed without an approval before it`);
        consumed = true;
        handled = row.details.handled === true;
        break;
      default:
        failures.push(`${where}: an unknown approval event`);
    }
  }
  const result: { -readonly [K in keyof Replayed]: Replayed[K] } = { agent, digest, votes, handled };
  if (decision !== undefined) result.decision = decision;
  if (decidedBy !== undefined) result.decidedBy = decidedBy;
  return result;
}
