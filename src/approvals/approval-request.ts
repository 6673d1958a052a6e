import { isoTime } from "../time/clock.js";
import { ApproverNotAllowedError, StaleVoteError } from "./approval-errors.js";
import type { ApprovalRule, ApprovalStatus, ApprovalView, ApprovalVote, HeldMessageView } from "./approval-types.js";

/**
 * One approval request as the runtime keeps and stores it: the view's
 * fields, the held message in its wire form, and the stage escalation
 * happened in. Immutable: every change makes a new record (one function per
 * change below), so what a reader was handed never changes under it.
 * @internal
 */
export interface ApprovalRecord extends Omit<ApprovalView, "message"> {
  /** The held message, wire form (SPEC §2), as stored. */
  readonly wire: HeldWire;
  /** The stage current when the request escalated (`escalateTo` are accepted there). */
  readonly escalatedStage?: number;
}

/** The fields of a wire message a record needs (the whole wire form is kept). @internal */
export interface HeldWire {
  readonly id: string;
  readonly type: string;
  readonly sender: string;
  readonly payload: object;
  readonly correlation_id: string | null;
  readonly [key: string]: unknown;
}

/** A new pending request for the held message `wire`, requested at `nowMs`. @internal */
export function newRecord(approvalId: string, agent: string, wire: HeldWire, digest: string, rule: ApprovalRule, reason: string, nowMs: number): ApprovalRecord {
  const record: { -readonly [K in keyof ApprovalRecord]: ApprovalRecord[K] } = {
    approvalId,
    agent,
    status: "pending",
    consumed: false,
    digest,
    wire,
    rule,
    reason,
    stage: 0,
    votes: [],
    requestedAt: isoTime(nowMs),
    escalated: false,
  };
  if (rule.expiresInMs !== undefined) record.expiresAt = isoTime(nowMs + rule.expiresInMs);
  if (rule.escalateAfterMs !== undefined) record.escalateAt = isoTime(nowMs + rule.escalateAfterMs);
  return Object.freeze(record);
}

/** The approvers the record's current stage accepts: the stage's own, plus `escalateTo` once escalated in it. @internal */
export function acceptedApprovers(record: ApprovalRecord): readonly string[] {
  const stage = record.rule.stages[record.stage];
  if (stage === undefined) return [];
  const extra = record.escalated && record.escalatedStage === record.stage ? (record.rule.escalateTo ?? []) : [];
  return extra.length === 0 ? stage.approvers : [...stage.approvers, ...extra.filter((a) => !stage.approvers.includes(a))];
}

/** What a vote did: counted (maybe deciding the request), or nothing (the same approver voted in this stage already). @internal */
export type VoteOutcome = { readonly kind: "counted"; readonly record: ApprovalRecord; readonly vote: ApprovalVote; readonly decided: ApprovalStatus | undefined } | { readonly kind: "duplicate" };

/**
 * Casts `approver`'s vote at `nowMs`. A deny ends the request (`denied`); an
 * approval counts once per approver and stage; once a stage has `min`
 * distinct approvals the next stage begins, and after the last one the
 * request is `approved`.
 * @throws {@link StaleVoteError} (`STALE_APPROVAL`) when the request is not pending
 * @throws {@link ApproverNotAllowedError} when the current stage does not accept `approver`
 * @internal
 */
export function castVote(record: ApprovalRecord, approver: string, vote: "approve" | "deny", nowMs: number, reason?: string): VoteOutcome {
  if (record.status !== "pending") throw new StaleVoteError(record.approvalId, record.status);
  // Fail closed: a vote after the deadline never counts, even before the expiry is applied.
  if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= nowMs) throw new StaleVoteError(record.approvalId, "past its deadline");
  const accepted = acceptedApprovers(record);
  if (!accepted.includes(approver)) throw new ApproverNotAllowedError(record.approvalId, approver, record.stage, accepted);
  const stage = record.stage;
  if (vote === "approve" && record.votes.some((v) => v.stage === stage && v.approver === approver)) return { kind: "duplicate" };
  const at = isoTime(nowMs);
  const cast: ApprovalVote = Object.freeze(reason === undefined || reason === "" ? { approver, vote, stage, at } : { approver, vote, stage, at, reason });
  const votes = Object.freeze([...record.votes, cast]);
  if (vote === "deny") {
    return { kind: "counted", vote: cast, decided: "denied", record: decide(record, { votes }, "denied", at, approver, reason) };
  }
  const distinct = votes.filter((v) => v.stage === stage && v.vote === "approve").length;
  const needed = record.rule.stages[stage]?.min ?? 1;
  if (distinct < needed) return { kind: "counted", vote: cast, decided: undefined, record: Object.freeze({ ...record, votes }) };
  const next = stage + 1;
  if (next < record.rule.stages.length) return { kind: "counted", vote: cast, decided: undefined, record: Object.freeze({ ...record, votes, stage: next }) };
  return { kind: "counted", vote: cast, decided: "approved", record: decide(record, { votes, stage: next }, "approved", at, approver, reason) };
}

function decide(record: ApprovalRecord, change: Partial<ApprovalRecord>, status: ApprovalStatus, at: string, by: string, reason: string | undefined): ApprovalRecord {
  const decided: ApprovalRecord = { ...record, ...change, status, decidedAt: at, decidedBy: by };
  return Object.freeze(reason === undefined || reason === "" ? decided : { ...decided, decisionReason: reason });
}

/** The request escalated at `nowMs`, when it is pending, not escalated yet and its escalation is due; else `undefined`. @internal */
export function escalateIfDue(record: ApprovalRecord, nowMs: number): ApprovalRecord | undefined {
  if (record.status !== "pending" || record.escalated || record.escalateAt === undefined || Date.parse(record.escalateAt) > nowMs) return undefined;
  return Object.freeze({ ...record, escalated: true, escalatedStage: record.stage });
}

/** The request expired at `nowMs` (decider `"expiry"`), when it is pending and its deadline has passed; else `undefined`. @internal */
export function expireIfDue(record: ApprovalRecord, nowMs: number): ApprovalRecord | undefined {
  if (record.status !== "pending" || record.expiresAt === undefined || Date.parse(record.expiresAt) > nowMs) return undefined;
  return decide(record, {}, "expired", isoTime(nowMs), "expiry", "the request expired before it was approved");
}

/** The request cancelled by `by` (its agent removed for good, or halted). @internal */
export function cancelRecord(record: ApprovalRecord, nowMs: number, by: string, reason: string): ApprovalRecord {
  return decide(record, {}, "cancelled", isoTime(nowMs), by, reason);
}

/** The record with its released message marked handled. @internal */
export function consumeRecord(record: ApprovalRecord): ApprovalRecord {
  return Object.freeze({ ...record, consumed: true });
}

/** The epoch ms of the record's next escalation or expiry, or `undefined` when it has none to come. @internal */
export function nextDeadline(record: ApprovalRecord): number | undefined {
  if (record.status !== "pending") return undefined;
  const escalation = !record.escalated && record.escalateAt !== undefined ? Date.parse(record.escalateAt) : undefined;
  const expiry = record.expiresAt !== undefined ? Date.parse(record.expiresAt) : undefined;
  if (escalation === undefined) return expiry;
  return expiry === undefined ? escalation : Math.min(escalation, expiry);
}

/** What readers see of `record`. @internal */
export function viewOf(record: ApprovalRecord): ApprovalView {
  const { wire, escalatedStage: _stage, ...rest } = record;
  const message: HeldMessageView =
    wire.correlation_id === null
      ? { id: wire.id, type: wire.type, sender: wire.sender, payload: wire.payload }
      : { id: wire.id, type: wire.type, sender: wire.sender, payload: wire.payload, correlationId: wire.correlation_id };
  return { ...rest, message };
}
