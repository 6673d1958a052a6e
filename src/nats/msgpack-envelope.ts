import type { Message } from "../message/message.js";
import type { WireMessage } from "../message/wire.js";
import { ATTEMPT, CORRELATION_ID, NO_REPLY, PARENT_SPAN_ID, PAYLOAD, PRIORITY, RECIPIENT, REPLY_TO, SENDER, SPAN_ID, TIMESTAMP, TAIL_SPAN_ID, TAIL_TIMESTAMP, TAIL_TRACE_ID, TRACE_FLAGS, TRACE_ID, TTL_MS, TYPE, UNPARENTED_FIRST_ATTEMPT, UNPARENTED_TAIL, VERSION_AND_ID } from "./msgpack-keys.js";
import { copied, copyEnvelope, envelopeLength, fillAscii, fillFloat64, rewind, shared, startEnvelope, writeFloat64, writeId, writeKey, writePayload, writeSegment, writeString, writeTemplate, writeValue } from "./msgpack-value-writer.js";

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
 * The bytes from `schema_version` to the end of the recipient — on to the
 * `payload` key for a message that is neither a request nor a reply — of the
 * last envelope written with an ASCII id of 36 characters (every id
 * `uuidv7` mints), its id's slot at {@link FRONT_ID}, and what they were
 * written from: a run of sends from one sender to one agent repeats them,
 * and copies them and fills in the id instead of writing its keys and strings again.
 */
const front = new Uint8Array(512);
/** The first bytes of {@link front} that hold the last front, copied with one `set` (past a dozen bytes a byte loop costs more). */
let frontBytes = front.subarray(0, 0);
let frontType = "";
let frontSender = "";
let frontRecipient = "";
let frontUnreplied = false;
/** Where the id goes in {@link front}: after `schema_version`, the `id` key and the id's str8 header. */
const FRONT_ID = VERSION_AND_ID.length + 2;
/** The bytes of a 36-character ASCII id with its header. */
const ID_BYTES = 2 + 36;

/** Writes from `schema_version` to the end of the recipient (to the `payload` key when `unreplied`), from {@link front} when it repeats the last front. */
function writeFront(m: Message, unreplied: boolean): void {
  if (frontBytes.length > 0 && m.type === frontType && m.sender === frontSender && m.recipient === frontRecipient && unreplied === frontUnreplied && m.id.length === 36) {
    const at = writeTemplate(frontBytes);
    if (fillAscii(at + FRONT_ID, m.id)) return;
    rewind(at);
  }
  // Counted from the envelope's start: a buffer that grows meanwhile moves the envelope.
  const offset = envelopeLength();
  writeSegment(VERSION_AND_ID);
  writeId(m.id);
  const idBytes = envelopeLength() - offset - VERSION_AND_ID.length;
  writeKey(TYPE);
  writeString(m.type);
  writeKey(SENDER);
  writeString(m.sender);
  writeKey(RECIPIENT);
  writeString(m.recipient);
  if (unreplied) writeSegment(NO_REPLY);
  const length = envelopeLength() - offset;
  frontBytes = front.subarray(0, 0);
  if (m.id.length !== 36 || idBytes !== ID_BYTES || length > front.length) return;
  copyEnvelope(offset, front);
  frontType = m.type;
  frontSender = m.sender;
  frontRecipient = m.recipient;
  frontUnreplied = unreplied;
  frontBytes = front.subarray(0, length);
}

function writeMessage(m: Message): void {
  startEnvelope(14 + (m.ttlMs == null ? 0 : 1) + (m.traceFlags == null ? 0 : 1));
  const unreplied = m.correlationId == null && m.replyTo == null;
  writeFront(m, unreplied);
  if (!unreplied) {
    writeKey(CORRELATION_ID);
    writeValue(m.correlationId ?? null);
    writeKey(REPLY_TO);
    writeValue(m.replyTo ?? null);
    writeKey(PAYLOAD);
  }
  writePayload(m.payload);
  if (m.parentSpanId != null || m.attempt !== 0 || m.traceId.length !== 32 || m.spanId.length !== 16 || !writeUnparentedTail(m)) {
    writeKey(TIMESTAMP);
    writeFloat64(m.timestamp / 1000);
    writeKey(TRACE_ID);
    writeId(m.traceId);
    writeKey(SPAN_ID);
    writeId(m.spanId);
    if (m.parentSpanId == null && m.attempt === 0) writeSegment(UNPARENTED_FIRST_ATTEMPT);
    else {
      writeKey(PARENT_SPAN_ID);
      writeValue(m.parentSpanId ?? null);
      writeKey(ATTEMPT);
      writeValue(m.attempt);
      writeKey(PRIORITY);
    }
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

/**
 * Writes from the `timestamp` key to the `priority` key of a message with no
 * parent span on its first attempt, whose trace and span ids have their
 * usual lengths, from {@link UNPARENTED_TAIL}: one copy and three values
 * instead of six keys and values. Returns `false`, having written nothing,
 * when an id is not ASCII.
 */
function writeUnparentedTail(m: Message): boolean {
  const at = writeTemplate(UNPARENTED_TAIL);
  fillFloat64(at + TAIL_TIMESTAMP, m.timestamp / 1000);
  if (fillAscii(at + TAIL_TRACE_ID, m.traceId) && fillAscii(at + TAIL_SPAN_ID, m.spanId)) return true;
  rewind(at);
  return false;
}

/** UTF-8 bytes of `text`. @internal */
export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}
