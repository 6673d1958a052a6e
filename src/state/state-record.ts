import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, StateSchemaError } from "../errors/errors.js";
import { assertJsonObject, findNonJson, isJsonObject, shortPath, type JsonObject } from "../message/json.js";

/** The schema version of stored state records this library writes and reads. */
export const STATE_RECORD_VERSION = 1;

/**
 * Serializes `state` for storage, refusing anything that is not plain JSON
 * (`PAYLOAD_NOT_SERIALIZABLE`) before the store is touched.
 */
export function encodeState(name: string, state: JsonObject): string {
  assertJsonObject(state, `state of '${name}'`);
  return JSON.stringify(state);
}

/**
 * Parses and validates a stored record.
 * @throws {@link StateSchemaError} for an unknown version, bad JSON or a non-object state.
 */
export function decodeState(name: string, version: unknown, text: unknown): JsonObject {
  if (version !== STATE_RECORD_VERSION) {
    throw new StateSchemaError(
      name,
      `stored state of '${name}' has schema version ${String(version)}, this civitas-ts reads version ${STATE_RECORD_VERSION}; migrate the record or run a matching civitas-ts`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(text));
  } catch (err) {
    throw new StateSchemaError(name, `stored state of '${name}' is not valid JSON; restore it from a backup or delete it`, {
      cause: err,
    });
  }
  return checkStoredState(name, parsed);
}

/**
 * `state` as read from a store, refused with `STATE_SCHEMA` unless it is a
 * plain JSON object an agent can run on and checkpoint again (finite
 * numbers, nested at most `MAX_JSON_DEPTH` levels).
 * @throws {@link StateSchemaError} naming where the record goes wrong.
 */
export function checkStoredState(name: string, state: unknown): JsonObject {
  if (isJsonObject(state)) return state;
  if (typeof state !== "object" || state === null || Array.isArray(state)) {
    throw new StateSchemaError(name, `stored state of '${name}' is not a JSON object, got ${describeValue(state)}; restore it from a backup or delete it`);
  }
  const bad = findNonJson(state, "$");
  if (bad !== undefined) {
    throw new StateSchemaError(name, `stored state of '${name}' is not plain JSON at ${shortPath(bad[0])}: ${bad[1]}; restore it from a backup or delete it`);
  }
  return state as JsonObject;
}

const LONE_SURROGATE = /\p{Cs}/u;

/** Refuses a state name that is not a non-empty, well-formed string. */
export function assertStateName(name: unknown): asserts name is string {
  if (typeof name !== "string" || name.length === 0) {
    throw new InvalidArgumentError(
      "name",
      `a state store needs a non-empty string name, got ${describeValue(name)}; pass the agent's name`,
    );
  }
  if (LONE_SURROGATE.test(name)) {
    throw new InvalidArgumentError(
      "name",
      `state name ${JSON.stringify(name)} contains a lone UTF-16 surrogate and cannot be stored faithfully; use well-formed Unicode`,
    );
  }
}
