import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createMessage } from "../../src/message/message.js";
import { fromWire } from "../../src/message/from-wire.js";
import { toWire } from "../../src/message/to-wire.js";
import type { WireMessage } from "../../src/message/wire.js";
import { decodeWire, encodeMessage, encodeWire } from "../../src/nats/codec.js";
import { readRegularEnvelope } from "../../src/nats/msgpack-reader.js";
import { messageArbitrary } from "../../src/testing/arbitraries.js";

/** What the general path makes of `bytes`: the message, or the code of its refusal. */
function general(bytes: Uint8Array): unknown {
  try {
    return fromWire(decodeWire(bytes));
  } catch (error) {
    return { refused: (error as { code?: unknown }).code };
  }
}

const golden = JSON.parse(readFileSync(new URL("fixtures/golden-vectors.json", import.meta.url), "utf8")) as { vectors: { name: string; msgpack: string }[] };

/** JSON values as MessagePack can carry them, with the edge cases the reader takes apart: wide integers, -0, floats, a BOM, non-ASCII. */
const jsonish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, -0, 0.5, -1.25e300, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 2 ** 53 - 1, -(2 ** 53) + 1, "\ufeffbom", "h\u00e9llo \u{1f600}"),
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ unit: "binary", maxLength: 80 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

describe("the regular MessagePack envelope reader", () => {
  it("reads every message civitas-ts encodes as the general path does (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), (message) => {
        const bytes = encodeMessage(message, "msgpack");
        const read = readRegularEnvelope(bytes);
        expect(read).toBeDefined();
        expect(read).toEqual(general(bytes));
        expect(readRegularEnvelope(Buffer.from(bytes))).toEqual(read); // what nats.js hands over
      }),
      { numRuns: 500 },
    );
  });

  it("reads a run of envelopes whose names and payload keys repeat, or nearly, as the general path reads each (property)", () => {
    // Few names and keys, some one byte apart: the reader compares what repeats from the last envelope instead of decoding it again.
    const name = fc.constantFrom("a", "b", "ab", "ba", "payer", "payes", "p\u00e9yer", "x".repeat(40));
    const key = fc.constantFrom("i", "j", "note", "notf", "k\u00e9y", "a-key-of-17-chars", "__prot__");
    const message = fc.record({ sender: name, recipient: name, type: name, payload: fc.dictionary(key, fc.oneof(fc.integer(), name), { maxKeys: 4 }) });
    fc.assert(
      fc.property(fc.array(message, { minLength: 2, maxLength: 12 }), (inits) => {
        for (const init of inits) {
          const bytes = encodeMessage(createMessage(init), "msgpack");
          expect(readRegularEnvelope(Buffer.from(bytes))).toEqual(general(bytes));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("reads a run of envelopes where some fields repeat the last one's and others differ, whole or damaged, as the general path reads each (property)", () => {
    // The reader compares the bytes around the payload with the last envelope's but for the ids and the timestamp:
    // each field here keeps its last value or takes another, of the same length or not, valid or not.
    const uuid = (c: string): string => `0190f5c2-${c}${c}${c}${c}-7abc-8def-${c.repeat(12)}`;
    const fields = {
      id: fc.constantFrom(uuid("1"), uuid("2"), "m-1", "", "id-\u00e9"),
      type: fc.constantFrom("t", "order.placed", "x".repeat(40)),
      sender: fc.constantFrom("a", "b", "", "p\u00e9yer"),
      recipient: fc.constantFrom("a", "b", "sink"),
      correlation_id: fc.constantFrom(null, uuid("3"), uuid("4"), "c"),
      reply_to: fc.constantFrom(null, "r", "_reply.abc"),
      payload: fc.constantFrom({}, { i: 0, note: "benchmark" }, { i: 1, note: "benchmarl" }),
      timestamp: fc.constantFrom(1_700_000_000.123, 1_700_000_000.124, 1_700_000_001, 0, -1, Number.NaN, Number.POSITIVE_INFINITY),
      trace_id: fc.constantFrom("a".repeat(32), "b".repeat(32), "", "abc", `${"c".repeat(31)}\u00e9`),
      span_id: fc.constantFrom("a".repeat(16), "b".repeat(16), ""),
      parent_span_id: fc.constantFrom(null, "", "c".repeat(16), "d".repeat(16)),
      attempt: fc.constantFrom(0, 1, 300, 70_000),
      priority: fc.constantFrom(0, 1, 9),
      ttl_ms: fc.constantFrom(undefined, 0, 1000, 70_000),
      trace_flags: fc.constantFrom(undefined, 0, 1, 255, 256),
    };
    type Fields = { [K in keyof typeof fields]: (typeof fields)[K] extends fc.Arbitrary<infer T> ? T : never };
    const changes = fc.record(Object.fromEntries(Object.entries(fields).map(([name, values]) => [name, fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: values as fc.Arbitrary<unknown> })])) as { [K in keyof Fields]: fc.Arbitrary<Fields[K] | undefined> }, { requiredKeys: [] });
    const damage = fc.option(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), kind: fc.constantFrom("cut", "flip", "append", "recount") }), { freq: 4, nil: undefined });
    fc.assert(
      fc.property(fc.array(fc.record({ changes, damage, buffer: fc.boolean() }), { minLength: 2, maxLength: 16 }), (run) => {
        let last: Fields = { id: uuid("1"), type: "t", sender: "a", recipient: "sink", correlation_id: null, reply_to: null, payload: {}, timestamp: 1_700_000_000.123, trace_id: "a".repeat(32), span_id: "a".repeat(16), parent_span_id: null, attempt: 0, priority: 1, ttl_ms: undefined, trace_flags: undefined };
        for (const { changes: changed, damage: damaged, buffer } of run) {
          const next: Fields = { ...last };
          for (const [name, value] of Object.entries(changed)) if (value !== undefined) (next as Record<string, unknown>)[name] = value;
          // The written fields in the wire order, without the extras that are absent (as the flags say).
          const flags = changed.ttl_ms === undefined && changed.trace_flags === undefined ? "keep" : "set";
          if (flags === "set") {
            next.ttl_ms = changed.ttl_ms;
            next.trace_flags = changed.trace_flags;
          }
          last = next;
          const wire = Object.fromEntries([["schema_version", 1], ...Object.entries(next).filter(([, value]) => value !== undefined)]);
          const whole = encodeWire(wire as unknown as WireMessage, "msgpack");
          let bytes = whole;
          if (damaged !== undefined) {
            const i = damaged.at % whole.length;
            // "recount": the map's header one key off, the rest as it was.
            bytes =
              damaged.kind === "cut"
                ? whole.slice(0, i)
                : damaged.kind === "append"
                  ? Uint8Array.from([...whole, damaged.byte])
                  : damaged.kind === "recount"
                    ? Uint8Array.from(whole, (b, j) => (j === 0 ? b ^ 1 : b))
                    : Uint8Array.from(whole, (b, j) => (j === i ? damaged.byte : b));
          }
          const expected = general(bytes);
          const read = readRegularEnvelope(buffer ? Buffer.from(bytes) : bytes);
          if (damaged === undefined && !(typeof expected === "object" && expected !== null && "refused" in expected)) expect(read).toBeDefined();
          if (read !== undefined) expect(read).toEqual(expected);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("reads any JSON payload as the general path does, or leaves it to it (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 8 }), jsonish, { maxKeys: 6 }), (payload) => {
        const wire = toWire(createMessage({ sender: "a", recipient: "b", payload: {} }));
        const bytes = encodeWire({ ...wire, payload } as WireMessage, "msgpack");
        const read = readRegularEnvelope(bytes);
        if (read !== undefined) expect(read).toEqual(general(bytes));
        expect(readRegularEnvelope(Buffer.from(bytes))).toEqual(read);
      }),
      { numRuns: 500 },
    );
  });

  it("a damaged encoding is read as the general path reads it, or left to it (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("cut", "flip", "append"), (message, at, byte, damage) => {
        const bytes = encodeMessage(message, "msgpack");
        const i = at % bytes.length;
        const damaged = damage === "cut" ? bytes.slice(0, i) : damage === "append" ? Uint8Array.from([...bytes, byte]) : Uint8Array.from(bytes, (b, j) => (j === i ? byte : b));
        const read = readRegularEnvelope(damaged);
        if (read !== undefined) expect(read).toEqual(general(damaged));
        expect(readRegularEnvelope(Buffer.from(damaged))).toEqual(read);
      }),
      { numRuns: 2000 },
    );
  });

  it("reads the envelopes Python's msgpack writes itself", () => {
    for (const vector of golden.vectors) {
      const bytes = new Uint8Array(Buffer.from(vector.msgpack, "base64"));
      expect(readRegularEnvelope(bytes), vector.name).toEqual(general(bytes));
      expect(readRegularEnvelope(Buffer.from(bytes)), vector.name).toEqual(general(bytes));
    }
  });

  it("leaves to the general path what it does not read: invalid UTF-8, a __proto__ key, binary, an ext type, JSON", () => {
    const base = Buffer.from(encodeMessage(createMessage({ sender: "a", recipient: "b", payload: {} }), "msgpack"));
    const payloadKey = Buffer.from([0xa7, ...Buffer.from("payload")]);
    const at = base.indexOf(payloadKey) + payloadKey.length;
    const withPayload = (bytes: number[]): Uint8Array => new Uint8Array(Buffer.concat([base.subarray(0, at), Buffer.from(bytes), base.subarray(at + 1)]));
    expect(readRegularEnvelope(withPayload([0x81, 0xa1, 0x62, 0xa3, 0xe2, 0x82, 0xac]))?.payload).toEqual({ b: "\u20ac" });
    for (const payload of [
      [0x81, 0xa1, 0x62, 0xa3, 0xed, 0xa0, 0x80],
      [0x81, 0xa9, ...Buffer.from("__proto__"), 0x01],
      [0x81, 0xa1, 0x62, 0xc4, 0x01, 0x00],
      [0x81, 0xa1, 0x62, 0xd4, 0x05, 0x00],
    ]) {
      expect(readRegularEnvelope(withPayload(payload))).toBeUndefined();
    }
    expect(readRegularEnvelope(encodeMessage(createMessage({ sender: "a", recipient: "b", payload: {} }), "json"))).toBeUndefined();
  });
});
