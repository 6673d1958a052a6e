import type { SuspensionMarker } from "../state/suspension-marker.js";

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
