import type { Span } from "@opentelemetry/api";
import type { JsonObject } from "../message/json.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import { STORED } from "../state/in-memory-state-store.js";
import { settlesWithin } from "../time/deadline.js";
import { runHookWithDeadline, overrides } from "./hooks.js";
import type { ProcessRunner } from "./process-runner.js";
import type { SuspensionControl } from "./suspension-control.js";

/*
 * A pause's announcement: its span, its `onSuspend` and its `agent.suspend`
 * receipt, and the write that records them done (see SuspensionMarker.announced).
 */

/**
 * The `civitas.agent.suspend` span of a pause being announced (`restored`: announced on a restart), when tracing.
 * @internal
 */
export function suspendSpan(runner: ProcessRunner, marker: SuspensionMarker, restored: boolean): Span | undefined {
  const telemetry = runner.requireServices().telemetry;
  if (!telemetry.tracing) return undefined;
  return telemetry.startSpan("civitas.agent.suspend", {
    "civitas.agent.name": runner.agent.name,
    "civitas.suspend.reason": marker.reason,
    "civitas.suspend.id": marker.suspensionId,
    ...(restored ? { "civitas.suspend.restored": true } : {}),
  });
}

/**
 * Persists the (already set) marker, runs `onSuspend`, and records the
 * `agent.suspend` receipt. While there is an `onSuspend` or a receipt to
 * come, the marker is stored flagged as not announced, and a second write
 * clears the flag once both are done: a kill in between re-announces the
 * pause on restart (`onSuspend` runs at least once, and the receipt may be
 * recorded twice under the same `suspensionId`), instead of losing its
 * announcement. `stored`: the store already holds the flagged marker (a
 * restored pause), so the first write is skipped.
 *
 * `undefined` when it is over at once: nothing is owed (no `onSuspend`, no
 * audit sink) and the in-memory store says the write is done ({@link STORED}).
 * @internal
 */
export function announcePause(control: SuspensionControl, marker: SuspensionMarker, span: Span | undefined, stored = false): Promise<void> | undefined {
  const services = control.runner.requireServices();
  const notifying = overrides(control.runner, "onSuspend");
  const flagged = notifying || services.telemetry.auditing;
  control.announcementOwed = flagged;
  const persisting = stored ? undefined : control.runner.persist();
  if (persisting !== STORED || flagged) return announceAfterWrite(control, marker, span, persisting, notifying, flagged);
  // Stored, and nothing owed (announcementOwed is false already): what announceAfterWrite ends with, at once.
  services.telemetry.setAttribute(span, "civitas.suspend.durable", true);
  services.telemetry.endSpan(span);
  return undefined;
}

/**
 * The rest of {@link announcePause} once the marker's write is under way
 * (`persisting`), or without one for a pause the store holds already (`undefined`).
 */
async function announceAfterWrite(
  control: SuspensionControl,
  marker: SuspensionMarker,
  span: Span | undefined,
  persisting: Promise<void> | undefined,
  notifying: boolean,
  flagged: boolean,
): Promise<void> {
  const services = control.runner.requireServices();
  const stored = persisting === undefined;
  let durable = stored;
  if (persisting !== undefined) {
    // Awaited here rather than through persistMarker, whose wrapper promise is one more microtask turn per pause;
    // not at all when the in-memory store says the write is done.
    try {
      if (persisting !== STORED) await persisting;
      durable = true;
    } catch (error) {
      durable = control.degraded("suspend", span, error);
    }
  }
  const notified = !notifying || (await runHookWithDeadline(control.runner, "onSuspend", () => control.runner.agent.onSuspend(marker.reason), control.runner.options.shutdownTimeoutMs));
  const recorded = !services.telemetry.auditing || (await suspendReceipt(control.runner, "agent.suspend", suspendDetails(marker, durable)));
  // The same pause (its reason may have been updated meanwhile), unless it was resumed or cleared: then nothing is owed.
  if (control.marker?.suspensionId === marker.suspensionId) {
    // Owed until both are done: a later write (or a restart after a kill) keeps the flag, and a resume records the receipt first.
    control.announcementOwed = !(notified && recorded);
    if ((flagged || stored) && durable && !control.announcementOwed) {
      await control.runner.persist().catch((error: unknown) => {
        services.logger.warn(`'${control.runner.agent.name}' is paused and stored so, but could not record that its pause was announced; a restart will announce it again (onSuspend and its receipt)`, { error });
      });
    }
  }
  services.telemetry.setAttribute(span, "civitas.suspend.durable", durable);
  services.telemetry.endSpan(span);
}

/** The `agent.suspend` receipt's details (SPEC §11.11). */
function suspendDetails(marker: SuspensionMarker, durable: boolean): JsonObject {
  const details: JsonObject = { reason: marker.reason, suspensionId: marker.suspensionId, since: marker.since, durable };
  if (marker.expiresAt !== undefined) details.expiresAt = marker.expiresAt;
  return details;
}

/**
 * Records a suspend's audit row, waiting at most the agent's
 * `shutdownTimeoutMs` for the sink: the pause does not depend on its
 * receipt (a resume does), and a sink that never answers must not hold the
 * agent's control messages, or `runtime.suspend`, forever.
 * @internal
 */
export async function suspendReceipt(runner: ProcessRunner, event: string, details: JsonObject): Promise<boolean> {
  const services = runner.requireServices();
  if (!services.telemetry.auditing) return true;
  const limitMs = runner.options.shutdownTimeoutMs;
  const recording = services.telemetry.audit(event, runner.agent.name, details);
  if (!(await settlesWithin(recording, services.clock, limitMs))) {
    services.logger.warn(`audit: the sink did not record '${event}' of '${runner.agent.name}' within ${limitMs} ms (the agent's shutdownTimeoutMs); moving on without waiting for it`);
    return false;
  }
  return await recording;
}
