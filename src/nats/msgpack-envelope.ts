import type { Message } from "../message/message.js";
import type { WireMessage } from "../message/wire.js";
import { ATTEMPT, CORRELATION_ID, NO_REPLY, PARENT_SPAN_ID, PAYLOAD, PRIORITY, RECIPIENT, REPLY_TO, SENDER, SPAN_ID, TIMESTAMP, TRACE_FLAGS, TRACE_ID, TTL_MS, TYPE, UNPARENTED_FIRST_ATTEMPT, VERSION_AND_ID } from "./msgpack-keys.js";
import { copied, copyEnvelope, envelopeLength, shared, startEnvelope, writeFloat64, writeKey, writePayload, writeSegment, writeString, writeValue } from "./msgpack-value-writer.js";

const utf8 = new TextEncoder();

/**
 * Writes the envelope as Python's `msgpack.packb(envelope, use_bin_type=True)`
 * does, byte for byte: a map in the envelope's key order, strings as str
 * types, integers in their smallest form, other numbers as float64 — and the
 * `timestamp` always as float64, as Python's float is, even when it is a
 * whole number of seconds (which `@msgpack/msgpack` alone would write as an
 * integer). The envelope's own fields are written here; the payload by `@msgpack/msgpack`.
 * @internal
 */
export function encodeMsgpackEnvelope(wire: WireMessage): Uint8Array {
  let count = 0;
  for (const _key in wire) count++;
  startEnvelope(count);
  for (const key in wire) {
    const value: unknown = (wire as unknown as Record<string, unknown>)[key];
    writeString(key);
    if (key === "timestamp") writeFloat64(value as number);
    else writeValue(value);
  }
  return copied();
}

/**
 * {@link encodeMsgpackEnvelope} of `toWire(message)`, written field by field
 * from a message {@link readMessage} checked (no wire object in between):
 * the same bytes, sooner, as an array of their own.
 * @internal
 */
export function encodeMsgpackMessage(message: Message): Uint8Array {
  writeMessage(message);
  return copied();
}

/**
 * {@link encodeMsgpackMessage}, returned as a view into a buffer shared
 * with the envelopes encoded before and after it (never written over):
 * for bytes handed on at once, such as to the NATS connection, which copies them.
 * @internal
 */
export function encodeMsgpackShared(message: Message): Uint8Array {
  writeMessage(message);
  return shared();
}

/**
 * The bytes from the `type` key to the end of the recipient of the last
 * envelope written, and the three strings they were written from: a run of
 * sends from one sender to one agent repeats them, and copies those bytes
 * instead of writing the three strings again.
 */
const head = new Uint8Array(256);
let headLength = 0;
/** The first {@link headLength} bytes of {@link head}, copied with one `set` (past a dozen bytes a byte loop costs more). */
let headBytes = head.subarray(0, 0);
let headType = "";
let headSender = "";
let headRecipient = "";

/** Writes `type`, `sender` and `recipient` with their keys, from {@link head} when they repeat the last envelope's. */
function writeHead(type: string, sender: string, recipient: string): void {
  if (headLength > 0 && type === headType && sender === headSender && recipient === headRecipient) {
    writeSegment(headBytes);
    return;
  }
  // Counted from the envelope's start: a buffer that grows meanwhile moves the envelope.
  const offset = envelopeLength();
  writeKey(TYPE);
  writeString(type);
  writeKey(SENDER);
  writeString(sender);
  writeKey(RECIPIENT);
  writeString(recipient);
  const length = envelopeLength() - offset;
  headLength = 0;
  if (length > head.length) return;
  copyEnvelope(offset, head);
  headType = type;
  headSender = sender;
  headRecipient = recipient;
  headLength = length;
  headBytes = head.subarray(0, length);
}

function writeMessage(m: Message): void {
  startEnvelope(14 + (m.ttlMs == null ? 0 : 1) + (m.traceFlags == null ? 0 : 1));
  writeSegment(VERSION_AND_ID);
  writeString(m.id);
  writeHead(m.type, m.sender, m.recipient);
  if (m.correlationId == null && m.replyTo == null) writeSegment(NO_REPLY);
  else {
    writeKey(CORRELATION_ID);
    writeValue(m.correlationId ?? null);
    writeKey(REPLY_TO);
    writeValue(m.replyTo ?? null);
    writeKey(PAYLOAD);
  }
  writePayload(m.payload);
  writeKey(TIMESTAMP);
  writeFloat64(m.timestamp / 1000);
  writeKey(TRACE_ID);
  writeString(m.traceId);
  writeKey(SPAN_ID);
  writeString(m.spanId);
  if (m.parentSpanId == null && m.attempt === 0) writeSegment(UNPARENTED_FIRST_ATTEMPT);
  else {
    writeKey(PARENT_SPAN_ID);
    writeValue(m.parentSpanId ?? null);
    writeKey(ATTEMPT);
    writeValue(m.attempt);
    writeKey(PRIORITY);
  }
  writeValue(m.priority);
  if (m.ttlMs != null) {
    writeKey(TTL_MS);
    writeValue(m.ttlMs);
  }
  if (m.traceFlags != null) {
    writeKey(TRACE_FLAGS);
    writeValue(m.traceFlags);
  }
}

/** UTF-8 bytes of `text`. @internal */
export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}
