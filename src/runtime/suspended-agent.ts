import type { SuspensionMarker } from "../state/suspension-marker.js";

/** One suspended agent, as {@link Runtime.listSuspended} reports it. */
export interface SuspendedAgent {
  /** The agent's name. */
  readonly name: string;
  /** Why it was suspended (the latest reason, when suspended again). */
  readonly reason: string;
  /** When the pause began, ISO-8601 UTC with milliseconds. */
  readonly since: string;
  /** Names this pause; pass it to `resume` so an approval cannot settle a later pause. */
  readonly suspensionId: string;
  /** When the pause is denied by `"expiry"`, ISO-8601 UTC, when it has a deadline. */
  readonly expiresAt?: string;
}

/**
 * The entry of `marker` for the agent `name`, as `listSuspended` reports it.
 * @internal
 */
export function suspendedAgent(name: string, marker: SuspensionMarker): SuspendedAgent {
  return {
    name,
    reason: marker.reason,
    since: marker.since,
    suspensionId: marker.suspensionId,
    ...(marker.expiresAt === undefined ? {} : { expiresAt: marker.expiresAt }),
  };
}
