import type { JsonObject, JsonValue } from "../message/json.js";
import { latin1Slice } from "./buffer-natives.js";
import { shortAscii } from "./short-ascii.js";

/*
 * The MessagePack values of the regular-envelope reader (msgpack-reader.ts
 * reads the envelope's layout with them), over one input at a time, from
 * `startReading` to `stopReading`. The input, the position and the view of
 * the input's memory are this module's `let`s, exported to be read: the
 * reader of the layout moves the position by `moveTo` (an import cannot be
 * assigned).
 */

/**
 * Why the fast reader gave up: the general path (`fromWire(decodeWire(bytes))`)
 * decides, and reports any error. One instance, made once: never seen outside
 * this module and msgpack-reader.ts.
 */
class NotRegular extends Error {}
/** What the fast reader throws when it gives up (see {@link NotRegular}). @internal */
export const NOT_REGULAR = new NotRegular("not a regular envelope");

/** Nesting the fast reader follows inside a payload; deeper payloads (rare) take the general path, which allows `MAX_JSON_DEPTH`. */
const MAX_FAST_DEPTH = 64;

/** Strict, and keeping a leading U+FEFF as `@msgpack/msgpack` does. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const NONE: Uint8Array = new Uint8Array(0);
/** The input being read, from {@link startReading} to {@link stopReading}. @internal */
export let bytes = NONE;
/** `bytes` as a Buffer when nats.js handed one (it does): ASCII is then read as latin1, without a view object. */
let buffer: Buffer | undefined;
/** Where in {@link bytes} the next value starts (moved from outside this module by {@link moveTo}). @internal */
export let pos = 0;
/**
 * A view of the memory `bytes` lie in, from `viewBase` (their byte offset) on, for reading four or
 * eight bytes at a time: kept while envelopes come from one buffer (nats.js hands each as a part of
 * the socket read it came in), so it costs one object per read, not one per message.
 * @internal
 */
export let view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
/** Where {@link bytes} start in {@link view}. @internal */
export let viewBase = 0;

/** Reads `input` from its first byte on, until {@link stopReading}. @internal */
export function startReading(input: Uint8Array): void {
  bytes = input;
  buffer = Buffer.isBuffer(input) ? input : undefined;
  // Points the view at the memory of `input` (a new view only for new memory). Here rather than
  // in a function of its own: with one, V8 inlined less into the decoding loop, and an envelope
  // took ~4 % more instructions (the `decode` rig of bench/nats-callgrind.ts, under callgrind).
  const memory = input.buffer;
  if (memory !== view.buffer) view = new DataView(memory);
  viewBase = input.byteOffset;
  pos = 0;
}

/** Lets go of the input (the view stays, for the next input from the same memory). @internal */
export function stopReading(): void {
  bytes = NONE;
  buffer = undefined;
}

/** Moves the reading to byte `at` of the input. @internal */
export function moveTo(at: number): void {
  pos = at;
}

/** Big-endian reads from `bytes` at `at` (bounds checked by the caller), without a DataView per message. */
function u16(at: number): number {
  return ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
}
function u32(at: number): number {
  return (bytes[at] as number) * 0x100_0000 + (((bytes[at + 1] as number) << 16) | ((bytes[at + 2] as number) << 8) | (bytes[at + 3] as number));
}
/** The float32 or float64 at byte `at` of the input (bounds checked by the caller). @internal */
export function float(at: number, size: 4 | 8): number {
  return size === 4 ? view.getFloat32(viewBase + at) : view.getFloat64(viewBase + at);
}

/** The next byte, consumed. @internal */
export function byte(): number {
  if (pos >= bytes.length) throw NOT_REGULAR;
  return bytes[pos++] as number;
}

/** Gives up unless `count` more bytes follow. @internal */
export function need(count: number): void {
  if (pos + count > bytes.length) throw NOT_REGULAR;
}

/** A string of `length` bytes at `pos`: short ASCII by char codes, anything else by a strict UTF-8 decoder (invalid UTF-8: the general path). @internal */
export function text(length: number): string {
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

/** The length of a str at `pos` (its header consumed), or -1 when the next value is not a str. @internal */
export function strLength(): number {
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

/** A str, or gives up. @internal */
export function str(): string {
  const length = strLength();
  if (length < 0) throw NOT_REGULAR;
  return text(length);
}

/** Whether the next value is `nil` (`null`), consumed when it is. @internal */
export function nil(): boolean {
  if (bytes[pos] !== 0xc0) return false;
  pos++;
  return true;
}

/** A non-negative integer as the general path reads one (64-bit forms: the general path). @internal */
export function count(): number {
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

/** A JSON value, as `copyPlainJson` would copy what `@msgpack/msgpack` decodes; anything it would refuse (or that is rare) is not regular. @internal */
export function value(depth: number): JsonValue {
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
