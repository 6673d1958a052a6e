import { Decoder, Encoder } from "@msgpack/msgpack";
import type { WireMessage } from "../message/wire.js";

const encoder = new Encoder();
const decoder = new Decoder();
const utf8 = new TextEncoder();

/** Each key as MessagePack (a fixstr), encoded once. */
const keyBytes = new Map<string, Uint8Array>();
function keyOf(key: string): Uint8Array {
  let bytes = keyBytes.get(key);
  if (bytes === undefined) {
    bytes = encoder.encode(key);
    if (keyBytes.size < 64) keyBytes.set(key, bytes);
  }
  return bytes;
}

/**
 * Writes the envelope as Python's `msgpack.packb(envelope, use_bin_type=True)`
 * does, byte for byte: a map in the envelope's key order, strings as str
 * types, integers in their smallest form, other numbers as float64 — and the
 * `timestamp` always as float64, as Python's float is, even when it is a
 * whole number of seconds (which `@msgpack/msgpack` alone would write as an integer).
 * @internal
 */
export function encodeMsgpackEnvelope(wire: WireMessage): Uint8Array {
  const parts: Uint8Array[] = [];
  let count = 0;
  let length = 0;
  for (const key in wire) {
    const value: unknown = (wire as unknown as Record<string, unknown>)[key];
    const k = keyOf(key);
    const v = key === "timestamp" ? float64(value as number) : encoder.encode(value);
    parts.push(k, v);
    length += k.length + v.length;
    count++;
  }
  const header = count < 16 ? Uint8Array.of(0x80 | count) : Uint8Array.of(0xde, count >> 8, count & 0xff);
  const out = new Uint8Array(header.length + length);
  out.set(header, 0);
  let at = header.length;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function float64(value: number): Uint8Array {
  const bytes = new Uint8Array(9);
  bytes[0] = 0xcb;
  new DataView(bytes.buffer).setFloat64(1, value);
  return bytes;
}

/** Decodes one MessagePack value filling all of `bytes` (throws on trailing bytes, truncation, a `__proto__` key). @internal */
export function decodeMsgpack(bytes: Uint8Array): unknown {
  return decoder.decode(bytes);
}

/** UTF-8 bytes of `text`. @internal */
export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}
