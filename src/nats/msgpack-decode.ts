import { Decoder } from "@msgpack/msgpack";

const decoder = new Decoder();

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Decodes one MessagePack value filling all of `bytes` (throws on trailing
 * bytes, truncation, a `__proto__` key, and a string that is not well-formed
 * Unicode: @msgpack/msgpack decodes some invalid UTF-8, such as an encoded
 * surrogate, into a lone surrogate that no encoder could write back).
 * @internal
 */
export function decodeMsgpack(bytes: Uint8Array): unknown {
  const value: unknown = decoder.decode(bytes);
  assertWellFormed(value, 0);
  return value;
}

function assertWellFormed(value: unknown, depth: number): void {
  if (typeof value === "string") {
    if (LONE_SURROGATE.test(value)) throw new TypeError("a MessagePack string holds invalid UTF-8 (a lone surrogate)");
  } else if (typeof value === "object" && value !== null && depth < 1100) {
    for (const key of Object.keys(value)) {
      if (LONE_SURROGATE.test(key)) throw new TypeError("a MessagePack map key holds invalid UTF-8 (a lone surrogate)");
      assertWellFormed((value as Record<string, unknown>)[key], depth + 1);
    }
  }
}
