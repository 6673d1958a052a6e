import { describeValue } from "../errors/civitas-error.js";
import { InvalidWireMessageError } from "../errors/errors.js";
import { MAX_JSON_DEPTH, shortPath, type JsonObject, type JsonValue } from "./json.js";
import { isTraceFlags, type Message } from "./message.js";

/** The wire schema version this library writes and reads: Python Civitas 0.3's `schema_version`. */
export const WIRE_SCHEMA_VERSION = 1;

/**
 * A message in wire form: exactly the envelope Python Civitas 0.3's
 * `Message.to_dict()` writes, key for key and in its order, so the two
 * runtimes share a bus. `ttl_ms` and `trace_flags`, which Python ignores,
 * follow the fourteen keys when the message has them.
 */
export interface WireMessage {
  /** Always {@link WIRE_SCHEMA_VERSION}; a reader refuses any other. */
  schema_version: number;
  /** `Message.id`. */
  id: string;
  /** `Message.type`. */
  type: string;
  /** `Message.sender`; Python writes `""` on registration messages. */
  sender: string;
  /** `Message.recipient`; Python writes `""` on registration messages. */
  recipient: string;
  /** `Message.correlationId`, or `null`. */
  correlation_id: string | null;
  /** `Message.replyTo`, or `null`. */
  reply_to: string | null;
  /** `Message.payload`. */
  payload: JsonObject;
  /** `Message.timestamp` in unix **seconds**, a float (`timestamp / 1000`), as Python's `time.time()`. */
  timestamp: number;
  /** `Message.traceId`; Python writes `""` for a message sent outside any trace. */
  trace_id: string;
  /** `Message.spanId`; Python writes `""` for a message sent outside any trace. */
  span_id: string;
  /** `Message.parentSpanId`, or `null`. */
  parent_span_id: string | null;
  /** `Message.attempt`. */
  attempt: number;
  /** `Message.priority`. */
  priority: number;
  /** `Message.ttlMs`; absent without a TTL (a civitas-ts extra). */
  ttl_ms?: number;
  /** W3C trace flags of the sending span; absent when the ids were minted outside any span (a civitas-ts extra). */
  trace_flags?: number;
}

/** The keys of {@link WireMessage} in the order they are written: Python's fourteen, then the extras. */
export const WIRE_KEYS = Object.freeze([
  "schema_version",
  "id",
  "type",
  "sender",
  "recipient",
  "correlation_id",
  "reply_to",
  "payload",
  "timestamp",
  "trace_id",
  "span_id",
  "parent_span_id",
  "attempt",
  "priority",
  "ttl_ms",
  "trace_flags",
] as const);

type Fields = Record<(typeof WIRE_KEYS)[number], unknown>;

/**
 * Converts a message to its wire form, the Python Civitas envelope. Reads
 * every field of `message` once and checks it (the payload's top level only:
 * its contents were checked when the message was created), so what it
 * returns is what {@link fromWire} reads back. Whole-millisecond timestamps
 * (every timestamp the runtime stamps) survive the trip through seconds exactly.
 *
 * @throws {@link InvalidWireMessageError} when `message` is not a message:
 *   not an object, a field missing or of the wrong type, or a field that cannot be read.
 * @example
 * ```ts
 * const text = JSON.stringify(toWire(message));
 * ```
 */
export function toWire(message: Message): WireMessage {
  const m = readMessage(message);
  const wire: WireMessage = {
    schema_version: WIRE_SCHEMA_VERSION,
    id: m.id,
    type: m.type,
    sender: m.sender,
    recipient: m.recipient,
    correlation_id: m.correlationId ?? null,
    reply_to: m.replyTo ?? null,
    payload: m.payload,
    timestamp: m.timestamp / 1000,
    trace_id: m.traceId,
    span_id: m.spanId,
    parent_span_id: m.parentSpanId ?? null,
    attempt: m.attempt,
    priority: m.priority,
  };
  if (m.ttlMs != null) wire.ttl_ms = m.ttlMs;
  if (m.traceFlags != null) wire.trace_flags = m.traceFlags;
  return wire;
}

type MessageField = "id" | "type" | "sender" | "recipient" | "correlationId" | "replyTo" | "payload" | "timestamp" | "traceId" | "spanId" | "parentSpanId" | "attempt" | "priority" | "ttlMs" | "traceFlags";

/**
 * A snapshot of `value`'s fields, each read once and checked as {@link toWire}
 * checks them (the same `INVALID_WIRE_MESSAGE` naming the first bad one), for
 * an encoder that writes the wire form straight from it.
 * @internal
 */
export function readMessage(value: unknown): Message {
  const m = snapshotMessage(value);
  if (!isWellFormed(m)) throwBadField(m);
  return m as unknown as Message;
}

/** {@link throwBadField}'s checks in one expression, field by field: what every message the runtime sends goes through. */
function isWellFormed(m: Record<MessageField, unknown>): boolean {
  return (
    isNonEmptyString(m.id) &&
    typeof m.type === "string" &&
    typeof m.sender === "string" &&
    typeof m.recipient === "string" &&
    typeof m.traceId === "string" &&
    typeof m.spanId === "string" &&
    isPlainObjectShallow(m.payload) &&
    isTimestamp(m.timestamp) &&
    isCount(m.attempt) &&
    isCount(m.priority) &&
    (m.correlationId == null || typeof m.correlationId === "string") &&
    (m.replyTo == null || typeof m.replyTo === "string") &&
    (m.parentSpanId == null || isNonEmptyString(m.parentSpanId)) &&
    (m.traceFlags == null || isTraceFlags(m.traceFlags)) &&
    (m.ttlMs == null || isCount(m.ttlMs))
  );
}

/** Throws `INVALID_WIRE_MESSAGE` naming the first field of `m` that a message cannot have (in the order the fields are checked). */
function throwBadField(m: Record<MessageField, unknown>): void {
  const bad = (field: string, expected: string): never => {
    throw new InvalidWireMessageError(`toWire: message field '${field}' must be ${expected}, got ${describeValue(m[field as keyof typeof m])}; pass a Message made by createMessage or fromWire`);
  };
  if (!isNonEmptyString(m.id)) bad("id", "a non-empty string");
  if (typeof m.type !== "string") bad("type", "a string");
  // Empty names and trace ids are what Python writes on some messages: fromWire accepts them, so toWire writes them back.
  for (const key of ["sender", "recipient", "traceId", "spanId"] as const) if (typeof m[key] !== "string") bad(key, "a string");
  if (!isPlainObjectShallow(m.payload)) bad("payload", "a plain JSON object");
  if (!isTimestamp(m.timestamp)) bad("timestamp", "a non-negative number");
  if (!isCount(m.attempt)) bad("attempt", "a non-negative integer");
  if (!isCount(m.priority)) bad("priority", "a non-negative integer");
  for (const key of ["correlationId", "replyTo"] as const) if (m[key] != null && typeof m[key] !== "string") bad(key, "a string or absent");
  if (m.parentSpanId != null && !isNonEmptyString(m.parentSpanId)) bad("parentSpanId", "a non-empty string or absent");
  if (m.traceFlags != null && !isTraceFlags(m.traceFlags)) bad("traceFlags", "an integer 0-255 or absent");
  if (m.ttlMs != null && !isCount(m.ttlMs)) bad("ttlMs", "a non-negative integer or absent");
}

/**
 * {@link snapshot} of a message's fields, read by name (one object shape,
 * so the reads stay fast on the send path); the same refusals.
 */
function snapshotMessage(value: unknown): Record<MessageField, unknown> {
  const fix = "pass a Message made by createMessage or fromWire";
  if (typeof value !== "object" || value === null) throw new InvalidWireMessageError(`toWire: the message must be a JSON object, got ${describeValue(value)}; ${fix}`);
  try {
    if (Array.isArray(value)) throw new InvalidWireMessageError(`toWire: the message must be a JSON object, got an array; ${fix}`);
    const m = value as Record<MessageField, unknown>;
    return {
      id: m.id,
      type: m.type,
      sender: m.sender,
      recipient: m.recipient,
      correlationId: m.correlationId,
      replyTo: m.replyTo,
      payload: m.payload,
      timestamp: m.timestamp,
      traceId: m.traceId,
      spanId: m.spanId,
      parentSpanId: m.parentSpanId,
      attempt: m.attempt,
      priority: m.priority,
      ttlMs: m.ttlMs,
      traceFlags: m.traceFlags,
    };
  } catch (error) {
    if (error instanceof InvalidWireMessageError) throw error;
    throw new InvalidWireMessageError(`toWire: the message could not be read (${errorText(error)}); ${fix}`, { cause: error });
  }
}

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

/**
 * The largest encoded message (its bytes on the wire: JSON text or
 * MessagePack) that `fromWire` and the transports accept: 8 MiB. A larger
 * one is refused with `INVALID_WIRE_MESSAGE` before it is parsed or sent;
 * keep large data elsewhere and send a reference to it.
 */
export const MAX_WIRE_BYTES = 8 * 1024 * 1024;

/**
 * Refuses an encoded message of `bytes` bytes over {@link MAX_WIRE_BYTES}.
 * @throws {@link InvalidWireMessageError} (`INVALID_WIRE_MESSAGE`)
 * @internal
 */
export function checkWireSize(bytes: number): void {
  if (bytes > MAX_WIRE_BYTES) {
    throw new InvalidWireMessageError(`wire message is ${bytes} bytes, over the limit of ${MAX_WIRE_BYTES} bytes (MAX_WIRE_BYTES, 8 MiB); keep large data outside the message and send a reference to it`);
  }
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

function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function isTimestamp(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/** Whether `value` is an object that is not an array (its contents are judged elsewhere); false, not a throw, for a revoked proxy. */
function isPlainObjectShallow(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  try {
    return !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Whether `value` is a `Uint8Array`; false, not a throw, for a revoked proxy. */
function isBytes(value: unknown): value is Uint8Array {
  try {
    return value instanceof Uint8Array;
  } catch {
    return false;
  }
}

/** {@link describeValue} that never throws (a revoked proxy throws on every look). */
function safeDescribe(value: unknown): string {
  try {
    return describeValue(value);
  } catch {
    return "an unreadable object";
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : safeDescribe(error);
}
