import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { wireSecondsToMs } from "../message/from-wire.js";
import { WIRE_SCHEMA_VERSION } from "../message/wire.js";
import { KEY_BYTES, KEY_STARTS } from "./msgpack-keys.js";
import { Layout } from "./envelope-layout.js";
import { NOT_REGULAR, byte, bytes, count, float, moveTo, need, nil, pos, startReading, stopReading, str, strLength, text, value, view, viewBase } from "./msgpack-value-reader.js";

/** Consumes the wire key `index` (as its fixstr bytes), or gives up. */
function key(index: number): void {
  const from = KEY_STARTS[index] as number;
  const length = 1 + ((KEY_BYTES[from] as number) & 0x1f);
  if (pos + length > bytes.length) throw NOT_REGULAR;
  for (let i = 0; i < length; i++) if (bytes[pos + i] !== KEY_BYTES[from + i]) throw NOT_REGULAR;
  moveTo(pos + length);
}

/** Where the strings that vary start, and their lengths, while a part is read in full. */
const found = new Int32Array(8);
let foundCount = 0;

/** `null` (consumed), or a str; one whose bytes are a place that varies when `varies` (see {@link variableStr}). */
function nullableStr(varies = false): string | null {
  if (nil()) return null;
  return varies ? variableStr() : str();
}

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
  moveTo(from + (layout.holes[2 * hole] as number));
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
  moveTo(front.length);
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
  moveTo(pos + 8);
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
    ttlMs = nil() ? undefined : count();
    rest--;
  }
  if (rest > 14) {
    key(15);
    traceFlags = nil() ? undefined : count();
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
  moveTo(bytes.length);
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
  startReading(input);
  try {
    return envelope();
  } catch (error) {
    if (error === NOT_REGULAR) return undefined;
    throw error;
  } finally {
    stopReading();
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
