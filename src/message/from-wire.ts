import { describeValue } from "../errors/civitas-error.js";
import { InvalidWireMessageError } from "../errors/errors.js";
import { MAX_JSON_DEPTH, shortPath, type JsonObject, type JsonValue } from "./json.js";
import { isTraceFlags, type Message } from "./message.js";
import { checkWireSize, MAX_WIRE_BYTES, WIRE_KEYS, WIRE_SCHEMA_VERSION } from "./wire.js";
import { errorText, isBytes, isCount, isPlainObjectShallow, isTimestamp, safeDescribe } from "./wire-checks.js";

type Fields = Record<(typeof WIRE_KEYS)[number], unknown>;

/**
 * Decodes a wire-form message — the Python Civitas envelope, as an object,
 * its JSON text or UTF-8 bytes — reading every field exactly once and
 * checking it before anything is built, so a proxy or getter cannot answer
 * one thing to the check and another to the copy. The payload is copied.
 *
 * Accepted as Python writes them: empty `sender`, `recipient`, `trace_id`
 * and `span_id`, `null` optionals, unknown extra keys (ignored), and a
 * float `timestamp` in seconds (converted to epoch milliseconds). Refused:
 * a `schema_version` other than 1 (checked first), any of the fourteen keys
 * missing or mistyped, a payload that is not a plain JSON object nested at
 * most `MAX_JSON_DEPTH` (1000) levels, bad `ttl_ms`/`trace_flags` extras, and
 * any object whose fields cannot be read (a revoked proxy, a throwing getter),
 * and JSON text or bytes over {@link MAX_WIRE_BYTES} (8 MiB).
 *
 * @throws {@link InvalidWireMessageError} (`INVALID_WIRE_MESSAGE`) for all of the above.
 * @example
 * ```ts
 * const message = fromWire('{"schema_version": 1, "id": "…", …}');
 * ```
 */
export function fromWire(input: unknown): Message {
  let wire: unknown = input;
  if (typeof input === "string" || isBytes(input)) {
    checkWireSize(typeof input === "string" ? (input.length * 3 <= MAX_WIRE_BYTES ? input.length : Buffer.byteLength(input, "utf8")) : input.byteLength);
    const text = typeof input === "string" ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString("utf8");
    try {
      wire = JSON.parse(text);
    } catch (err) {
      throw new InvalidWireMessageError(`wire message is not valid JSON: ${(err as Error).message}`);
    }
  }
  return fromFields(snapshot(wire, WIRE_KEYS, "wire message", "send the Python Civitas envelope (Message.to_dict()) as a JSON object"));
}

/** Builds the message from fields each read once, checking every one. */
function fromFields(w: Fields): Message {
  if (w.schema_version !== WIRE_SCHEMA_VERSION) {
    throw new InvalidWireMessageError(
      `unsupported wire schema_version ${describeValue(w.schema_version)}; this civitas-ts reads version ${WIRE_SCHEMA_VERSION} — upgrade the reader or the sender`,
    );
  }
  const message: { -readonly [K in keyof Message]: Message[K] } = {
    id: requireString(w, "id", false),
    type: requireString(w, "type", true),
    sender: requireString(w, "sender", true),
    recipient: requireString(w, "recipient", true),
    payload: readPayload(w.payload),
    timestamp: secondsToMs(w),
    traceId: requireString(w, "trace_id", true),
    spanId: requireString(w, "span_id", true),
    attempt: requireCount(w, "attempt"),
    priority: requireCount(w, "priority"),
  };
  const correlationId = nullableString(w, "correlation_id");
  if (correlationId !== null) message.correlationId = correlationId;
  const replyTo = nullableString(w, "reply_to");
  if (replyTo !== null) message.replyTo = replyTo;
  const parentSpanId = nullableString(w, "parent_span_id");
  if (parentSpanId !== null && parentSpanId.length > 0) message.parentSpanId = parentSpanId; // "" is no parent
  if (w.trace_flags != null) {
    if (!isTraceFlags(w.trace_flags)) throw new InvalidWireMessageError(`wire message field 'trace_flags' must be the W3C trace-flags byte (an integer 0-255), got ${describeValue(w.trace_flags)}`);
    message.traceFlags = w.trace_flags;
  }
  if (w.ttl_ms != null) message.ttlMs = requireCount(w, "ttl_ms");
  return message;
}

/**
 * Reads each of `keys` from `value` exactly once. Anything that is not a
 * plain, readable object — a revoked proxy, a getter or trap that throws —
 * is refused with `INVALID_WIRE_MESSAGE`, never another error.
 */
function snapshot<K extends string>(value: unknown, keys: readonly K[], what: string, fix: string): Record<K, unknown> {
  if (typeof value !== "object" || value === null) throw new InvalidWireMessageError(`${what} must be a JSON object, got ${describeValue(value)}; ${fix}`);
  try {
    if (Array.isArray(value)) throw new InvalidWireMessageError(`${what} must be a JSON object, got an array; ${fix}`);
    const source = value as Record<string, unknown>;
    const fields = {} as Record<K, unknown>;
    for (const key of keys) fields[key] = source[key];
    return fields;
  } catch (error) {
    if (error instanceof InvalidWireMessageError) throw error;
    throw new InvalidWireMessageError(`${what} could not be read (${errorText(error)}); ${fix}`, { cause: error });
  }
}

/** The payload, copied in one pass that reads each value once; refused unless it is plain JSON. */
function readPayload(value: unknown): JsonObject {
  if (!isPlainObjectShallow(value)) throw new InvalidWireMessageError(`wire message field 'payload' must be a plain JSON object, got ${safeDescribe(value)}`);
  try {
    return copyPlainJson(value, "$.payload", []) as JsonObject;
  } catch (error) {
    if (error instanceof NotJson) throw new InvalidWireMessageError(`wire message field 'payload' is not plain JSON at ${shortPath(error.path)}: ${error.reason}`);
    throw new InvalidWireMessageError(`wire message field 'payload' could not be read (${errorText(error)})`, { cause: error });
  }
}

/** Where and why a payload is not plain JSON (caught and reported as `INVALID_WIRE_MESSAGE`). */
class NotJson extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(reason);
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function copyPlainJson(value: unknown, path: string, enclosing: object[]): JsonValue {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new NotJson(path, `${String(value)} is not a JSON number`);
      return value === 0 ? 0 : value;
    case "object": {
      if (value === null) return null;
      if (enclosing.includes(value)) throw new NotJson(path, "a circular reference");
      if (enclosing.length >= MAX_JSON_DEPTH) throw new NotJson(path, `nested deeper than ${MAX_JSON_DEPTH} levels`);
      enclosing.push(value);
      try {
        if (Array.isArray(value)) {
          const items: JsonValue[] = [];
          const length = value.length;
          for (let i = 0; i < length; i++) items.push(copyPlainJson((value as unknown[])[i], `${path}[${i}]`, enclosing));
          return items;
        }
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) throw new NotJson(path, `${safeDescribe(value)}, not a plain object`);
        const copy: JsonObject = {};
        for (const key in value) {
          const item = copyPlainJson((value as Record<string, unknown>)[key], IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`, enclosing);
          // Assigning "__proto__" would set the prototype; JSON.parse makes it an own property.
          if (key === "__proto__") Object.defineProperty(copy, key, { value: item, writable: true, enumerable: true, configurable: true });
          else copy[key] = item;
        }
        return copy;
      } finally {
        enclosing.pop();
      }
    }
    default:
      throw new NotJson(path, safeDescribe(value));
  }
}

/**
 * Unix seconds to epoch milliseconds. A float that some whole millisecond
 * writes exactly (`ms / 1000`) reads back as that whole millisecond, so a
 * civitas-ts timestamp survives the trip; Python's sub-millisecond digits are kept as a fraction.
 */
function secondsToMs(w: Fields): number {
  const seconds = w.timestamp;
  if (!isTimestamp(seconds)) throw new InvalidWireMessageError(`wire message field 'timestamp' must be a non-negative number of unix seconds, got ${describeValue(seconds)}`);
  return wireSecondsToMs(seconds);
}

/** A wire `timestamp` (unix seconds, already checked) as the epoch milliseconds `fromWire` gives it (see `secondsToMs`). @internal */
export function wireSecondsToMs(seconds: number): number {
  const whole = Math.round(seconds * 1000);
  return whole / 1000 === seconds ? whole : seconds * 1000;
}

function requireString(w: Fields, key: keyof Fields, mayBeEmpty: boolean): string {
  const value = w[key];
  if (typeof value !== "string" || (value.length === 0 && !mayBeEmpty)) {
    throw new InvalidWireMessageError(`wire message field '${key}' must be a ${mayBeEmpty ? "" : "non-empty "}string, got ${describeValue(value)}`);
  }
  return value;
}

/** A string or `null`; the key must be present (Python writes every one of its fourteen). */
function nullableString(w: Fields, key: keyof Fields): string | null {
  const value = w[key];
  if (value === null) return null;
  if (typeof value !== "string") throw new InvalidWireMessageError(`wire message field '${key}' must be a string or null, got ${describeValue(value)}`);
  return value;
}

function requireCount(w: Fields, key: keyof Fields): number {
  const value = w[key];
  if (!isCount(value)) throw new InvalidWireMessageError(`wire message field '${key}' must be a non-negative integer, got ${describeValue(value)}`);
  return value;
}
