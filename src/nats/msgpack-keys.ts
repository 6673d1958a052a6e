import { WIRE_KEYS } from "../message/wire.js";

/*
 * The MessagePack bytes of the wire keys, made once: the envelope writer
 * copies them, the regular-envelope reader compares them without decoding.
 */

/** The MessagePack bytes of a key (a fixstr), and of `schema_version: 1` with the key after it. */
function keyBytes(...keys: string[]): Uint8Array {
  return Uint8Array.from(keys.flatMap((key) => [0xa0 | key.length, ...Buffer.from(key, "latin1")]));
}

/** `schema_version: 1` and the `id` key after it. @internal */
export const VERSION_AND_ID = Uint8Array.from([...keyBytes("schema_version"), 0x01, ...keyBytes("id")]);
/** The `type` key. @internal */
export const TYPE = keyBytes("type");
/** The `sender` key. @internal */
export const SENDER = keyBytes("sender");
/** The `recipient` key. @internal */
export const RECIPIENT = keyBytes("recipient");
/** The `correlation_id` key. @internal */
export const CORRELATION_ID = keyBytes("correlation_id");
/** The `reply_to` key. @internal */
export const REPLY_TO = keyBytes("reply_to");
/** The `payload` key. @internal */
export const PAYLOAD = keyBytes("payload");
/** The `timestamp` key. @internal */
export const TIMESTAMP = keyBytes("timestamp");
/** The `trace_id` key. @internal */
export const TRACE_ID = keyBytes("trace_id");
/** The `span_id` key. @internal */
export const SPAN_ID = keyBytes("span_id");
/** The `parent_span_id` key. @internal */
export const PARENT_SPAN_ID = keyBytes("parent_span_id");
/** The `attempt` key. @internal */
export const ATTEMPT = keyBytes("attempt");
/** The `priority` key. @internal */
export const PRIORITY = keyBytes("priority");
/** The `ttl_ms` key. @internal */
export const TTL_MS = keyBytes("ttl_ms");
/** The `trace_flags` key. @internal */
export const TRACE_FLAGS = keyBytes("trace_flags");

/** The keys and `null`s from `correlation_id` to the `payload` key of a message that is neither a request nor a reply. @internal */
export const NO_REPLY = Uint8Array.from([...keyBytes("correlation_id"), 0xc0, ...keyBytes("reply_to"), 0xc0, ...keyBytes("payload")]);
/** From `parent_span_id` (`null`) to the `priority` key, with `attempt` 0: a message sent outside any handler, on its first attempt. @internal */
export const UNPARENTED_FIRST_ATTEMPT = Uint8Array.from([...keyBytes("parent_span_id"), 0xc0, ...keyBytes("attempt"), 0x00, ...keyBytes("priority")]);

/**
 * From the `timestamp` key to the `priority` key of a message with no parent
 * span, on its first attempt: its keys and headers with slots for the values
 * that differ from message to message, a float64 timestamp at
 * {@link TAIL_TIMESTAMP}, a 32-character trace id at {@link TAIL_TRACE_ID}
 * and a 16-character span id at {@link TAIL_SPAN_ID}.
 * @internal
 */
export const UNPARENTED_TAIL = Uint8Array.from([
  ...keyBytes("timestamp"),
  0xcb,
  ...new Array<number>(8).fill(0),
  ...keyBytes("trace_id"),
  0xd9,
  32,
  ...new Array<number>(32).fill(0),
  ...keyBytes("span_id"),
  0xa0 | 16,
  ...new Array<number>(16).fill(0),
  ...UNPARENTED_FIRST_ATTEMPT,
]);
/** Where {@link UNPARENTED_TAIL}'s timestamp goes. @internal */
export const TAIL_TIMESTAMP = 1 + "timestamp".length + 1;
/** Where {@link UNPARENTED_TAIL}'s trace id goes. @internal */
export const TAIL_TRACE_ID = TAIL_TIMESTAMP + 8 + 1 + "trace_id".length + 2;
/** Where {@link UNPARENTED_TAIL}'s span id goes. @internal */
export const TAIL_SPAN_ID = TAIL_TRACE_ID + 32 + 1 + "span_id".length + 1;

/** The MessagePack bytes of the wire keys (all fixstr) one after another, to compare without decoding; key `i` starts at `KEY_STARTS[i]`. @internal */
export const KEY_BYTES: Uint8Array = Uint8Array.from(WIRE_KEYS.flatMap((key) => [0xa0 | key.length, ...Buffer.from(key, "latin1")]));
/** Where key `i` starts in {@link KEY_BYTES}. @internal */
export const KEY_STARTS: Int32Array = Int32Array.from(WIRE_KEYS.map((_, i) => WIRE_KEYS.slice(0, i).reduce((sum, key) => sum + 1 + key.length, 0)));
