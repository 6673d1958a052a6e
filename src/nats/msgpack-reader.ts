import type { JsonObject, JsonValue } from "../message/json.js";
import type { Message } from "../message/message.js";
import { wireSecondsToMs } from "../message/from-wire.js";
import { WIRE_SCHEMA_VERSION } from "../message/wire.js";
import { KEY_BYTES, KEY_STARTS } from "./msgpack-keys.js";
import { latin1Slice } from "./buffer-natives.js";
import { shortAscii } from "./short-ascii.js";
import { Layout } from "./envelope-layout.js";

/**
 * Why the fast reader gave up: the general path (`fromWire(decodeWire(bytes))`)
 * decides, and reports any error. One instance, made once: never seen outside this module.
 */
class NotRegular extends Error {}
const NOT_REGULAR = new NotRegular("not a regular envelope");

/** Nesting the fast reader follows inside a payload; deeper payloads (rare) take the general path, which allows `MAX_JSON_DEPTH`. */
const MAX_FAST_DEPTH = 64;

/** Strict, and keeping a leading U+FEFF as `@msgpack/msgpack` does. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const NONE: Uint8Array = new Uint8Array(0);
let bytes = NONE;
/** `bytes` as a Buffer when nats.js handed one (it does): ASCII is then read as latin1, without a view object. */
let buffer: Buffer | undefined;
let pos = 0;
/**
 * A view of the memory `bytes` lie in, from `viewBase` (their byte offset) on, for reading four or
 * eight bytes at a time: kept while envelopes come from one buffer (nats.js hands each as a part of
 * the socket read it came in), so it costs one object per read, not one per message.
 */
let view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
let viewBase = 0;

/** Points {@link view} at the memory of `input` (a new view only for new memory). */
function viewOf(input: Uint8Array): void {
  const memory = input.buffer;
  if (memory !== view.buffer) view = new DataView(memory);
  viewBase = input.byteOffset;
}

/** Big-endian reads from `bytes` at `at` (bounds checked by the caller), without a DataView per message. */
function u16(at: number): number {
  return ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
}
function u32(at: number): number {
  return (bytes[at] as number) * 0x100_0000 + (((bytes[at + 1] as number) << 16) | ((bytes[at + 2] as number) << 8) | (bytes[at + 3] as number));
}
function float(at: number, size: 4 | 8): number {
  return size === 4 ? view.getFloat32(viewBase + at) : view.getFloat64(viewBase + at);
}

function byte(): number {
  if (pos >= bytes.length) throw NOT_REGULAR;
  return bytes[pos++] as number;
}

function need(count: number): void {
  if (pos + count > bytes.length) throw NOT_REGULAR;
}

/** A string of `length` bytes at `pos`: short ASCII by char codes, anything else by a strict UTF-8 decoder (invalid UTF-8: the general path). */
function text(length: number): string {
  need(length);
  const end = pos + length;
  if (allAscii(pos, end)) {
    const ascii = length <= 16 ? shortAscii(bytes, pos, length) : buffer !== undefined ? latin1Slice.call(buffer, pos, end) : undefined;
    if (ascii !== undefined) {
      pos = end;
      return ascii;
    }
  }
  let value: string;
  try {
    value = strictUtf8.decode(new Uint8Array(bytes.buffer, bytes.byteOffset + pos, length));
  } catch {
    throw NOT_REGULAR;
  }
  pos = end;
  return value;
}

/** Whether the bytes from `from` to `to` are all ASCII: four at a time, then one at a time. */
function allAscii(from: number, to: number): boolean {
  const base = viewBase;
  let any = 0;
  let i = from;
  for (; i + 4 <= to; i += 4) any |= view.getInt32(base + i);
  for (; i < to; i++) any |= bytes[i] as number;
  return (any & 0x80808080) === 0;
}

/** The length of a str at `pos` (its header consumed), or -1 when the next value is not a str. */
function strLength(): number {
  const head = byte();
  if (head >= 0xa0 && head <= 0xbf) return head & 0x1f;
  if (head === 0xd9) return byte();
  if (head === 0xda) {
    need(2);
    pos += 2;
    return u16(pos - 2);
  }
  if (head === 0xdb) {
    need(4);
    pos += 4;
    return u32(pos - 4);
  }
  pos--;
  return -1;
}

function str(): string {
  const length = strLength();
  if (length < 0) throw NOT_REGULAR;
  return text(length);
}

/** `null` (consumed), or a str; one whose bytes are a place that varies when `varies` (see {@link variableStr}). */
function nullableStr(varies = false): string | null {
  if (bytes[pos] === 0xc0) {
    pos++;
    return null;
  }
  return varies ? variableStr() : str();
}

/** A non-negative integer as the general path reads one (64-bit forms: the general path). */
function count(): number {
  const head = byte();
  if (head < 0x80) return head;
  if (head === 0xcc) return byte();
  if (head === 0xcd) {
    need(2);
    pos += 2;
    return u16(pos - 2);
  }
  if (head === 0xce) {
    need(4);
    pos += 4;
    return u32(pos - 4);
  }
  throw NOT_REGULAR;
}

/** A JSON value, as `copyPlainJson` would copy what `@msgpack/msgpack` decodes; anything it would refuse (or that is rare) is not regular. */
function value(depth: number): JsonValue {
  const head = byte();
  if (head < 0x80) return head;
  if (head >= 0xe0) return head - 0x100;
  if (head >= 0xa0 && head <= 0xbf) return text(head & 0x1f);
  if (head >= 0x80 && head <= 0x8f) return map(head & 0x0f, depth);
  if (head >= 0x90 && head <= 0x9f) return array(head & 0x0f, depth);
  let result: number;
  switch (head) {
    case 0xc0:
      return null;
    case 0xc2:
      return false;
    case 0xc3:
      return true;
    case 0xcc:
      return byte();
    case 0xcd:
    case 0xd1:
      need(2);
      result = head === 0xcd ? u16(pos) : (u16(pos) << 16) >> 16;
      pos += 2;
      return result;
    case 0xce:
    case 0xd2:
      need(4);
      result = head === 0xce ? u32(pos) : u32(pos) | 0;
      pos += 4;
      return result;
    case 0xcf:
    case 0xd3:
      // as @msgpack/msgpack reads them without BigInt: high * 2^32 + low (beyond 2^53, rounded as there)
      need(8);
      result = (head === 0xcf ? u32(pos) : u32(pos) | 0) * 0x1_0000_0000 + u32(pos + 4);
      pos += 8;
      return result;
    case 0xd0:
      need(1);
      return ((bytes[pos++] as number) << 24) >> 24;
    case 0xca:
    case 0xcb:
      need(head === 0xca ? 4 : 8);
      result = float(pos, head === 0xca ? 4 : 8);
      pos += head === 0xca ? 4 : 8;
      if (!Number.isFinite(result)) throw NOT_REGULAR;
      return result === 0 ? 0 : result;
    case 0xd9:
      return text(byte());
    case 0xda:
    case 0xdb:
    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf: {
      const wide = head === 0xdb || head === 0xdd || head === 0xdf;
      need(wide ? 4 : 2);
      const length = wide ? u32(pos) : u16(pos);
      pos += wide ? 4 : 2;
      if (head <= 0xdb) return text(length);
      return head <= 0xdd ? array(length, depth) : map(length, depth);
    }
    default:
      throw NOT_REGULAR; // bin, ext, never-used
  }
}

function array(length: number, depth: number): JsonValue[] {
  if (depth >= MAX_FAST_DEPTH || length > bytes.length - pos) throw NOT_REGULAR;
  const items: JsonValue[] = [];
  for (let i = 0; i < length; i++) items.push(value(depth + 1));
  return items;
}

/** How many map keys {@link mapKey} remembers, and the longest it remembers. */
const KEY_SLOTS = 64;
const MAX_KEPT_KEY = 16;
const keptBytes: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(KEY_SLOTS).fill(undefined);
const keptKeys: string[] = new Array<string>(KEY_SLOTS).fill("");

/**
 * A map key. Payloads repeat their keys from one message to the next, so
 * short ones are remembered by a hash of their bytes: the same bytes are the
 * same key, given back as the string read before (already a property name
 * to the engine) instead of a new one.
 */
function mapKey(): string {
  const length = strLength();
  if (length < 0) throw NOT_REGULAR;
  if (length > MAX_KEPT_KEY) return text(length);
  need(length);
  const from = pos;
  let hash = length;
  for (let i = from; i < from + length; i++) hash = (hash * 31 + (bytes[i] as number)) | 0;
  const slot = hash & (KEY_SLOTS - 1);
  const kept = keptBytes[slot];
  if (kept !== undefined && kept.length === length) {
    let i = 0;
    while (i < length && kept[i] === bytes[from + i]) i++;
    if (i === length) {
      pos = from + length;
      return keptKeys[slot] as string;
    }
  }
  const key = text(length);
  const copy = new Uint8Array(length);
  for (let i = 0; i < length; i++) copy[i] = bytes[from + i] as number;
  keptBytes[slot] = copy;
  keptKeys[slot] = key;
  return key;
}

function map(length: number, depth: number): JsonObject {
  if (depth >= MAX_FAST_DEPTH || length > bytes.length - pos) throw NOT_REGULAR;
  const object: JsonObject = {};
  for (let i = 0; i < length; i++) {
    const key = mapKey();
    if (key === "__proto__") throw NOT_REGULAR;
    object[key] = value(depth + 1);
  }
  return object;
}

/** Consumes the wire key `index` (as its fixstr bytes), or gives up. */
function key(index: number): void {
  const from = KEY_STARTS[index] as number;
  const length = 1 + ((KEY_BYTES[from] as number) & 0x1f);
  if (pos + length > bytes.length) throw NOT_REGULAR;
  for (let i = 0; i < length; i++) if (bytes[pos + i] !== KEY_BYTES[from + i]) throw NOT_REGULAR;
  pos += length;
}

/** Where the strings that vary start, and their lengths, while a part is read in full. */
const found = new Int32Array(8);
let foundCount = 0;

/** A str (its header at `pos`) whose bytes are a place that varies. */
function variableStr(): string {
  const length = strLength();
  if (length < 0) throw NOT_REGULAR;
  found[2 * foundCount] = pos;
  found[2 * foundCount + 1] = length;
  foundCount++;
  return text(length);
}

/** A str at its place `hole` in `layout`, whose bytes start at `from`. */
function holeStr(layout: Layout, hole: number, from: number): string {
  pos = from + (layout.holes[2 * hole] as number);
  return text(layout.holes[2 * hole + 1] as number);
}

/**
 * The part before the payload: the map's header, `schema_version`, and the
 * keys and values from `id` to the `payload` key. Its places that vary: the
 * id, and the correlation id when there is one.
 */
const front = new Layout();
let frontSize = 0;
let frontType = "";
let frontSender = "";
let frontRecipient = "";
let frontReplyTo: string | null = null;

/** What varies in the part before the payload, read by {@link readFront} or from the layout. */
let id = "";
let correlationId: string | null = null;

/** Reads the part before the payload in full, and keeps it as {@link front}. */
function readFront(): void {
  front.length = 0;
  foundCount = 0;
  const head = byte();
  let size: number;
  if (head === 0x8e || head === 0x8f) size = head & 0x0f;
  else if (head === 0xde && byte() === 0 && byte() === 16) size = 16;
  else throw NOT_REGULAR;
  key(0);
  if (byte() !== WIRE_SCHEMA_VERSION) throw NOT_REGULAR;
  key(1);
  id = variableStr();
  key(2);
  const type = str();
  key(3);
  const sender = str();
  key(4);
  const recipient = str();
  key(5);
  correlationId = nullableStr(true);
  key(6);
  const replyTo = nullableStr();
  key(7);
  frontSize = size;
  frontType = type;
  frontSender = sender;
  frontRecipient = recipient;
  frontReplyTo = replyTo;
  front.keep(bytes, 0, pos, found, foundCount);
}

/** Reads the part before the payload from {@link front}, when the bytes repeat it. */
function sameFront(): boolean {
  if (front.length === 0 || front.length > bytes.length || !front.matches(view, viewBase)) return false;
  id = holeStr(front, 0, 0);
  correlationId = front.holeCount > 1 ? holeStr(front, 1, 0) : null;
  pos = front.length;
  return true;
}

/**
 * The part after the payload: from the `timestamp` key to the end. Its places
 * that vary: the timestamp, the trace and span ids, and the parent span id
 * when it is a string.
 */
const back = new Layout();
/** The envelope size the kept part after the payload goes with (it holds `ttl_ms` and `trace_flags` or not). */
let backSize = 0;
let backAttempt = 0;
let backPriority = 0;
let backTtlMs: number | undefined;
let backTraceFlags: number | undefined;

/** What varies in the part after the payload. */
let seconds = 0;
let traceId = "";
let spanId = "";
let parentSpanId: string | null = null;

/** The timestamp at `at`: a float64 of seconds, finite and not negative, or not regular. */
function timestampAt(at: number): number {
  const value = float(at, 8);
  if (!(Number.isFinite(value) && value >= 0)) throw NOT_REGULAR;
  return value;
}

/** Reads the part after the payload of an envelope of `size` keys in full, and keeps it as {@link back}. */
function readBack(size: number): void {
  back.length = 0;
  foundCount = 0;
  const from = pos;
  key(8);
  if (byte() !== 0xcb) throw NOT_REGULAR;
  need(8);
  seconds = timestampAt(pos);
  found[0] = pos;
  found[1] = 8;
  foundCount = 1;
  pos += 8;
  key(9);
  traceId = variableStr();
  key(10);
  spanId = variableStr();
  key(11);
  parentSpanId = nullableStr(true);
  key(12);
  const attempt = count();
  key(13);
  const priority = count();
  let ttlMs: number | undefined;
  let traceFlags: number | undefined;
  let rest = size;
  if (rest > 14 && bytes[pos + 1] === 0x74 && bytes[pos + 2] === 0x74) {
    key(14);
    ttlMs = bytes[pos] === 0xc0 ? (pos++, undefined) : count();
    rest--;
  }
  if (rest > 14) {
    key(15);
    traceFlags = bytes[pos] === 0xc0 ? (pos++, undefined) : count();
    if (traceFlags !== undefined && traceFlags > 255) throw NOT_REGULAR;
  }
  if (pos !== bytes.length) throw NOT_REGULAR;
  backSize = size;
  backAttempt = attempt;
  backPriority = priority;
  backTtlMs = ttlMs;
  backTraceFlags = traceFlags;
  back.keep(bytes, from, pos, found, foundCount);
}

/** Reads the part after the payload from {@link back}, when the bytes repeat it and end with it. */
function sameBack(size: number): boolean {
  const from = pos;
  if (back.length === 0 || size !== backSize || from + back.length !== bytes.length || !back.matches(view, viewBase + from)) return false;
  seconds = timestampAt(from + (back.holes[0] as number));
  traceId = holeStr(back, 1, from);
  spanId = holeStr(back, 2, from);
  parentSpanId = back.holeCount > 3 ? holeStr(back, 3, from) : null;
  pos = bytes.length;
  return true;
}

/**
 * Reads a MessagePack envelope written the regular way — Python's fourteen
 * keys in their order, then `ttl_ms` and `trace_flags` when present, plain
 * JSON in the payload — straight into a {@link Message}, without the
 * intermediate objects of the general path. Returns `undefined` for
 * anything else (other key orders or extra keys, a non-float timestamp, invalid
 * UTF-8, errors of any kind): the general path reads those, or refuses them
 * with its coded error. What it returns is what `fromWire(decodeWire(bytes))` returns.
 * @internal
 */
export function readRegularEnvelope(input: Uint8Array): Message | undefined {
  bytes = input;
  buffer = Buffer.isBuffer(input) ? input : undefined;
  viewOf(input);
  pos = 0;
  try {
    return envelope();
  } catch (error) {
    if (error === NOT_REGULAR) return undefined;
    throw error;
  } finally {
    bytes = NONE;
    buffer = undefined;
  }
}

function envelope(): Message | undefined {
  if (!sameFront()) readFront();
  const first = bytes[pos];
  if (first === undefined || !((first >= 0x80 && first <= 0x8f) || first === 0xde || first === 0xdf)) return undefined; // the payload: a map
  const payload = value(0) as JsonObject;
  if (!sameBack(frontSize)) readBack(frontSize);
  if (id.length === 0) return undefined;
  const message: { -readonly [K in keyof Message]: Message[K] } = {
    id,
    type: frontType,
    sender: frontSender,
    recipient: frontRecipient,
    payload,
    timestamp: wireSecondsToMs(seconds),
    traceId,
    spanId,
    attempt: backAttempt,
    priority: backPriority,
  };
  if (correlationId !== null) message.correlationId = correlationId;
  if (frontReplyTo !== null) message.replyTo = frontReplyTo;
  if (parentSpanId !== null && parentSpanId.length > 0) message.parentSpanId = parentSpanId;
  if (backTraceFlags !== undefined) message.traceFlags = backTraceFlags;
  if (backTtlMs !== undefined) message.ttlMs = backTtlMs;
  return message;
}
