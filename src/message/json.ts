import { describeValue } from "../errors/civitas-error.js";
import { PayloadNotSerializableError } from "../errors/errors.js";
import { isSealedJson } from "./sealed-json.js";

/** A JSON value: what can cross a process boundary unchanged. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;

/** A plain JSON object: message payloads and agent state are of this type. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/**
 * The JSON form of the type `T`, for type checks: `T` itself when it is
 * already a {@link JsonValue}, else `T` with every part that JSON cannot
 * carry turned into `never` — functions and methods (so `Date`, `Map` and
 * other built-in objects), `bigint`, `symbol`, `undefined` (a required field
 * that may be `undefined`; an optional field is fine), symbol keys. Unlike
 * {@link JsonValue} it accepts types declared as `interface`, which have no
 * index signature. Use it on a parameter, `value: T & JsonCompatible<T>`
 * (as a constraint, `T extends JsonCompatible<T>` would be circular; for
 * payloads, which are objects, {@link JsonPayload} is the constraint).
 *
 * It checks types, not values: a class whose instances hold only data
 * fields passes here and is refused at run time (only plain objects are
 * JSON), and so are `NaN` and `Infinity`.
 *
 * @example
 * ```ts
 * interface Line { sku: string; qty: number; note?: string }
 * function save<T>(value: T & JsonCompatible<T>): string {
 *   return JSON.stringify(value);
 * }
 * save<Line[]>([{ sku: "a", qty: 1 }]); // compiles
 * // save({ at: new Date() });          // does not: Date has methods
 * ```
 */
export type JsonCompatible<T> = T extends JsonValue
  ? T
  : T extends (...args: never[]) => unknown
    ? never
    : T extends readonly unknown[]
      ? { [K in keyof T]: JsonCompatible<T[K]> }
      : T extends object
        ? JsonFields<T>
        : never;

/**
 * `T`'s fields as {@link JsonCompatible} requires them. The `as K` clause
 * maps an array's methods too, so an array is never a JSON object.
 */
type JsonFields<T> = { [K in keyof T as K]: K extends string | number ? JsonCompatible<T[K]> : never };

/**
 * The type check of a message payload: `T extends JsonPayload<T>` holds
 * when `T` is a {@link JsonObject}, or an object type (an `interface`
 * included) whose fields are all {@link JsonCompatible}. Arrays,
 * primitives, `Date`, functions, `bigint`, `symbol` and required fields
 * that may be `undefined` fail it, anywhere in the payload. `send`, `ask`,
 * `reply`, `broadcast`, `sendCapable` and `createMessage` take their payload
 * types with this constraint; the run-time check (`PAYLOAD_NOT_SERIALIZABLE`)
 * stays, for what types cannot see.
 *
 * Generic code that forwards a payload constrains its type parameter the
 * same way (`P extends JsonPayload<P>`), or with `P extends JsonObject`.
 *
 * @example
 * ```ts
 * interface Payment { invoice: string; amountCents: number; memo?: string }
 * await runtime.send<Payment>("payments", { invoice: "INV-1", amountCents: 4000 });
 * function forward<P extends JsonPayload<P>>(agent: AgentProcess, to: string, payload: P) {
 *   return agent.send(to, payload);
 * }
 * ```
 */
export type JsonPayload<T> = JsonObject | (object & JsonFields<T>);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `$.key` for identifier-like keys, `$["a.b"]` for the rest, so every path is unambiguous. */
function childPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/**
 * How deeply JSON values may nest: objects and arrays inside one another, the
 * outermost counting as level 1. Deeper values are refused
 * (`PAYLOAD_NOT_SERIALIZABLE`, or `INVALID_WIRE_MESSAGE` from `fromWire`):
 * every recursive walk over a payload (this check, copying, encoding) then
 * stays far from the engine's stack limit, whatever a peer sends.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * Returns the JSON path of the first part of `value` that is not plain JSON,
 * and why, or `undefined` when all of it is. Plain JSON means: objects whose
 * prototype is `Object.prototype` or `null`, arrays, strings, finite numbers,
 * booleans and `null`, without cycles, nested at most {@link MAX_JSON_DEPTH}
 * levels deep. As for `JSON.stringify`, only enumerable string-keyed
 * properties count: symbol-keyed and non-enumerable ones are not part of the
 * value (looking for them would cost every message ~60 ns).
 *
 * @param path - the JSON path of `value` itself, prefixed to every path returned.
 * @param seen - the objects enclosing `value` (for cycle detection); its length is the nesting depth.
 */
export function findNonJson(value: unknown, path = "$", seen: unknown[] = []): [string, string] | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : [path, `${String(value)} is not a JSON number`];
    case "object": {
      if (value === null) return undefined;
      if (seen.includes(value)) return [path, "a circular reference"];
      if (seen.length >= MAX_JSON_DEPTH) return [path, `nested deeper than ${MAX_JSON_DEPTH} levels`];
      seen.push(value);
      try {
        if (Array.isArray(value)) {
          for (let i = 0; i < value.length; i++) {
            const bad = findNonJson(value[i], `${path}[${i}]`, seen);
            if (bad) return bad;
          }
          return undefined;
        }
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) return [path, `${describeValue(value)}, not a plain object`];
        for (const key in value) {
          const bad = findNonJson((value as Record<string, unknown>)[key], childPath(path, key), seen);
          if (bad) return bad;
        }
        return undefined;
      } finally {
        seen.pop();
      }
    }
    default:
      return [path, describeValue(value)];
  }
}

/**
 * Asserts that `value` is a plain JSON object (see {@link findNonJson}).
 * @param what - names the value in the error message (`payload from 'a' to 'b'`).
 * @throws {@link PayloadNotSerializableError} naming the first offending path,
 *   also for a value nested deeper than {@link MAX_JSON_DEPTH} levels.
 */
export function assertJsonObject(value: unknown, what: string): asserts value is JsonObject {
  if (isJsonObject(value)) return;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new PayloadNotSerializableError("$", `${what} must be a plain JSON object, got ${describeValue(value)}`);
  }
  const bad = findNonJson(value);
  if (bad) {
    const fix = bad[1].startsWith("nested deeper")
      ? "flatten it, or carry the deep part as a JSON string"
      : "convert it to strings, numbers, booleans, null, arrays or plain objects";
    throw new PayloadNotSerializableError(bad[0], `${what} is not JSON-serializable at ${shortPath(bad[0])}: ${bad[1]}; ${fix}`);
  }
}

/**
 * `path` as shown in an error message: a very long one (a deeply nested
 * value) keeps its start and end, so the message stays readable. The
 * error's `path` field keeps it whole.
 * @internal
 */
export function shortPath(path: string): string {
  return path.length <= 160 ? path : `${path.slice(0, 80)}…${path.slice(-70)}`;
}

/**
 * Whether `value` is a plain JSON object, checked without allocating: the
 * common, valid case on the hot path. Very deep values (or cycles) answer
 * `false` here and are left to {@link findNonJson} to judge.
 */
export function isJsonObject(value: unknown): value is JsonObject {
  // The top level here, not in the recursive isPlainJson: small enough to be inlined where messages are
  // composed, where V8 knows the payload's map and folds the prototype check instead of a runtime call.
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) if (!isPlainJson((value as Record<string, unknown>)[key], 1)) return false;
  return true;
}

/**
 * {@link isJsonObject}, but without looking at `value[skipped]`: for an
 * object whose value under that key is replaced before anyone reads it (the
 * suspension marker's key in a state about to be stored).
 * @internal
 */
export function isJsonObjectExcept(value: unknown, skipped: string): value is JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) if (key !== skipped && !isPlainJson((value as Record<string, unknown>)[key], 1)) return false;
  return true;
}

function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth > 64) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!isPlainJson(value[i], depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) if (!isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/**
 * A deep copy of a plain JSON value: what `JSON.parse(JSON.stringify(value))`
 * returns for it (`-0` becomes `0`, every object gets `Object.prototype`,
 * keys keep their order), without building the text in between. Only for
 * values already checked to be plain JSON.
 * @internal
 */
export function copyJson<T extends JsonValue>(value: T): T {
  return copyValue(value) as T;
}

/** What {@link copyChecked} returns for a part that is not plain JSON (or that it leaves to {@link findNonJson}). */
const NOT_JSON: unique symbol = Symbol("not JSON");

/**
 * The copy {@link copyJson} makes of `value` when {@link isJsonObject} holds
 * for it, checked and copied in one walk (each property read once);
 * `undefined` otherwise, for the caller to judge it with
 * {@link assertJsonObject} (a value deeper than the quick check goes can still be JSON).
 * @internal
 */
export function copyIfJsonObject(value: unknown): JsonObject | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const copy = copyChecked(value, 0);
  return copy === NOT_JSON ? undefined : (copy as JsonObject);
}

/** {@link isPlainJson} and {@link copyValue} at once: the copy, or {@link NOT_JSON}. */
function copyChecked(value: unknown, depth: number): JsonValue | typeof NOT_JSON {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : NOT_JSON;
    case "object": {
      if (value === null) return null;
      if (depth > 64) return NOT_JSON;
      if (isSealedJson(value)) return value as JsonObject; // deeply frozen plain JSON the runtime built: nothing to copy
      if (Array.isArray(value)) {
        const items: JsonValue[] = [];
        for (let i = 0; i < value.length; i++) {
          const item = copyChecked(value[i], depth + 1);
          if (item === NOT_JSON) return NOT_JSON;
          items.push(item);
        }
        return items;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return NOT_JSON;
      const copy: JsonObject = {};
      for (const key in value) {
        const item = copyChecked((value as Record<string, unknown>)[key], depth + 1);
        if (item === NOT_JSON) return NOT_JSON;
        // Assigning "__proto__" would set the prototype; JSON.parse makes it an own property.
        if (key === "__proto__") Object.defineProperty(copy, key, { value: item, writable: true, enumerable: true, configurable: true });
        else copy[key] = item;
      }
      return copy;
    }
    default:
      return NOT_JSON;
  }
}

function copyValue(value: JsonValue): JsonValue {
  if (typeof value !== "object" || value === null) return value === 0 ? 0 : value;
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (let i = 0; i < value.length; i++) items.push(copyValue(value[i] as JsonValue));
    return items;
  }
  const copy: JsonObject = {};
  for (const key in value) {
    const item = copyValue(value[key] as JsonValue);
    // Assigning "__proto__" would set the prototype; JSON.parse makes it an own property.
    if (key === "__proto__") Object.defineProperty(copy, key, { value: item, writable: true, enumerable: true, configurable: true });
    else copy[key] = item;
  }
  return copy;
}
