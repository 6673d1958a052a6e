import { decidedEvent, deciderOf, SETTLEMENT_APPLIED, SETTLEMENT_REFUSED, type AuditEvent } from "../audit/audit-event.js";
import { AuditUnavailableError, ResumeRefusedError } from "../errors/errors.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import { runHook } from "./hooks.js";
import { authorize } from "./pause-decision.js";
import { decisionReceipt, recordApplied, throwIfFenced } from "./pause-settlement.js";
import type { SuspensionControl } from "./suspension-control.js";

// A pause decided once: when the process ended after a decision's receipt and before its marker
// was cleared, the restored pause's decision is read back from the audit log and completed, never
// recorded a second time.

/**
 * The decision already on record (`agent.resume`, `agent.deny`,
 * `agent.suspend.cancelled`) for `marker`, when it is the pause this
 * incarnation restored and the audit sink can read back what it recorded;
 * `undefined` otherwise.
 * @throws {@link AuditUnavailableError} (rejects) when the sink could not be read: whether the pause
 *   was decided is unknown, so it is not decided now (it stays, nothing has changed)
 */
export async function decisionOnRecord(control: SuspensionControl, marker: SuspensionMarker, call: "resume" | "deny"): Promise<AuditEvent | undefined> {
  if (control.restoredPause !== marker.suspensionId) return undefined;
  const recorded = await control.runner.requireServices().telemetry.recordedSettlement(control.runner.agent.name, marker.suspensionId);
  if (recorded === null) throw new AuditUnavailableError(control.runner.agent.name, call);
  return recorded;
}

/**
 * Completes the decision `recorded` of the pause `marker` as its first
 * carrying out would have, without a second receipt: the runtime's
 * `authorizeResume` is asked about the recorded approver or decider (this
 * owner may not be the one that wrote it: a restart with other rules, a
 * takeover), then the marker is cleared and persisted, the status becomes
 * RUNNING, and `onResume` (with the recorded approver) or `onDeny` (with
 * the recorded decider and reason) runs; a recorded expiry or cancellation
 * is not asked about and runs `onDeny` or nothing.
 *
 * Resolves `false` when `authorizeResume` refused: an
 * `agent.settlement.refused` receipt sets the recorded decision aside, and
 * the pause is undecided (still SUSPENDED, to be decided anew).
 * @throws {@link AuditUnavailableError} (rejects) when that refusal could not be recorded: the pause stays,
 *   the recorded decision still on record (asked about again by the next lookup)
 */
export async function completeRecorded(control: SuspensionControl, marker: SuspensionMarker, recorded: AuditEvent): Promise<boolean> {
  const runner = control.runner;
  const details = recorded.details;
  const text = (value: unknown): string => (typeof value === "string" ? value : "");
  // Carried out before (its hook run) by an owner that could not store the cleared marker: only the marker is left to clear.
  const applied = recorded.event === SETTLEMENT_APPLIED;
  const event = decidedEvent(recorded);
  const decider = text(applied ? details.decider : deciderOf(recorded));
  const asked = !applied && (event === "agent.resume" || (event === "agent.deny" && details.expired !== true));
  if (asked && !(await carriesOut(control, marker, recorded, decider))) return false;
  runner
    .requireServices()
    .logger.warn(
      `'${runner.agent.name}' came back SUSPENDED under the pause ${marker.suspensionId}, whose ${event} is already on record (the process ended before its marker was cleared); completing that decision without a second receipt${applied ? " (it was carried out before: its hook does not run again)" : ""}`,
    );
  control.settle(marker, { verdict: event === "agent.deny" ? "deny" : "resume", by: decider });
  const stored = await control.persistMarker(event === "agent.deny" ? "deny" : "resume", undefined);
  throwIfFenced(control, undefined);
  if (runner.currentStatus !== ProcessStatus.SUSPENDED) return true;
  runner.transition(ProcessStatus.RUNNING);
  if (applied) return true;
  if (!stored && (event === "agent.resume" || event === "agent.deny")) await recordApplied(control, marker, event, decider);
  if (event === "agent.resume") {
    await runHook(runner, "onResume", () => runner.agent.onResume(decider, { ...marker }), runner.options.shutdownTimeoutMs);
  } else if (event === "agent.deny") {
    await runHook(runner, "onDeny", () => runner.agent.onDeny(decider, { ...marker }, text(details.reason)), runner.options.shutdownTimeoutMs);
  }
  return true;
}

/**
 * Asks `authorizeResume` whether this owner carries out the decision
 * `recorded` of `decider`; on a refusal records `agent.settlement.refused`
 * (logged) and resolves `false`.
 */
async function carriesOut(control: SuspensionControl, marker: SuspensionMarker, recorded: AuditEvent, decider: string): Promise<boolean> {
  const runner = control.runner;
  try {
    await authorize(runner, decider, marker, recorded.event === "agent.deny" ? "deny" : "approve");
    return true;
  } catch (error) {
    if (!(error instanceof ResumeRefusedError)) throw error;
    const details = { suspensionId: marker.suspensionId, event: recorded.event, decider };
    if (!(await decisionReceipt(control, SETTLEMENT_REFUSED, details))) throw new AuditUnavailableError(runner.agent.name, recorded.event === "agent.deny" ? "deny" : "resume");
    runner
      .requireServices()
      .logger.warn(
        `'${runner.agent.name}' came back SUSPENDED under the pause ${marker.suspensionId}, whose ${recorded.event} by '${decider}' is on record, but authorizeResume refused to carry it out here; that decision is set aside (${SETTLEMENT_REFUSED} recorded) and the pause waits for a new one`,
        { error },
      );
    return false;
  }
}

/**
 * Completes, during a start, the decision on record for the pause this
 * incarnation restored (see {@link completeRecorded}): an approval resumes
 * the agent and runs `onResume` with the recorded approver, a denial or an
 * expiry runs `onDeny`, a cancellation clears the pause; the pause leaves
 * `listSuspended`. Only a decision of the pause's owner of record counts (a
 * fenced-out owner's receipt is ignored, owner-fence.ts). When the sink
 * cannot be read, the pause stays and is decided as before (the lookup is
 * repeated when the next decision arrives); that is logged. Never rejects.
 * @internal
 */
export async function rollForward(control: SuspensionControl): Promise<void> {
  const marker = control.marker;
  const runner = control.runner;
  if (marker === undefined || runner.currentStatus !== ProcessStatus.SUSPENDED || !runner.requireServices().telemetry.auditing) return;
  try {
    const recorded = await decisionOnRecord(control, marker, "resume");
    if (recorded !== undefined && control.marker === marker) await completeRecorded(control, marker, recorded);
  } catch (error) {
    runner.requireServices().logger.warn(`'${runner.agent.name}' came back SUSPENDED under ${marker.suspensionId}, and whether that pause is decided already could not be read from the audit sink; it stays SUSPENDED until decided`, { error });
  }
}
