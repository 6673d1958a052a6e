import type { AuditEvent } from "../audit/audit-event.js";
import { AuditUnavailableError } from "../errors/errors.js";
import { ProcessStatus } from "./process-status.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import { runHook } from "./hooks.js";
import { throwIfFenced } from "./pause-settlement.js";
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
 * carrying out would have, without a second receipt: the marker is
 * cleared and persisted, the status becomes RUNNING, and `onResume` (with
 * the recorded approver) or `onDeny` (with the recorded decider and reason)
 * runs; a recorded cancellation runs neither.
 */
export async function completeRecorded(control: SuspensionControl, marker: SuspensionMarker, recorded: AuditEvent): Promise<void> {
  const runner = control.runner;
  const details = recorded.details;
  const text = (value: unknown): string => (typeof value === "string" ? value : "");
  runner
    .requireServices()
    .logger.warn(
      `'${runner.agent.name}' came back SUSPENDED under the pause ${marker.suspensionId}, whose ${recorded.event} is already on record (the process ended before its marker was cleared); completing that decision without a second receipt`,
    );
  control.settle(marker);
  await control.persistMarker(recorded.event === "agent.deny" ? "deny" : "resume", undefined);
  throwIfFenced(control, undefined);
  if (runner.currentStatus !== ProcessStatus.SUSPENDED) return;
  runner.transition(ProcessStatus.RUNNING);
  if (recorded.event === "agent.resume") {
    await runHook(runner, "onResume", () => runner.agent.onResume(text(details.approver), { ...marker }), runner.options.shutdownTimeoutMs);
  } else if (recorded.event === "agent.deny") {
    await runHook(runner, "onDeny", () => runner.agent.onDeny(text(details.decider), { ...marker }, text(details.reason)), runner.options.shutdownTimeoutMs);
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
