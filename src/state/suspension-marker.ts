import { describeValue } from "../errors/civitas-error.js";
import { StateSchemaError } from "../errors/errors.js";
import { assertJsonObject, isJsonObjectExcept, type JsonObject } from "../message/json.js";
import { isSealedJson, sealJson } from "../message/sealed-json.js";

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
  /** What the agent was when it paused; a resume refuses a changed identity unless told to accept it. */
  readonly identity?: AgentIdentity;
  /**
   * The pause's deadline, ISO-8601 UTC with milliseconds, when it was given
   * one (`expiresInMs`): once it has passed (also while the process was
   * down) the pause is denied by decider `"expiry"`. Absent: no deadline.
   */
  readonly expiresAt?: string;
  /**
   * `false` on a pause stored before its announcement was done: asked for
   * with `this.suspend()` and written by a checkpoint before the loop
   * boundary, or entered and written before its `onSuspend` and
   * `agent.suspend` receipt were done. If a crash, kill or stop comes
   * first, they are still owed, and are given when the agent is restored
   * into it. Absent once announced.
   */
  readonly announced?: false;
}

/** `marker` as announced: without the `announced: false` flag. @internal */
export function announcedMarker(marker: SuspensionMarker): SuspensionMarker {
  if (marker.announced === undefined) return marker;
  const { announced: _announced, ...rest } = marker;
  return rest;
}

/** An agent's code identity: its class's static `version` and its capability set. */
export interface AgentIdentity {
  /** The agent class's `static version`, or `null` when it declares none. */
  readonly version: string | null;
  /** Its capabilities, sorted. */
  readonly capabilities: readonly string[];
}

/** `version@1.2.0 [pay, refund]`: an identity in words, for messages and audit rows. */
export function describeIdentity(identity: AgentIdentity | undefined): string {
  if (identity === undefined) return "an unrecorded identity";
  return `version ${identity.version ?? "(none)"} with capabilities [${identity.capabilities.join(", ")}]`;
}

/** Whether two identities are the same. @internal */
export function sameIdentity(a: AgentIdentity, b: AgentIdentity): boolean {
  return a === b || a.version === b.version && a.capabilities.length === b.capabilities.length && a.capabilities.every((c, i) => c === b.capabilities[i]);
}

/**
 * Reads and validates the marker in restored `state`, if any: a frozen
 * marker (as the agent holds it), read once.
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
    isTime(m.since) &&
    m.approver === null &&
    typeof m.suspensionId === "string" &&
    m.suspensionId.length > 0;
  if (!wellFormed) {
    throw new StateSchemaError(
      agent,
      `stored state of '${agent}' has a malformed suspension marker under '${SUSPENSION_KEY}' (${describeValue(value)}); it must be { reason, since, approver: null, suspensionId } — restore the record from a backup rather than guess whether the agent was paused`,
    );
  }
  if (m.expiresAt !== undefined && (typeof m.expiresAt !== "string" || !isTime(m.expiresAt))) {
    throw new StateSchemaError(agent, `stored state of '${agent}' has a suspension marker whose 'expiresAt' is ${describeValue(m.expiresAt)}; it is an ISO-8601 time or absent — restore the record from a backup`);
  }
  if (m.announced !== undefined && m.announced !== false) {
    throw new StateSchemaError(agent, `stored state of '${agent}' has a suspension marker whose 'announced' is ${describeValue(m.announced)}; it is false or absent — restore the record from a backup`);
  }
  // Built field by field and frozen here: every restored pause is read once per start, and the agent keeps it frozen.
  // The identity goes into the literal, so the common marker keeps all its fields in the object itself.
  const identity = m.identity === undefined ? undefined : readIdentity(agent, m.identity);
  const marker: { -readonly [K in keyof SuspensionMarker]: SuspensionMarker[K] } =
    identity === undefined
      ? { reason: m.reason as string, since: m.since as string, approver: null, suspensionId: m.suspensionId as string }
      : { reason: m.reason as string, since: m.since as string, approver: null, suspensionId: m.suspensionId as string, identity };
  if (typeof m.expiresAt === "string") marker.expiresAt = m.expiresAt;
  if (m.announced === false) marker.announced = false;
  return sealJson(marker); // its parts were checked above: strings, null, false and a sealed identity
}

/** The keys a stored marker may hold, and the keys of its identity. */
const MARKER_KEYS = new Set(["reason", "since", "approver", "suspensionId", "identity", "expiresAt", "announced"]);
const IDENTITY_KEYS = new Set(["version", "capabilities"]);

/**
 * Whether `value`, a stored marker {@link readMarker} accepted, holds
 * nothing but the marker's own fields, so it can stay in the agent's
 * `state` as it is instead of a fresh {@link markerJson} copy.
 * @internal
 */
export function isMarkerJson(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  for (const key in m) if (!MARKER_KEYS.has(key)) return false;
  const identity = m.identity as Record<string, unknown> | undefined;
  if (identity !== undefined) for (const key in identity) if (!IDENTITY_KEYS.has(key)) return false;
  return true;
}

/** The identity read last: agents restored one after another usually share one, and it is frozen. */
let lastIdentity: AgentIdentity | undefined;

/** The identity a stored marker recorded, frozen; `STATE_SCHEMA` when malformed. */
function readIdentity(agent: string, value: unknown): AgentIdentity {
  const identity = value as Record<string, unknown> | null;
  const capabilities = typeof identity === "object" && identity !== null ? identity.capabilities : undefined;
  let valid = Array.isArray(capabilities) && (identity?.version === null || typeof identity?.version === "string");
  if (valid) for (const capability of capabilities as unknown[]) valid &&= typeof capability === "string";
  if (!valid) {
    throw new StateSchemaError(agent, `stored state of '${agent}' has a suspension marker with a malformed identity (${describeValue(value)}); restore the record from a backup`);
  }
  const read = { version: identity?.version as string | null, capabilities: capabilities as string[] };
  if (lastIdentity !== undefined && sameIdentity(lastIdentity, read)) return lastIdentity;
  lastIdentity = frozenIdentity(read);
  return lastIdentity;
}

/**
 * Whether `text` is a time `Date.parse` reads. The form the runtime writes
 * (`2026-07-03T09:12:44.120Z`, from `toISOString`) with every field in a
 * range valid in any month is recognised here without it: a restore reads
 * one per agent, and `Date.parse` costs several times as much.
 */
function isTime(text: string): boolean {
  if (
    text.length === 24 &&
    text.charCodeAt(4) === 45 /* - */ &&
    text.charCodeAt(7) === 45 &&
    text.charCodeAt(10) === 84 /* T */ &&
    text.charCodeAt(13) === 58 /* : */ &&
    text.charCodeAt(16) === 58 &&
    text.charCodeAt(19) === 46 /* . */ &&
    text.charCodeAt(23) === 90 /* Z */ &&
    digits(text, 0, 4) >= 0 &&
    inRange(digits(text, 5, 2), 1, 12) &&
    inRange(digits(text, 8, 2), 1, 28) &&
    inRange(digits(text, 11, 2), 0, 23) &&
    inRange(digits(text, 14, 2), 0, 59) &&
    inRange(digits(text, 17, 2), 0, 59) &&
    digits(text, 20, 3) >= 0
  ) {
    return true;
  }
  return !Number.isNaN(Date.parse(text));
}

/** The decimal number in `count` characters of `text` from `at`, or -1 when one of them is not a digit. */
function digits(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function inRange(value: number, min: number, max: number): boolean {
  return value >= min && value <= max;
}

/**
 * The object to persist: `state` with the runtime's own marker under
 * {@link SUSPENSION_KEY} (or without the key when not suspended), whatever
 * user code wrote there; flagged `announced: false` when `announced` is false.
 * @throws {@link PayloadNotSerializableError} when `state` is not a plain JSON object
 * @internal
 */
export function persistableState(state: JsonObject, marker: SuspensionMarker | undefined, agent = "the agent", announced = true): JsonObject {
  // Checked before the copy below: spreading a Map, Date, array or class instance would quietly make it a plain object.
  // What `state` holds under the marker's key is not looked at: the copy replaces it (or drops it).
  if (!isJsonObjectExcept(state, SUSPENSION_KEY)) assertJsonObject(state, `state of '${agent}'`);
  const copy: JsonObject = { ...state };
  // A delete is a runtime call even for a key that is not there: the common record holds none.
  if (marker === undefined) {
    if (SUSPENSION_KEY in copy) delete copy[SUSPENSION_KEY];
  } else copy[SUSPENSION_KEY] = announced ? storedMarker(marker) : markerJson({ ...marker, announced: false });
  return copy;
}

/**
 * `marker` itself as the JSON object stored: a store copies or serializes
 * what it is given (a sealed marker, deeply frozen, it keeps as it is), so
 * no copy is made for it here.
 */
function storedMarker(marker: SuspensionMarker): JsonObject {
  return marker as unknown as JsonObject;
}

/**
 * A deeply frozen copy of `marker` (its identity and capabilities too), or
 * `marker` itself when it is one already: what the runtime keeps as an
 * agent's current pause and what `agent.suspension` and the hooks are given,
 * so that no code handed a marker can change the pause the runtime persists.
 * Sealed (sealed-json.ts) when its fields are what the types say, so a
 * store keeps it as it is.
 * @internal
 */
export function frozenMarker(marker: SuspensionMarker): SuspensionMarker {
  if (isSealedJson(marker)) return marker;
  const copy: { -readonly [K in keyof SuspensionMarker]: SuspensionMarker[K] } = { reason: marker.reason, since: marker.since, approver: null, suspensionId: marker.suspensionId };
  if (marker.identity !== undefined) copy.identity = frozenIdentity(marker.identity);
  if (marker.expiresAt !== undefined) copy.expiresAt = marker.expiresAt;
  if (marker.announced === false) copy.announced = false;
  const plain =
    typeof copy.reason === "string" &&
    typeof copy.since === "string" &&
    typeof copy.suspensionId === "string" &&
    (copy.expiresAt === undefined || typeof copy.expiresAt === "string") &&
    (copy.identity === undefined || isSealedJson(copy.identity));
  return plain ? sealJson(copy) : Object.freeze(copy);
}

/**
 * A deeply frozen copy of `identity` (its capabilities sorted as given), or
 * `identity` itself when it is one already; sealed when its version is a
 * string or `null` and its capabilities are strings.
 * @internal
 */
export function frozenIdentity(identity: AgentIdentity): AgentIdentity {
  if (isSealedJson(identity)) return identity;
  const { version, capabilities } = identity;
  const plain = (version === null || typeof version === "string") && capabilities.every((capability) => typeof capability === "string");
  if (!plain) return Object.freeze({ version, capabilities: Object.freeze([...capabilities]) });
  return sealJson({ version, capabilities: sealJson([...capabilities]) });
}

/** The marker as a plain JSON object (what is stored and shown in `state`). @internal */
export function markerJson(marker: SuspensionMarker): JsonObject {
  const json: JsonObject = { reason: marker.reason, since: marker.since, approver: null, suspensionId: marker.suspensionId };
  const identity = marker.identity;
  if (identity !== undefined) {
    // Copied by index: a spread of the (frozen) list is an iterator builtin call.
    const capabilities: string[] = [];
    for (let i = 0; i < identity.capabilities.length; i++) capabilities.push(identity.capabilities[i] as string);
    json.identity = { version: identity.version, capabilities };
  }
  if (marker.expiresAt !== undefined) json.expiresAt = marker.expiresAt;
  if (marker.announced === false) json.announced = false;
  return json;
}
