import type { JsonObject, JsonValue } from "../message/json.js";
import type { ApprovalRecord } from "./approval-request.js";
import type { ApprovalVote } from "./approval-types.js";
import { actionDigest, canonicalize } from "./canonical-json.js";

/**
 * An approval receipt written ahead: stored with the record whose change it
 * records, in the same atomic write, appended to the audit log after that
 * write, and dropped from the record by the next write once appended. A
 * receipt still stored at restore is appended again (identical, same
 * `receiptId`): `verifyApproval` counts an identical re-emission once.
 * @internal
 */
export interface PendingReceipt {
  /** `approval.requested`, `approval.voted`, `approval.escalated`, `approval.decided` or `approval.consumed`. */
  readonly event: string;
  /** The receipt's details; `receiptId` (UUIDv7) and `at` (when the change happened) among them. */
  readonly details: JsonObject;
}

/** The events written ahead with their record. @internal */
export type ReceiptEvent = "approval.requested" | "approval.voted" | "approval.escalated" | "approval.decided" | "approval.consumed";

const EVENTS: ReadonlySet<string> = new Set<ReceiptEvent>(["approval.requested", "approval.voted", "approval.escalated", "approval.decided", "approval.consumed"]);

/**
 * The receipt of `event` for `record` as it stands after the change it
 * records, its details derived from the record alone (so a stored receipt
 * can be checked by deriving it again): `vote` names the vote of an
 * `approval.voted`; `handled` says whether the released message of an
 * `approval.consumed` went to the handler (by default: whether the held
 * message still matches its digest; it can be `true` only then).
 * `undefined` when the record does not show that change.
 * @internal
 */
export function receiptFor(record: ApprovalRecord, event: ReceiptEvent, receiptId: string, at: string, vote?: ApprovalVote, handled?: boolean): PendingReceipt | undefined {
  const details: JsonObject = { approvalId: record.approvalId, digest: record.digest, receiptId, at };
  switch (event) {
    case "approval.requested": {
      const wire = record.wire;
      Object.assign(details, { messageId: wire.id, type: wire.type, sender: wire.sender, reason: record.reason, rule: record.rule as unknown as JsonObject, requestedAt: record.requestedAt });
      if (record.expiresAt !== undefined) details.expiresAt = record.expiresAt;
      if (record.escalateAt !== undefined) details.escalateAt = record.escalateAt;
      break;
    }
    case "approval.voted":
      if (vote === undefined) return undefined;
      Object.assign(details, { approver: vote.approver, vote: vote.vote, stage: vote.stage, accepted: true });
      if (vote.reason !== undefined) details.reason = vote.reason;
      break;
    case "approval.escalated":
      if (!record.escalated) return undefined;
      Object.assign(details, { stage: record.escalatedStage ?? record.stage, escalateTo: [...(record.rule.escalateTo ?? [])] });
      break;
    case "approval.decided":
      if (record.status === "pending") return undefined;
      Object.assign(details, { decision: record.status, decidedBy: record.decidedBy ?? "" });
      if (record.decisionReason !== undefined) details.reason = record.decisionReason;
      break;
    case "approval.consumed": {
      if (!record.consumed) return undefined;
      const matches = actionDigest(record.agent, record.wire.type, record.wire.payload) === record.digest;
      const ran = handled ?? matches;
      if (ran && !matches) return undefined;
      Object.assign(details, { messageId: record.wire.id, handled: ran });
      if (!ran) details.refusal = "APPROVAL_DIGEST_MISMATCH";
      break;
    }
  }
  return Object.freeze({ event, details: Object.freeze(details) });
}

/**
 * Checks the receipts stored with `record` (`value`, its `receipts` field):
 * each is kept only when deriving it again from the record (same event,
 * `receiptId`, `at`, and for a vote the vote the record holds) gives the
 * very same JSON. What is kept is appended again at restore; what is
 * dropped is described in `dropped`.
 * @internal
 */
export function checkPendingReceipts(record: ApprovalRecord, value: unknown): { kept: PendingReceipt[]; dropped: string[] } {
  const kept: PendingReceipt[] = [];
  const dropped: string[] = [];
  if (value === undefined) return { kept, dropped };
  const items: unknown[] = Array.isArray(value) ? value : [value];
  for (const item of items) {
    const again = derivedAgain(record, item);
    if (again !== undefined && canonicalize(again as unknown as JsonValue) === canonicalize(item as JsonValue)) kept.push(again);
    else dropped.push(`a stored receipt of approval ${record.approvalId} that its record does not show (${describe(item)})`);
  }
  return { kept, dropped };
}

function derivedAgain(record: ApprovalRecord, item: unknown): PendingReceipt | undefined {
  const r = item as { event?: unknown; details?: Record<string, unknown> } | null;
  if (typeof r !== "object" || r === null || typeof r.event !== "string" || !EVENTS.has(r.event)) return undefined;
  const details = r.details;
  if (typeof details !== "object" || details === null || typeof details.receiptId !== "string" || typeof details.at !== "string") return undefined;
  const event = r.event as ReceiptEvent;
  const vote = event === "approval.voted" ? record.votes.find((v) => v.approver === details.approver && v.vote === details.vote && v.stage === details.stage && v.at === details.at) : undefined;
  try {
    // A stored refusal (handled: false) is taken as it is; a stored handled: true must match the record's digest.
    return receiptFor(record, event, details.receiptId, details.at, vote, details.handled === false ? false : undefined);
  } catch {
    return undefined; // a stored payload that is not I-JSON
  }
}

function describe(item: unknown): string {
  const r = item as { event?: unknown } | null;
  return typeof r === "object" && r !== null && typeof r.event === "string" ? r.event.slice(0, 64) : "not a receipt";
}
