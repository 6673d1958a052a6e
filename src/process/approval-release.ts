import { ApprovalDeniedError, ApprovalDigestMismatchError, ApprovalNotFoundError, ApproverNotAllowedError } from "../approvals/approval-errors.js";
import { castVote, consumeRecord, escalateIfDue, expireIfDue, nextDeadline, viewOf, cancelRecord, type ApprovalRecord } from "../approvals/approval-request.js";
import type { PendingReceipt } from "../approvals/pending-receipts.js";
import { APPROVALS_KEY, readStoredApprovals, readStoredReceipts } from "../approvals/stored-approvals.js";
import { ResumeRefusedError } from "../errors/errors.js";
import { forceMessage, queuedBusiness } from "../mailbox/mailbox-internals.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { fromWire } from "../message/from-wire.js";
import { isoTime } from "../time/clock.js";
import { settlesWithin } from "../time/deadline.js";
import { answer, refuse } from "./effects.js";
import { composeControl } from "./envelope.js";
import { digestOf, gateOf, type ApprovalGate } from "./approval-gate.js";
import { overrides, runHookWithDeadline } from "./hooks.js";
import { appendReceipts, newReceipt, storeWithReceipts } from "./approval-receipts.js";
import type { ProcessRunner } from "./process-runner.js";

// Decisions on held actions, taken by the holding agent's own loop between two messages (an
// `_agency.approval` control request: a vote, or its deadline timer's tick), and the release of an
// approved message: consumed (stored so) before its handler runs, so it runs at most once.

/** The control type of votes and deadline ticks. @internal */
export const APPROVAL_CONTROL = "_agency.approval";

function noop(): void {}

/** Acts on an `_agency.approval` control request: a vote, or a tick of the deadline timer. @internal */
export function approvalControl(r: ProcessRunner, request: Message): Promise<void> {
  return request.payload.tick === true ? applyDue(gateOf(r)) : applyVote(gateOf(r), request);
}

async function applyVote(gate: ApprovalGate, request: Message): Promise<void> {
  const r = gate.runner;
  const services = r.requireServices();
  const { approvalId, approver, vote, reason } = request.payload as { approvalId: string; approver: string; vote: "approve" | "deny"; reason?: string };
  try {
    const found = gate.records.get(approvalId);
    if (found === undefined) throw new ApprovalNotFoundError(approvalId);
    // An escalation or expiry that is due (its tick not taken yet) comes first: a late vote never counts.
    const record = await applyDueTo(gate, found);
    if (services.authorizeApproval !== undefined) await authorizeVote(gate, record, approver, vote);
    let outcome: ReturnType<typeof castVote>;
    try {
      outcome = castVote(record, approver, vote, services.clock.now(), reason);
    } catch (error) {
      if (error instanceof ApproverNotAllowedError) {
        // Refused, and on the record as refused.
        await services.telemetry.audit("approval.voted", r.agent.name, { approvalId, digest: record.digest, approver, vote, stage: record.stage, accepted: false, refusal: error.code });
      }
      throw error;
    }
    if (outcome.kind === "counted") {
      let next = outcome.record;
      let mismatch: ApprovalDigestMismatchError | undefined;
      if (outcome.decided === "approved") {
        // Re-checked before the decision: an approval for one action never releases another.
        const now = digestOf(r, fromWire(next.wire));
        if (now !== next.digest) {
          mismatch = new ApprovalDigestMismatchError(approvalId, next.digest, now);
          next = cancelRecord(record, services.clock.now(), "runtime", mismatch.message);
        }
      }
      // The vote's receipt (none for a vote whose approval the digest check cancelled) and the decision's, written ahead.
      const receipts = mismatch === undefined ? [newReceipt(gate, next, "approval.voted", outcome.vote.at, outcome.vote)] : [];
      await storeWithReceipts(gate, next, [...receipts, ...changeReceipts(gate, record, next)]);
      await afterChange(gate, record, next);
      if (mismatch !== undefined) throw mismatch;
    }
  } catch (error) {
    refuse(r, request, error as Error);
    return;
  }
  const told = answer(r, request);
  if (told !== undefined) await told.catch(noop);
}

async function authorizeVote(gate: ApprovalGate, record: ApprovalRecord, approver: string, vote: "approve" | "deny"): Promise<void> {
  const r = gate.runner;
  const services = r.requireServices();
  const hook = services.authorizeApproval;
  if (hook === undefined) return;
  const decision = vote === "deny" ? "deny" : "approve";
  let allowed: unknown;
  try {
    const deciding = Promise.resolve(hook(viewOf(record), approver, { decision }));
    if (!(await settlesWithin(deciding, services.clock, r.options.shutdownTimeoutMs))) {
      deciding.catch(noop);
      throw new Error(`authorizeApproval did not answer within ${r.options.shutdownTimeoutMs} ms`);
    }
    allowed = await deciding;
  } catch (cause) {
    throw new ResumeRefusedError(r.agent.name, approver, { cause }, vote === "deny" ? "deny" : "resume");
  }
  if (allowed !== true) throw new ResumeRefusedError(r.agent.name, approver, undefined, vote === "deny" ? "deny" : "resume");
}

/** The receipts of a change from `before` to `next` beyond a vote's own: its escalation, its decision. @internal */
export function changeReceipts(gate: ApprovalGate, before: ApprovalRecord, next: ApprovalRecord): PendingReceipt[] {
  const receipts: PendingReceipt[] = [];
  const now = isoTime(gate.runner.requireServices().clock.now());
  if (next.escalated && !before.escalated) receipts.push(newReceipt(gate, next, "approval.escalated", now));
  if (next.status !== "pending" && before.status === "pending") receipts.push(newReceipt(gate, next, "approval.decided", next.decidedAt ?? now));
  return receipts;
}

/**
 * What follows a stored change from `before` to `next` (its receipts
 * appended): `approval.changed`, and for a decision its effect: an
 * approved message queued for release; a denied, expired or cancelled
 * one's asker rejected and `onApprovalDenied` run.
 */
async function afterChange(gate: ApprovalGate, before: ApprovalRecord, next: ApprovalRecord): Promise<void> {
  gate.runner.requireServices().approvals.report(next);
  if (next.status === before.status) return;
  if (next.status === "approved") queueRelease(gate, next);
  else if (next.status !== "pending") await denied(gate, next);
}

async function denied(gate: ApprovalGate, record: ApprovalRecord): Promise<void> {
  const r = gate.runner;
  rejectAsker(gate, record);
  if (overrides(r, "onApprovalDenied")) {
    const view = viewOf(record);
    await runHookWithDeadline(r, "onApprovalDenied", () => r.agent.onApprovalDenied(view), r.options.shutdownTimeoutMs);
  }
}

/** Rejects the asker of `record`'s held message, if one may still wait, with `APPROVAL_DENIED` (its outcome, decider, reason). @internal */
export function rejectAsker(gate: ApprovalGate, record: ApprovalRecord): void {
  const r = gate.runner;
  const wire = record.wire;
  if (typeof wire.reply_to !== "string" || wire.correlation_id === null) return;
  const outcome = record.status === "expired" || record.status === "cancelled" ? record.status : "denied";
  refuse(r, fromWire(wire), new ApprovalDeniedError(r.agent.name, record.approvalId, record.decidedBy ?? "", record.decisionReason ?? "", outcome));
}

/** Puts the approved message of `record` in the mailbox (business lane, at the back), unless it is queued already. */
function queueRelease(gate: ApprovalGate, record: ApprovalRecord): void {
  const box = gate.runner.box;
  if (box === undefined || box.closed) return;
  for (const id of gate.released.values()) if (id === record.approvalId) return;
  const message = fromWire(record.wire);
  gate.released.set(message, record.approvalId);
  forceMessage(box, message);
}

/**
 * Consumes the approval of a released message just taken from the mailbox:
 * re-checks its digest, stores it consumed (so it is never handled twice,
 * whatever crashes next), records `approval.consumed`, and shows the
 * approval to the handler. `false` (not handled) when the request is no
 * longer approved-and-unused, the digest does not match, or the write failed.
 * @internal
 */
export async function admitReleased(gate: ApprovalGate, message: Message, approvalId: string): Promise<boolean> {
  const r = gate.runner;
  const services = r.requireServices();
  const record = gate.records.get(approvalId);
  if (record === undefined || record.status !== "approved" || record.consumed) return false;
  const digest = digestOf(r, message);
  const handled = digest === record.digest;
  const consumed = consumeRecord(record);
  try {
    // Stored as used, with its receipt written ahead, before the handler may run.
    await storeWithReceipts(gate, consumed, [newReceipt(gate, consumed, "approval.consumed", isoTime(services.clock.now()), undefined, handled)]);
  } catch (error) {
    services.logger.error(`'${r.agent.name}' could not store approval ${approvalId} as used; its message is not handled now (a restart releases it again)`, { error });
    return false;
  }
  services.approvals.report(consumed);
  if (!handled) {
    const error = new ApprovalDigestMismatchError(approvalId, record.digest, digest);
    services.logger.error(error.message, { error });
    if (message.replyTo !== undefined && message.correlationId !== undefined) refuse(r, message, error);
    return false;
  }
  gate.releasing = { message, view: viewOf(consumed) };
  return true;
}

/** Applies every escalation and expiry that is due (a tick of the deadline timer), then re-arms it. */
async function applyDue(gate: ApprovalGate): Promise<void> {
  gate.timer = undefined;
  gate.timerAt = undefined;
  for (const record of [...gate.records.values()]) await applyDueTo(gate, record);
  armDeadlines(gate);
}

/** Applies `record`'s escalation and expiry if due, and returns the record as it stands after. */
async function applyDueTo(gate: ApprovalGate, record: ApprovalRecord): Promise<ApprovalRecord> {
  const services = gate.runner.requireServices();
  const now = services.clock.now();
  const escalated = escalateIfDue(record, now);
  const next = expireIfDue(escalated ?? record, now) ?? escalated;
  if (next === undefined) return record;
  try {
    await storeWithReceipts(gate, next, changeReceipts(gate, record, next));
  } catch (error) {
    services.logger.error(`'${gate.runner.agent.name}' could not store the ${next.status === "expired" ? "expiry" : "escalation"} of approval ${record.approvalId}; it is tried again`, { error });
    return record;
  }
  await afterChange(gate, record, next);
  return next;
}

/**
 * Arms one timer, on the runtime's clock, for the nearest escalation or
 * expiry of the agent's pending requests; when it fires, a tick goes
 * through the agent's loop like any control request. A deadline already
 * passed (also while the process was down) fires at once.
 * @internal
 */
export function armDeadlines(gate: ApprovalGate): void {
  let nearest: number | undefined;
  for (const record of gate.records.values()) {
    const at = nextDeadline(record);
    if (at !== undefined && (nearest === undefined || at < nearest)) nearest = at;
  }
  if (nearest === gate.timerAt) return;
  gate.timer?.cancel();
  gate.timer = undefined;
  gate.timerAt = nearest;
  const r = gate.runner;
  const services = r.services;
  if (nearest === undefined || services === undefined) return;
  gate.timer = services.clock.setTimeout(() => {
    gate.timer = undefined;
    const box = r.box;
    if (box === undefined || box.closed) return;
    forceMessage(box, composeControl(r, r.agent.name, APPROVAL_CONTROL, { tick: true }));
  }, Math.max(0, nearest - services.clock.now()));
}

/**
 * Restores the agent's requests from its stored `state` at start (the key
 * is taken out of `state`: the runtime owns it), unless this instance
 * holds them already (a restart in this process knows them at least as
 * well as the store). Pending ones get their deadlines back; approved ones
 * not yet used are queued for release again (a crash came between the
 * decision and the handling).
 * @throws {@link StateSchemaError} for malformed stored requests
 * @internal
 */
export function restoreApprovals(r: ProcessRunner, stored: JsonObject | undefined): void {
  const state = r.agent.state;
  // Nothing stored, no gate (every fresh agent): nothing to read or restore.
  if (stored === undefined && r.gate === undefined) {
    if (APPROVALS_KEY in state) delete state[APPROVALS_KEY];
    return;
  }
  // (`stored` may be `state` itself: read before the key is taken out.)
  const records = stored === undefined ? [] : readStoredApprovals(r.agent.name, stored);
  const { receipts, dropped } = records.length === 0 || stored === undefined ? { receipts: undefined, dropped: [] } : readStoredReceipts(r.agent.name, stored);
  if (APPROVALS_KEY in state) delete state[APPROVALS_KEY];
  if (records.length === 0 && r.gate === undefined) return;
  const gate = gateOf(r);
  const services = r.requireServices();
  if (gate.records.size === 0) {
    for (const record of records) gate.records.set(record.approvalId, record);
    // Receipts written ahead and maybe never appended (a crash after the write): owed again.
    if (receipts !== undefined) for (const [id, owed] of receipts) gate.receipts.set(id, owed);
    for (const problem of dropped) services.logger.error(`'${r.agent.name}' restored ${problem}; it is not appended to the audit log`);
  }
  // Appended (again) before anything the restored agent records next: an identical re-emission counts once (verifyApproval).
  services.telemetry.track(appendReceipts(gate));
  const queued = new Set(r.box === undefined ? [] : queuedBusiness(r.box));
  for (const message of [...gate.released.keys()]) if (!queued.has(message)) gate.released.delete(message);
  for (const record of gate.records.values()) {
    services.approvals.add(record.approvalId, gate);
    if (record.status === "approved" && !record.consumed) queueRelease(gate, record);
  }
  disarmDeadlines(gate);
  armDeadlines(gate);
}

/** Stops the deadline timer (the agent stopped). @internal */
export function disarmDeadlines(gate: ApprovalGate | undefined): void {
  gate?.timer?.cancel();
  if (gate !== undefined) {
    gate.timer = undefined;
    gate.timerAt = undefined;
  }
}
