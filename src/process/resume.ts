import type { Span } from "@opentelemetry/api";
import { decidedEvent } from "../audit/audit-event.js";
import { describeValue } from "../errors/civitas-error.js";
import { AuditUnavailableError, InvalidArgumentError, MailboxClosedError, RuntimeStateError, StaleApprovalError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import { forceMessage } from "../mailbox/mailbox-internals.js";
import type { Message } from "../message/message.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import { assertApprover } from "./decision-text.js";
import type { SuspensionControl } from "./suspension-control.js";
import { answer, refuse } from "./effects.js";
import { authorize, identityChange } from "./pause-decision.js";
import { decisionReceipt, denyPause, takeEffect } from "./pause-settlement.js";
import { completeRecorded, decisionOnRecord } from "./recorded-decision.js";

// A `_agency.resume` request (`runtime.resume`, or `runtime.deny`, which travels as a resume with
// decision "deny"): checked at once, then authorized, then carried out receipt first.

/** A resume that passed the checks that need no waiting. */
interface ResumePlan {
  readonly approver: string;
  readonly marker: SuspensionMarker;
  readonly identityChange: JsonObject | undefined;
  /** A denial (`runtime.deny`) and its reason; `undefined` for an approval. */
  readonly denial: { readonly reason: string } | undefined;
}

/**
 * Acts on a `_agency.resume` request: checks it at once (a refusal, or a
 * resume of a running agent, settles it without a promise to wait for),
 * then lifts the pause.
 * @internal
 */
export function resumeFrom(control: SuspensionControl, request: Message): Promise<void> | undefined {
  let plan: ResumePlan | undefined;
  try {
    plan = planResume(control, request.payload);
  } catch (error) {
    refuse(control.runner, request, error as Error);
    return undefined;
  }
  const lateFor = plan === undefined ? control.decidedBefore(request) : undefined;
  if (lateFor !== undefined) {
    // Sent while the pause was in effect, taken after someone else decided it: this decision did not happen.
    refuse(control.runner, request, new StaleApprovalError(control.runner.agent.name, lateFor, undefined, request.payload.decision === "deny" ? "deny" : "resume", "it was decided by another decision (an expiry, another approver) before this one was taken"));
    return undefined;
  }
  if (plan === undefined || control.predatesPause(request)) {
    void answer(control.runner, request); // a resume of a running agent: a no-op, its approver checked
    return undefined;
  }
  return carryOutResume(control, request, plan);
}

/** The checks that need no waiting; `undefined` when the agent is not paused (nothing to lift). */
function planResume(control: SuspensionControl, payload: JsonObject): ResumePlan | undefined {
  const runner = control.runner;
  const { approver, suspensionId, acceptIdentityChange } = payload;
  // runtime.deny travels as a resume with decision "deny": the same checks, in the same order.
  const call = payload.decision === "deny" ? "deny" : "resume";
  assertApprover(runner.agent.name, approver, call);
  if (suspensionId !== undefined && (typeof suspensionId !== "string" || suspensionId.length === 0)) {
    throw new InvalidArgumentError("suspensionId", `${call}('${runner.agent.name}'): suspensionId must be a non-empty string, got ${describeValue(suspensionId)}`);
  }
  const marker = control.marker;
  if (runner.currentStatus !== ProcessStatus.SUSPENDED || marker === undefined) {
    if (suspensionId !== undefined) throw new StaleApprovalError(runner.agent.name, suspensionId, undefined, call);
    return undefined;
  }
  if (suspensionId !== undefined && suspensionId !== marker.suspensionId) throw new StaleApprovalError(runner.agent.name, suspensionId, marker.suspensionId, call);
  // A denial acts on nothing the pause held back, so a changed identity does not matter to it.
  if (call === "deny") return { approver, marker, identityChange: undefined, denial: { reason: typeof payload.reason === "string" ? payload.reason : "" } };
  return { approver, marker, identityChange: identityChange(runner, marker, acceptIdentityChange === true), denial: undefined };
}

/**
 * Carries out a checked resume or denial: asks `authorizeResume`, then
 * completes a decision already on record, or approves (see
 * {@link leaveSuspended}) or denies the pause; answers `request`, or
 * refuses it with what went wrong (the pause then stays). A stop that began
 * meanwhile wins: the request is put back for the next incarnation.
 */
async function carryOutResume(control: SuspensionControl, request: Message, { approver, marker, identityChange, denial }: ResumePlan): Promise<void> {
  const runner = control.runner;
  try {
    const services = runner.requireServices();
    if (services.authorizeResume !== undefined) await authorize(runner, approver, marker, denial === undefined ? "approve" : "deny");
    // The runtime began stopping while the approval was being decided: its caller has been told
    // RUNTIME_STOPPED, so nothing of the resume may happen (the agent may still be waiting for its turn to stop).
    if (services.stopping.aborted) throw new RuntimeStateError("RUNTIME_STOPPED", `the runtime began stopping before the resume of '${runner.agent.name}' took effect; it stays paused (its marker is kept)`);
    // A stop that began while the approval was being decided wins: no receipt, the pause is kept,
    // and the request waits for the next incarnation (a restart comes back SUSPENDED and takes it;
    // a stop for good answers it with MAILBOX_CLOSED when the mailbox closes).
    if (runner.currentStatus !== ProcessStatus.SUSPENDED) {
      if (runner.mailbox.closed) throw new MailboxClosedError(`'${runner.agent.name}' stopped before the resume took effect; it stays paused (its marker is kept)`);
      forceMessage(runner.mailbox, request);
      return;
    }
    const call = denial === undefined ? "resume" : "deny";
    // Only a pause this incarnation restored can have a decision on record: no lookup (and no wait) for the others.
    const recorded = control.restoredPause === marker.suspensionId ? await decisionOnRecord(control, marker, call) : undefined;
    // Decided before a crash: that decision is completed (unless authorizeResume sets it aside), never receipted a second time.
    if (recorded !== undefined && (await completeRecorded(control, marker, recorded))) {
      if (decidedEvent(recorded) !== (denial === undefined ? "agent.resume" : "agent.deny")) throw new StaleApprovalError(runner.agent.name, marker.suspensionId, undefined, call);
    } else if (denial === undefined) {
      const leaving = leaveSuspended(control, approver, marker, identityChange);
      if (leaving !== undefined) await leaving; // over at once with the in-memory store and no onResume
    }
    else await denyPause(control, approver, marker, denial.reason, false);
  } catch (error) {
    refuse(runner, request, error as Error);
    return;
  }
  // runtime.resume() resolves before the first business message after the pause is taken:
  // the loop goes on only once the caller's promise has settled (its own reactions run first).
  const told = answer(runner, request);
  if (told === undefined) return;
  try {
    await told; // awaited directly: the caller's own reaction to it was registered first, so it runs first
  } catch {
    // the caller gave up waiting (a timeout, an abort): that is the caller's to handle
  }
}

/**
 * Approves the pause `marker`. The receipt comes before the effect: audit,
 * then clear and persist, then RUNNING, then `onResume`.
 * @throws {@link AuditUnavailableError} (rejects) when a receipt could not be recorded: the pause stays
 */
function leaveSuspended(control: SuspensionControl, approver: string, marker: SuspensionMarker, identityChange: JsonObject | undefined): Promise<void> | undefined {
  const runner = control.runner;
  const services = runner.requireServices();
  const span = services.telemetry.tracing
    ? services.telemetry.startSpan("civitas.agent.resume", {
        "civitas.agent.name": runner.agent.name,
        "civitas.suspend.id": marker.suspensionId,
        "civitas.resume.approver": approver,
      })
    : undefined;
  // A stop that began while the receipt and the cleared marker were being written still wins: the
  // resume took effect and is reported as done, but this incarnation neither runs nor calls onResume.
  const effect = (): Promise<void> | undefined => takeEffect(control, services, marker, "resume", span, "onResume", () => runner.agent.onResume(approver, { ...marker }), approver);
  // Without an audit sink there is no receipt to wait for: the effect begins at once.
  return services.telemetry.auditing ? recordResume(control, approver, marker, identityChange, span).then(effect) : effect();
}

/**
 * Records the `agent.resume` receipt of the pause `marker` (after the
 * pause's own `agent.suspend` receipt, when that one is still owed).
 * @throws {@link AuditUnavailableError} (rejects) when a receipt could not be recorded, and a
 *   `STATE_FENCED` refusal; either ends `span`
 */
async function recordResume(control: SuspensionControl, approver: string, marker: SuspensionMarker, identityChange: JsonObject | undefined, span: Span | undefined): Promise<void> {
  const runner = control.runner;
  const telemetry = runner.requireServices().telemetry;
  const receipt: JsonObject = { approver, suspensionId: marker.suspensionId, reason: marker.reason };
  if (identityChange !== undefined) receipt.identityChange = identityChange;
  // A pause whose own receipt was never confirmed gets it first: a resume never names a pause the log does not hold.
  const announced =
    !control.announcementOwed ||
    (await telemetry.audit("agent.suspend", runner.agent.name, { reason: marker.reason, suspensionId: marker.suspensionId, since: marker.since, recordedAtResume: true }));
  // A receipt refused as fenced out (STATE_FENCED) ends the span with that error and reaches the caller.
  let recorded = announced;
  try {
    recorded &&= await decisionReceipt(control, "agent.resume", receipt);
  } catch (error) {
    telemetry.endSpan(span, error);
    throw error;
  }
  if (!recorded) {
    // No approved action without its receipt: the pause stays, nothing has changed yet.
    const error = new AuditUnavailableError(runner.agent.name);
    telemetry.endSpan(span, error);
    throw error;
  }
}
