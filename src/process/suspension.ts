import { describeValue } from "../errors/civitas-error.js";
import { InvalidApproverError, StateSchemaError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";

/** The key under which an agent's suspension marker lives inside its checkpointed `state`. */
export const SUSPENSION_KEY = "_civitas.suspended";

/**
 * Why and since when an agent is SUSPENDED. It is stored inside the agent's
 * `state` under {@link SUSPENSION_KEY}, in the same atomic write as the rest
 * of the state, so a pending action and its pause can never disagree after a crash.
 */
export interface SuspensionMarker {
  /** Why the agent was suspended. */
  readonly reason: string;
  /** When, ISO-8601 UTC with milliseconds. */
  readonly since: string;
  /** Always `null` while suspended: a marker records a pause, never an approval. */
  readonly approver: null;
  /** Identifies this pause; an approval names it (`runtime.resume(name, approver, { suspensionId })`). */
  readonly suspensionId: string;
}

/**
 * Reads and validates the marker in restored `state`, if any.
 * @throws {@link StateSchemaError} when the key holds anything but a well-formed marker
 * @internal
 */
export function readMarker(agent: string, state: JsonObject): SuspensionMarker | undefined {
  const value = state[SUSPENSION_KEY];
  if (value === undefined) return undefined;
  const m = value as Record<string, unknown>;
  const wellFormed =
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    typeof m.reason === "string" &&
    typeof m.since === "string" &&
    !Number.isNaN(Date.parse(m.since)) &&
    m.approver === null &&
    typeof m.suspensionId === "string" &&
    m.suspensionId.length > 0;
  if (!wellFormed) {
    throw new StateSchemaError(
      agent,
      `stored state of '${agent}' has a malformed suspension marker under '${SUSPENSION_KEY}' (${describeValue(value)}); it must be { reason, since, approver: null, suspensionId } — restore the record from a backup rather than guess whether the agent was paused`,
    );
  }
  return { reason: m.reason as string, since: m.since as string, approver: null, suspensionId: m.suspensionId as string };
}

/**
 * The object to persist: `state` with the runtime's own marker under
 * {@link SUSPENSION_KEY} (or without the key when not suspended), whatever
 * user code wrote there.
 * @internal
 */
export function persistableState(state: JsonObject, marker: SuspensionMarker | undefined): JsonObject {
  const copy: JsonObject = { ...state };
  if (marker === undefined) delete copy[SUSPENSION_KEY];
  else copy[SUSPENSION_KEY] = { ...marker };
  return copy;
}

/**
 * Checks an approver: a non-empty, non-whitespace string.
 * @throws {@link InvalidApproverError}
 * @internal
 */
export function assertApprover(agent: string, approver: unknown): asserts approver is string {
  if (typeof approver !== "string" || approver.trim().length === 0) throw new InvalidApproverError(agent, approver);
}
