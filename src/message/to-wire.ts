import { describeValue } from "../errors/civitas-error.js";
import { InvalidWireMessageError } from "../errors/errors.js";
import { isTraceFlags, type Message } from "./message.js";
import { WIRE_SCHEMA_VERSION, type WireMessage } from "./wire.js";
import { errorText, isCount, isNonEmptyString, isPlainObjectShallow, isTimestamp } from "./wire-checks.js";

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
