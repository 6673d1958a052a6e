import { InvalidWireMessageError } from "../errors/errors.js";
import type { JsonObject } from "./json.js";

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
