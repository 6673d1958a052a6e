import type { Span } from "@opentelemetry/api";
import { SETTLEMENT_APPLIED } from "../audit/audit-event.js";
import { AuditUnavailableError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { ProcessStatus } from "../contracts/process-status.js";
import { completeRecorded, decisionOnRecord } from "./recorded-decision.js";
import type { SuspensionControl } from "./suspension-control.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import { STORED } from "../state/in-memory-state-store.js";
import { runHook } from "./hooks.js";
import { afterFailedPersist } from "./fencing.js";

/**
 * Why a pause was cancelled rather than decided: the agent was halted
 * (`civitas.eval.halt`), or removed for good by its `DynamicSupervisor`
 * (`despawn`, `stop`, out of restarts, or a clean exit of a paused child).
 */
export type CancelCause = "halt" | "despawned" | "stopped" | "restarts_exhausted" | "clean_exit";

/** The decider of a pause whose deadline passed. */
const EXPIRY_DECIDER = "expiry";

/**
 * Records `event` of the pause `marker`, after the pause's own
 * `agent.suspend` receipt when that one is still owed (a decision never
 * names a pause the log does not hold). `true` when both are on record, or
 * when there is no audit sink.
 */
async function receiptFirst(control: SuspensionControl, marker: SuspensionMarker, event: string, details: JsonObject): Promise<boolean> {
  const telemetry = control.runner.requireServices().telemetry;
  if (!telemetry.auditing) return true;
  const name = control.runner.agent.name;
  // Owed also for a pause restored unannounced whose start failed before it could announce it.
  const announced =
    !(control.announcementOwed || marker.announced === false) ||
    (await telemetry.audit("agent.suspend", name, { reason: marker.reason, suspensionId: marker.suspensionId, since: marker.since, recordedAtDecision: true }));
  return announced && (await decisionReceipt(control, event, details));
}

/**
 * Records the receipt `event` of a decision. A sink that refuses it because
 * another process owns the agent now (`STATE_FENCED`) is lost ownership, as
 * a refused write is: the agent stops (see fencing.ts) and the error is
 * rethrown, for the decision's caller. `false` when it could not be recorded.
 * @internal
 */
export async function decisionReceipt(control: SuspensionControl, event: string, details: JsonObject): Promise<boolean> {
  const runner = control.runner;
  try {
    return await runner.requireServices().telemetry.auditDecision(event, runner.agent.name, details);
  } catch (error) {
    return afterFailedPersist(runner, error);
  }
}

/**
 * Throws the `STATE_FENCED` of a decision whose cleared marker was refused
 * because another process took the agent over meanwhile: the decision did
 * not take effect here, and its caller must not be told it did (the new
 * owner decides the pause; a receipt of this fenced-out owner is not a
 * decision, docs/postgres.md).
 * @internal
 */
export function throwIfFenced(control: SuspensionControl, span: Span | undefined): void {
  const fenced = control.runner.fencedOut;
  if (fenced === undefined) return;
  control.runner.requireServices().telemetry.endSpan(span, fenced);
  throw fenced;
}

/**
 * Denies the pause `marker`, as `resume` approves one: the `agent.deny`
 * receipt comes before the effect (without it nothing changes:
 * `AUDIT_UNAVAILABLE`), then the marker is cleared and persisted in one
 * write, the status becomes RUNNING, and `onDeny(decider, marker, reason)`
 * runs (never `onResume`), so the agent drops its pending action. Traced as
 * `civitas.agent.deny`.
 * @throws {@link AuditUnavailableError} (rejects) when the receipt could not be recorded
 * @internal
 */
export async function denyPause(control: SuspensionControl, decider: string, marker: SuspensionMarker, reason: string, expired: boolean): Promise<void> {
  const runner = control.runner;
  const services = runner.requireServices();
  const span = services.telemetry.startSpan("civitas.agent.deny", {
    "civitas.agent.name": runner.agent.name,
    "civitas.suspend.id": marker.suspensionId,
    "civitas.deny.decider": decider,
    "civitas.deny.expired": expired,
  });
  if (!(await receiptFirst(control, marker, "agent.deny", { decider, suspensionId: marker.suspensionId, reason, expired }))) {
    // No denied pause without its receipt: the pause stays, nothing has changed yet.
    const error = new AuditUnavailableError(runner.agent.name, "deny");
    services.telemetry.endSpan(span, error);
    throw error;
  }
  await takeEffect(control, services, marker, "deny", span, "onDeny", () => runner.agent.onDeny(decider, { ...marker }, reason), decider);
}

/**
 * Records that the decision `event` of `decider` is being carried out here
 * although its cleared marker could not be stored (degraded durability), before
 * its hook runs: a restart that finds the pause stored then completes the
 * decision without running the hook again (recorded-decision.ts). When the
 * sink cannot record it either, that is logged: such a restart runs the hook again.
 * @internal
 */
export async function recordApplied(control: SuspensionControl, marker: SuspensionMarker, event: string, decider: string): Promise<void> {
  const runner = control.runner;
  const telemetry = runner.requireServices().telemetry;
  if (!telemetry.auditing) return;
  if (await telemetry.audit(SETTLEMENT_APPLIED, runner.agent.name, { suspensionId: marker.suspensionId, event, decider })) return;
  runner
    .requireServices()
    .logger.warn(
      `'${runner.agent.name}': neither the cleared marker of the pause ${marker.suspensionId} nor the record that its ${event} is carried out could be stored; a restart before the next write would carry it out (and run its hook) again`,
    );
}

/**
 * Carries out the decision (`change`) of the pause `marker` once its receipt
 * is on record: the marker is cleared and persisted in one write, then the
 * status becomes RUNNING and `hook` runs (`call`), unless a stop began
 * meanwhile: the decision took effect (receipt on record, marker gone), but
 * this incarnation does not run again. Ends `span` (through `services`,
 * those the decision began with). `undefined` when it is over at once (the
 * in-memory store's write is done, and there is no hook to wait for): the
 * decision's caller then has no promise to wait for.
 * @throws {@link StateFencedError} when the write was refused as fenced out (see {@link throwIfFenced})
 * @internal
 */
export function takeEffect(
  control: SuspensionControl,
  services: RuntimeServices,
  marker: SuspensionMarker,
  change: "resume" | "deny",
  span: Span | undefined,
  hook: "onResume" | "onDeny",
  call: () => Promise<void>,
  decider: string,
): Promise<void> | undefined {
  control.settle(marker, { verdict: change, by: decider });
  const persisting = control.runner.persist();
  // Awaited in takeEffectAfterWrite rather than through persistMarker, whose wrapper promise is one more microtask
  // turn per decision; not at all when the in-memory store says the write is done.
  if (persisting !== STORED) return takeEffectAfterWrite(control, services, marker, change, span, hook, call, decider, persisting);
  throwIfFenced(control, span);
  return runDecided(control, services, span, hook, call);
}

/** The rest of {@link takeEffect} once its write is under way (`persisting`). */
async function takeEffectAfterWrite(
  control: SuspensionControl,
  services: RuntimeServices,
  marker: SuspensionMarker,
  change: "resume" | "deny",
  span: Span | undefined,
  hook: "onResume" | "onDeny",
  call: () => Promise<void>,
  decider: string,
  persisting: Promise<void>,
): Promise<void> {
  let stored: boolean;
  try {
    await persisting;
    stored = true;
  } catch (error) {
    stored = control.degraded(change, span, error);
  }
  throwIfFenced(control, span);
  if (!stored) await recordApplied(control, marker, change === "resume" ? "agent.resume" : "agent.deny", decider);
  const running = runDecided(control, services, span, hook, call);
  if (running !== undefined) await running;
}

/**
 * The end of a decision that took effect: RUNNING again and `hook` run,
 * unless a stop began meanwhile; then `span` ends. `undefined` when there
 * is no hook to wait for.
 */
function runDecided(control: SuspensionControl, services: RuntimeServices, span: Span | undefined, hook: "onResume" | "onDeny", call: () => Promise<void>): Promise<void> | undefined {
  const runner = control.runner;
  if (runner.currentStatus === ProcessStatus.SUSPENDED) {
    runner.transition(ProcessStatus.RUNNING);
    const hooked = runHook(runner, hook, call, runner.options.shutdownTimeoutMs);
    if (hooked !== undefined) return hooked.then(() => services.telemetry.endSpan(span));
  }
  services.telemetry.endSpan(span);
  return undefined;
}

/**
 * Denies the current pause by decider `"expiry"` (`expired: true`) when its
 * deadline has passed and the agent is still SUSPENDED under it; called by
 * the loop at a boundary. `authorizeResume` is not asked: the deadline was
 * part of the pause. If the receipt cannot be recorded the pause stays (it
 * can still be resumed or denied, and a restart finds its deadline passed
 * and tries again); that is logged, never thrown.
 * @internal
 */
export function expirePause(control: SuspensionControl): Promise<void> | undefined {
  if (control.deadline !== undefined) control.deadline.due = false;
  const runner = control.runner;
  const marker = control.marker;
  const expiresAt = marker?.expiresAt;
  if (runner.currentStatus !== ProcessStatus.SUSPENDED || marker === undefined || expiresAt === undefined) return undefined;
  const expiring = decisionOnRecord(control, marker, "deny")
    .then(async (recorded) => {
      // A recorded decision this owner set aside (authorizeResume) leaves the pause to its deadline.
      if (recorded === undefined || !(await completeRecorded(control, marker, recorded))) await denyPause(control, EXPIRY_DECIDER, marker, `its deadline ${expiresAt} passed`, true);
    });
  return expiring.catch((error: unknown) => {
    runner.requireServices().logger.error(`'${runner.agent.name}' passed the deadline of its pause ${marker.suspensionId} (${expiresAt}) but could not be denied; it stays SUSPENDED until resumed or denied`, { error });
  });
}

/**
 * Cancels the current pause, if any, on the record: an
 * `agent.suspend.cancelled` receipt `{ suspensionId, cause, by }`, then the
 * marker is cleared in memory (the caller stores that). Resolves `false`
 * when the receipt could not be recorded: the marker is then kept, so the
 * store and the log still agree that the pause is live (a later start
 * comes back SUSPENDED under it, to be resumed or denied); that is logged.
 * @internal
 */
export async function cancelPause(control: SuspensionControl, cause: CancelCause, by: string): Promise<boolean> {
  const marker = control.marker;
  if (marker === undefined) return true;
  const runner = control.runner;
  // A pause decided before a crash (its receipt on record, its marker not yet cleared) is settled already.
  const recorded = await decisionOnRecord(control, marker, "deny").catch(() => null);
  if (recorded !== undefined && recorded !== null) {
    control.settle(marker);
    return true;
  }
  // A receipt refused as fenced out stops the agent (fencing.ts): the pause stays the new owner's.
  const receipted = recorded === null ? false : await receiptFirst(control, marker, "agent.suspend.cancelled", { suspensionId: marker.suspensionId, cause, by }).catch(() => false);
  if (!receipted) {
    runner
      .requireServices()
      .logger.error(
        `the audit sink could not record that the pause ${marker.suspensionId} of '${runner.agent.name}' was cancelled (${cause}, by '${by}'); its marker is kept, so a later start of '${runner.agent.name}' comes back SUSPENDED under it, to be resumed or denied`,
      );
    return false;
  }
  control.settle(marker);
  return true;
}

/**
 * A halt (`civitas.eval.halt` from `by`) of a paused agent: its pause is
 * cancelled on the record, then its cleared marker is stored. `undefined`
 * when the agent holds no pause (nothing to wait for).
 * @internal
 */
export function cancelOnHalt(control: SuspensionControl, by: string): Promise<void> | undefined {
  if (control.marker === undefined) return undefined;
  return cancelPause(control, "halt", by).then(async (cancelled) => {
    if (!cancelled) return;
    await control.runner.persist().catch((error: unknown) => {
      control.runner.requireServices().logger.warn(`'${control.runner.agent.name}' was halted and its pause cancelled, but the cleared marker could not be stored; a start on this store would come back SUSPENDED`, { error });
    });
  });
}
