import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import { assertReason } from "./decision-text.js";
import { checkExpiresInMs, type PauseOptions } from "./pause-deadline.js";
import { notAttached, type ProcessRunner } from "./process-runner.js";

/**
 * A pause, as `this.suspend()` returns it and `runtime.suspend()` resolves
 * with it: what a reply, a ticket or an approval request names so that the
 * decision applies to this pause only (`runtime.resume(name, approver, { suspensionId })`).
 *
 * @example
 * ```ts
 * const pause = this.suspend("payment over limit", { expiresInMs: 24 * 3600_000 });
 * return this.reply({ awaitingApproval: pause.suspensionId, decideBy: pause.expiresAt ?? null });
 * ```
 */
export interface Pause {
  /** Names the pause; the same as the marker's and the `agent.suspend` receipt's. */
  readonly suspensionId: string;
  /** When the pause is denied by `"expiry"`, ISO-8601 UTC with milliseconds; absent when it has no deadline. */
  readonly expiresAt?: string;
}

/**
 * The pause `suspensionId` with the deadline `expiresAt` (none when `undefined`).
 * @internal
 */
export function pauseOf(marker: Pick<SuspensionMarker, "suspensionId" | "expiresAt">, expiresAt: string | undefined = marker.expiresAt): Pause {
  return expiresAt === undefined ? { suspensionId: marker.suspensionId } : { suspensionId: marker.suspensionId, expiresAt };
}

/**
 * `this.suspend(reason, options)`: checks the arguments, asks the agent's
 * suspension control for a pause at the next loop boundary, and returns the
 * pause it is about to enter, or the one it is in (with the deadline this
 * call gave it, applied at the loop boundary, or its own).
 * @internal
 */
export function requestOwnPause(r: ProcessRunner, reason: string, options: PauseOptions): Pause {
  const name = r.agent.name;
  assertReason(`'${name}'.suspend(reason)`, reason);
  if (typeof options !== "object" || (options as unknown) === null) {
    throw new InvalidArgumentError("options", `'${name}'.suspend(reason, options): options must be an object (or left out), got ${describeValue(options)}`);
  }
  const expiresInMs = checkExpiresInMs(`'${name}'.suspend()`, options.expiresInMs);
  const suspension = r.suspension;
  if (r.services === undefined) throw notAttached(name); // no clock to date the pause, no id to give
  suspension.requestSuspend(reason, undefined, expiresInMs);
  const current = suspension.marker;
  // Paused already: the same pause, with the deadline this call gave it (applied at the loop boundary) or its own.
  if (current !== undefined) return pauseOf(current, suspension.request?.expiresAt ?? current.expiresAt);
  const asked = suspension.request?.marker;
  if (asked === undefined) throw notAttached(name); // unreachable: an attached, unpaused agent's request has its marker
  return pauseOf(asked);
}
