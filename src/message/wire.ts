import { describeValue } from "../errors/civitas-error.js";
import { InvalidWireMessageError } from "../errors/errors.js";
import { findNonJson, shortPath, type JsonObject } from "./json.js";
import { envelopeProblem, isTraceFlags, type Message } from "./message.js";

/** The wire schema version this library writes and reads. */
export const WIRE_SCHEMA_VERSION = 1;

/**
 * A message in wire form: snake_case keys and `schema_version`, the key
 * names of the Python Civitas envelope. Not yet interchangeable with it
 * (Python writes seconds and `ttl`): see docs/messaging.md, "The Python Civitas envelope".
 */
export interface WireMessage {
  /** Always {@link WIRE_SCHEMA_VERSION}; a reader refuses any other. */
  schema_version: number;
  /** `Message.id`. */
  id: string;
  /** `Message.type`. */
  type: string;
  /** `Message.sender`. */
  sender: string;
  /** `Message.recipient`. */
  recipient: string;
  /** `Message.correlationId`, or `null`. */
  correlation_id: string | null;
  /** `Message.replyTo`, or `null`. */
  reply_to: string | null;
  /** `Message.payload`. */
  payload: JsonObject;
  /** `Message.timestamp`, epoch milliseconds. */
  timestamp: number;
  /** `Message.traceId`. */
  trace_id: string;
  /** `Message.spanId`. */
  span_id: string;
  /** `Message.parentSpanId`, or `null`. */
  parent_span_id: string | null;
  /** W3C trace flags of the sending span; absent when the ids were minted outside any span. */
  trace_flags?: number;
  /** `Message.attempt`. */
  attempt: number;
  /** `Message.priority`. */
  priority: number;
  /** `Message.ttlMs`; absent without a TTL. */
  ttl_ms?: number;
}

/**
 * Converts a message to its wire form. Checks the envelope's fields (cheaply:
 * the payload's top level only, as its contents were checked when the
 * message was created), so what it returns is what {@link fromWire} reads back.
 *
 * @throws {@link InvalidWireMessageError} when `message` is not a message:
 *   not an object, or a field missing or of the wrong type.
 * @example
 * ```ts
 * const text = JSON.stringify(toWire(message));
 * ```
 */
export function toWire(message: Message): WireMessage {
  checkMessage(message);
  const wire: WireMessage = {
    schema_version: WIRE_SCHEMA_VERSION,
    id: message.id,
    type: message.type,
    sender: message.sender,
    recipient: message.recipient,
    correlation_id: message.correlationId ?? null,
    reply_to: message.replyTo ?? null,
    payload: message.payload,
    timestamp: message.timestamp,
    trace_id: message.traceId,
    span_id: message.spanId,
    parent_span_id: message.parentSpanId ?? null,
    attempt: message.attempt,
    priority: message.priority,
  };
  if (message.traceFlags !== undefined && message.traceFlags !== null) wire.trace_flags = message.traceFlags;
  if (message.ttlMs !== undefined && message.ttlMs !== null) wire.ttl_ms = message.ttlMs;
  return wire;
}

/** Throws `INVALID_WIRE_MESSAGE` naming the first field that keeps `value` from being a {@link Message}. */
function checkMessage(value: unknown): void {
  const problem = envelopeProblem(value);
  if (problem === undefined) return;
  const [field, expected] = problem;
  const got = field === "message" ? value : (value as Record<string, unknown>)[field];
  throw new InvalidWireMessageError(`toWire: ${field === "message" ? "the message" : `message field '${field}'`} must be ${expected}, got ${describeValue(got)}; pass a Message made by createMessage or fromWire`);
}

/**
 * Decodes a wire-form message (an object, or its JSON text), validating every
 * field: ids, `sender` and `recipient` are non-empty strings (`type`,
 * `correlation_id` and `reply_to` may be empty, as in {@link createMessage}),
 * and the payload is plain JSON nested at most `MAX_JSON_DEPTH` (1000) levels.
 *
 * @throws {@link InvalidWireMessageError} for malformed input, a payload nested too deeply, or an unknown `schema_version`.
 */
export function fromWire(input: unknown): Message {
  let wire: unknown = input;
  if (typeof input === "string" || input instanceof Uint8Array) {
    const text = typeof input === "string" ? input : Buffer.from(input).toString("utf8");
    try {
      wire = JSON.parse(text);
    } catch (err) {
      throw new InvalidWireMessageError(`wire message is not valid JSON: ${(err as Error).message}`);
    }
  }
  if (typeof wire !== "object" || wire === null || Array.isArray(wire)) {
    throw new InvalidWireMessageError(`wire message must be a JSON object, got ${describeValue(wire)}`);
  }
  const w = wire as Record<string, unknown>;
  if (w.schema_version !== WIRE_SCHEMA_VERSION) {
    throw new InvalidWireMessageError(
      `unsupported wire schema_version ${describeValue(w.schema_version)}; this civitas-ts reads version ${WIRE_SCHEMA_VERSION} — upgrade the reader or the sender`,
    );
  }
  const payload = w.payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new InvalidWireMessageError(`wire message field 'payload' must be a plain JSON object, got ${describeValue(payload)}`);
  }
  const bad = findNonJson(payload, "$.payload");
  if (bad) throw new InvalidWireMessageError(`wire message field 'payload' is not plain JSON at ${shortPath(bad[0])}: ${bad[1]}`);
  const message: { -readonly [K in keyof Message]: Message[K] } = {
    id: requireString(w, "id"),
    type: requireString(w, "type", true),
    sender: requireString(w, "sender"),
    recipient: requireString(w, "recipient"),
    payload: payload as JsonObject,
    timestamp: requireNumber(w, "timestamp", false),
    traceId: requireString(w, "trace_id"),
    spanId: requireString(w, "span_id"),
    attempt: requireNumber(w, "attempt", true),
    priority: requireNumber(w, "priority", true),
  };
  const correlationId = optionalString(w, "correlation_id", true);
  if (correlationId !== undefined) message.correlationId = correlationId;
  const replyTo = optionalString(w, "reply_to", true);
  if (replyTo !== undefined) message.replyTo = replyTo;
  const parentSpanId = optionalString(w, "parent_span_id");
  if (parentSpanId !== undefined) message.parentSpanId = parentSpanId;
  if (w.trace_flags !== undefined && w.trace_flags !== null) {
    if (!isTraceFlags(w.trace_flags)) throw new InvalidWireMessageError(`wire message field 'trace_flags' must be the W3C trace-flags byte (an integer 0-255), got ${describeValue(w.trace_flags)}`);
    message.traceFlags = w.trace_flags;
  }
  if (w.ttl_ms !== undefined && w.ttl_ms !== null) message.ttlMs = requireNumber(w, "ttl_ms", true);
  return message;
}

/** The string at `key`; empty only where `mayBeEmpty` (`type`, `correlation_id`, `reply_to`: any string `createMessage` accepts). */
function requireString(w: Record<string, unknown>, key: string, mayBeEmpty = false): string {
  const value = w[key];
  if (typeof value !== "string" || (value.length === 0 && !mayBeEmpty)) {
    throw new InvalidWireMessageError(`wire message field '${key}' must be a ${mayBeEmpty ? "" : "non-empty "}string, got ${describeValue(value)}`);
  }
  return value;
}

function optionalString(w: Record<string, unknown>, key: string, mayBeEmpty = false): string | undefined {
  const value = w[key];
  if (value === undefined || value === null) return undefined;
  return requireString(w, key, mayBeEmpty);
}

function requireNumber(w: Record<string, unknown>, key: string, integer: boolean): number {
  const value = w[key];
  const ok = typeof value === "number" && Number.isFinite(value) && value >= 0 && (!integer || Number.isInteger(value));
  if (!ok) {
    throw new InvalidWireMessageError(
      `wire message field '${key}' must be a non-negative ${integer ? "integer" : "number"}, got ${describeValue(value)}`,
    );
  }
  return value;
}
