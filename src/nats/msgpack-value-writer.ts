import { Encoder } from "@msgpack/msgpack";
import { copyMinted, rememberMinted } from "../message/ids.js";
import { utf8Write } from "./buffer-natives.js";

/*
 * How MessagePack values are written for the envelope writer
 * (msgpack-envelope.ts, which writes an envelope's keys and values in their
 * order with these): the buffer envelopes are written into, strings, keys,
 * numbers and the payload. The buffer and the position in it are this
 * module's own; the envelope writer starts an envelope, measures it and
 * takes it through functions (`startEnvelope`, `envelopeLength`,
 * `copyEnvelope`, `copied`, `shared`).
 */

const encoder = new Encoder();

// Ids, trace ids and span ids are written by copying the bytes they were made of (see writeId, fillAscii).
rememberMinted();

/** The size of the buffer envelopes are written into. */
const SLAB_BYTES = 64 * 1024;

/**
 * The buffer envelopes are written into, at `start`; `pos` is the end of
 * what is written. An envelope returned as a copy leaves `start` where it
 * was; one returned as a view into the buffer ({@link shared})
 * moves it past the envelope, so nothing ever writes over a view handed out
 * (a full buffer is replaced, never reused), and a send costs a view instead
 * of a freshly allocated array.
 */
let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
/** {@link slab} as a plain array, which is what is handed out: a `Buffer`'s `slice` is a view, not a copy. */
let out = new Uint8Array(slab.buffer, slab.byteOffset, slab.length);
let view = new DataView(out.buffer, out.byteOffset, out.byteLength);
let start = 0;
let pos = 0;

function room(bytes: number): void {
  if (pos + bytes <= out.length) return;
  const written = pos - start;
  // Not zeroed: only what is written is ever handed out.
  slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, (written + bytes) * 2));
  const bigger = new Uint8Array(slab.buffer, slab.byteOffset, slab.length);
  bigger.set(out.subarray(start, pos));
  out = bigger;
  view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  start = 0;
  pos = written;
}

/**
 * Starts an envelope at `start`: the header of a map of `count` keys (fewer than 65,536).
 * @internal
 */
export function startEnvelope(count: number): void {
  pos = start;
  room(3);
  if (count < 16) out[pos++] = 0x80 | count;
  else {
    out[pos++] = 0xde;
    out[pos++] = count >> 8;
    out[pos++] = count & 0xff;
  }
}

/** How many bytes of the envelope are written so far. @internal */
export function envelopeLength(): number {
  return pos - start;
}

/** Copies what is written of the envelope from its byte `from` on into `into` (the caller checked it fits). @internal */
export function copyEnvelope(from: number, into: Uint8Array): void {
  const at = start + from;
  const length = pos - at;
  for (let i = 0; i < length; i++) into[i] = out[at + i] as number;
}

/** The envelope just written, as a copy of its own. @internal */
export function copied(): Uint8Array {
  const bytes = out.slice(start, pos);
  pos = start;
  return bytes;
}

/**
 * The envelope just written, as a view into the buffer: the next envelope is
 * written after it, so nothing writes over it.
 * @internal
 */
export function shared(): Uint8Array {
  const bytes = out.subarray(start, pos);
  start = pos;
  return bytes;
}

/** A str, as `@msgpack/msgpack` writes it. @internal */
export function writeString(value: string): void {
  if (!writeAscii(value)) writeUtf8String(value);
}

/**
 * A str of an envelope's id, trace id or span id: the one message/ids.ts
 * minted last is copied from the bytes it was made of (see `copyMinted`),
 * any other written as a string.
 * @internal
 */
export function writeId(value: string): void {
  const length = value.length;
  if (length < 0x100) {
    room(length + 2);
    const at = length < 32 ? pos + 1 : pos + 2;
    if (copyMinted(value, out, at)) {
      if (length < 32) out[pos] = 0xa0 | length;
      else {
        out[pos] = 0xd9;
        out[pos + 1] = length;
      }
      pos = at + length;
      return;
    }
  }
  writeString(value);
}

/**
 * Writes `template` (one `set`) and returns where it starts in the buffer,
 * for its slots to be filled before anything else is written.
 * @internal
 */
export function writeTemplate(template: Uint8Array): number {
  room(template.length);
  const at = pos;
  out.set(template, at);
  pos = at + template.length;
  return at;
}

/** Fills a template's float64 slot at `at`. @internal */
export function fillFloat64(at: number, value: number): void {
  view.setFloat64(at, value);
}

/**
 * Fills a template's slot of `value.length` bytes at `at` with ASCII text
 * (an id): the one message/ids.ts minted last is copied (see `copyMinted`),
 * any other written char by char. Returns `false`, having written part of
 * it, when `value` is not ASCII.
 * @internal
 */
export function fillAscii(at: number, value: string): boolean {
  if (copyMinted(value, out, at)) return true;
  const o = out;
  let any = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    any |= code;
    o[at + i] = code;
  }
  return any < 0x80;
}

/** Moves the end of what is written back to `at`: a template whose slots could not be filled is written over. @internal */
export function rewind(at: number): void {
  pos = at;
}

/**
 * From this length on, {@link writeAscii} hands the string to Node's UTF-8 writer (`utf8Write`):
 * ids (36 characters) and trace ids (32) are ropes (see message/ids.ts),
 * which reading char by char first flattens into a copy; the native write
 * reads them as they are, and costs less from about this length on.
 */
const NATIVE_FROM = 24;

/**
 * Writes a string of under 256 ASCII characters (names, ids, types) — its
 * UTF-8 length is its length, and TextEncoder's call costs more — or
 * returns `false`, having written nothing.
 */
function writeAscii(value: string): boolean {
  const length = value.length;
  if (length >= 0x100) return false;
  const native = length >= NATIVE_FROM;
  room(native ? 3 * length + 2 : length + 2);
  const o = out;
  let p = pos;
  if (length < 32) o[p++] = 0xa0 | length;
  else {
    o[p++] = 0xd9;
    o[p++] = length;
  }
  if (native) {
    // Its UTF-8 is as long as the string only when every character is ASCII (any other takes 2 or more bytes).
    if (utf8Write.call(slab, value, p, 3 * length) !== length) return false;
  } else {
    // One test after the loop, not one per character: anything written past a non-ASCII one is written over.
    let any = 0;
    for (let i = 0; i < length; i++) {
      const code = value.charCodeAt(i);
      any |= code;
      o[p + i] = code;
    }
    if (any >= 0x80) return false;
  }
  pos = p + length;
  return true;
}

function writeUtf8String(value: string): void {
  const length = Buffer.byteLength(value, "utf8");
  room(length + 5);
  if (length < 32) out[pos++] = 0xa0 | length;
  else if (length < 0x100) {
    out[pos++] = 0xd9;
    out[pos++] = length;
  } else if (length < 0x10000) {
    out[pos++] = 0xda;
    view.setUint16(pos, length);
    pos += 2;
  } else {
    out[pos++] = 0xdb;
    view.setUint32(pos, length);
    pos += 4;
  }
  pos += utf8Write.call(slab, value, pos, length);
}

/** Writes a run of bytes (constant ones, or an envelope's repeated head) with one `set`: for a dozen bytes or fewer, {@link writeKey}'s loop costs less. @internal */
export function writeSegment(bytes: Uint8Array): void {
  room(bytes.length);
  out.set(bytes, pos);
  pos += bytes.length;
}

/** Writes a key's bytes (byte by byte: `set` costs more for a dozen bytes). @internal */
export function writeKey(key: Uint8Array): void {
  const length = key.length;
  room(length);
  const o = out;
  const p = pos;
  for (let i = 0; i < length; i++) o[p + i] = key[i] as number;
  pos = p + length;
}

/** A float64, whatever the number. @internal */
export function writeFloat64(value: number): void {
  room(9);
  out[pos++] = 0xcb;
  view.setFloat64(pos, value);
  pos += 8;
}

function writeBytes(bytes: Uint8Array): void {
  room(bytes.length);
  out.set(bytes, pos);
  pos += bytes.length;
}

/** Any other value (the payload, a number that is not a small non-negative integer): as `@msgpack/msgpack` writes it. @internal */
export function writeValue(value: unknown): void {
  if (typeof value === "string") writeString(value);
  else if (value === null) {
    room(1);
    out[pos++] = 0xc0;
  } else if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value < 0x80) {
    room(1);
    out[pos++] = value;
  } else writeBytes(encoder.encodeSharedRef(value));
}

/** Nesting {@link writePlainJson} follows; a deeper payload is left to `@msgpack/msgpack` (whose limit is 100). */
const MAX_PLAIN_DEPTH = 32;

/**
 * Writes a payload made of plain objects, arrays, ASCII strings, numbers,
 * booleans and `null` byte for byte as `@msgpack/msgpack` does (smallest
 * integer form, other numbers as float64, map keys in `Object.keys` order);
 * returns `false`, having written part of it, at anything else (non-ASCII
 * text, `undefined`, another kind of object, deep nesting), for the caller to
 * hand the whole payload to `@msgpack/msgpack` instead.
 */
function writePlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
      return writeAscii(value);
    case "boolean":
      room(1);
      out[pos++] = value ? 0xc3 : 0xc2;
      return true;
    case "number":
      writeNumber(value);
      return true;
    case "object": {
      if (value === null) {
        room(1);
        out[pos++] = 0xc0;
        return true;
      }
      if (depth >= MAX_PLAIN_DEPTH) return false;
      if (Array.isArray(value)) {
        writeHeader(value.length, 0x90, 0xdc);
        for (const item of value as unknown[]) if (!writePlainJson(item, depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      const keys = Object.keys(value);
      writeHeader(keys.length, 0x80, 0xde);
      for (const key of keys) if (!writeAscii(key) || !writePlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** A fixarray/fixmap (`fix`), 16-bit (`wide`) or 32-bit (`wide + 1`) header of `count` entries. */
function writeHeader(count: number, fix: number, wide: number): void {
  room(5);
  if (count < 16) out[pos++] = fix | count;
  else if (count < 0x10000) {
    out[pos++] = wide;
    view.setUint16(pos, count);
    pos += 2;
  } else {
    out[pos++] = wide + 1;
    view.setUint32(pos, count);
    pos += 4;
  }
}

/** A number as `@msgpack/msgpack` writes one: safe integers in their smallest form, anything else as float64. */
function writeNumber(value: number): void {
  room(9);
  if (!Number.isSafeInteger(value)) writeFloat64(value);
  else if (value >= 0) {
    if (value < 0x80) out[pos++] = value;
    else if (value < 0x100) {
      out[pos++] = 0xcc;
      out[pos++] = value;
    } else if (value < 0x10000) {
      out[pos++] = 0xcd;
      view.setUint16(pos, value);
      pos += 2;
    } else if (value < 0x1_0000_0000) {
      out[pos++] = 0xce;
      view.setUint32(pos, value);
      pos += 4;
    } else {
      out[pos++] = 0xcf;
      view.setUint32(pos, Math.floor(value / 0x1_0000_0000));
      view.setUint32(pos + 4, value >>> 0);
      pos += 8;
    }
  } else if (value >= -0x20) out[pos++] = value & 0xff;
  else if (value >= -0x80) {
    out[pos++] = 0xd0;
    view.setInt8(pos++, value);
  } else if (value >= -0x8000) {
    out[pos++] = 0xd1;
    view.setInt16(pos, value);
    pos += 2;
  } else if (value >= -0x8000_0000) {
    out[pos++] = 0xd2;
    view.setInt32(pos, value);
    pos += 4;
  } else {
    out[pos++] = 0xd3;
    view.setInt32(pos, Math.floor(value / 0x1_0000_0000));
    view.setUint32(pos + 4, value >>> 0);
    pos += 8;
  }
}

/** The payload: by {@link writePlainJson} when it can, else by `@msgpack/msgpack` (the same bytes either way). @internal */
export function writePayload(payload: unknown): void {
  // Counted from the envelope's start: a buffer that grows meanwhile moves the envelope.
  const from = pos - start;
  if (writePlainJson(payload, 0)) return;
  pos = start + from;
  writeBytes(encoder.encodeSharedRef(payload));
}
