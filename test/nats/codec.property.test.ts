import { encode as msgpackEncode } from "@msgpack/msgpack";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { InvalidWireMessageError } from "../../src/errors/errors.js";
import { createMessage, type Message } from "../../src/message/message.js";
import { fromWire } from "../../src/message/from-wire.js";
import { toWire } from "../../src/message/to-wire.js";
import { decodeMessage, decodeWire, encodeForBus, encodeMessage, encodeWire, type WireSerializer } from "../../src/nats/codec.js";
import { messageArbitrary } from "../../src/testing/arbitraries.js";

const serializer = fc.constantFrom<WireSerializer>("msgpack", "json");

/** Runs `fn`, returning what it threw (failing the test when it did not throw). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  expect.fail("expected a throw");
}

function expectWireError(error: unknown): void {
  expect(error).toBeInstanceOf(InvalidWireMessageError);
  expect(error).toBeInstanceOf(CivitasError);
  expect((error as CivitasError).code).toBe("INVALID_WIRE_MESSAGE");
}

describe("codec round trip", () => {
  it("any message: toWire -> encode -> decode -> fromWire gives it back, in either encoding (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), serializer, (message, how) => {
        expect(decodeMessage(encodeMessage(message, how))).toEqual(message);
      }),
      { numRuns: 300 },
    );
  });

  it("encodeForBus writes encodeMessage's bytes, and what it handed out keeps them while later envelopes are written (property)", () => {
    fc.assert(
      fc.property(fc.array(messageArbitrary(), { minLength: 1, maxLength: 40 }), serializer, (messages, how) => {
        const handed = messages.map((message) => encodeForBus(message, how));
        messages.forEach((message, i) => expect(handed[i]).toEqual(encodeMessage(message, how)));
      }),
      { numRuns: 200 },
    );
    // Past the end of the buffer envelopes share: 64 KiB and more.
    // ASCII written field by field, then text that is not: the buffer may grow before the payload is handed to @msgpack/msgpack instead.
    const wide = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, "x".repeat(200)]));
    for (const payload of [{ text: "x".repeat(20_000) }, { ...wide }, { ...wide, last: "\u00e9" }]) {
      const big = createMessage({ sender: "a", recipient: "b", payload });
      const views = Array.from({ length: 8 }, () => encodeForBus(big, "msgpack"));
      for (const view of views) expect(view).toEqual(encodeMessage(big, "msgpack"));
    }
  });

  it("what encodeMessage and encodeWire return is an array of its own: later envelopes leave its bytes as they were (property)", () => {
    fc.assert(
      fc.property(fc.array(messageArbitrary(), { minLength: 2, maxLength: 20 }), serializer, (messages, how) => {
        const returned = messages.map((message, i) => (i % 2 === 0 ? encodeMessage(message, how) : encodeWire(toWire(message), how)));
        const snapshots = returned.map((bytes) => Buffer.from(bytes).toString("hex"));
        for (const message of messages) encodeMessage(message, how);
        returned.forEach((bytes, i) => {
          expect(Buffer.from(bytes).toString("hex")).toBe(snapshots[i]);
          expect(bytes.buffer.byteLength).toBe(bytes.length);
        });
      }),
      { numRuns: 100 },
    );
  });

  it("a run of envelopes repeating one type, sender and recipient (written from the last one's bytes) is what encodeWire writes (property)", () => {
    const name = fc.oneof(fc.constantFrom("a", "b", "x".repeat(120), "\u00e9t\u00e9"), fc.string({ maxLength: 40 }));
    const head = fc.record({ type: fc.constantFrom("message", "t", "_agency.heartbeat"), sender: name, recipient: name });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), messageArbitrary()), { minLength: 1, maxLength: 30 }), fc.array(head, { minLength: 3, maxLength: 3 }), (runs, heads) => {
        for (const [which, message] of runs) {
          const m = { ...message, ...heads[which] };
          const general = Buffer.from(encodeWire(toWire(m), "msgpack")).toString("hex");
          expect(Buffer.from(encodeForBus(m, "msgpack")).toString("hex")).toBe(general);
          expect(Buffer.from(encodeMessage(m, "msgpack")).toString("hex")).toBe(general);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("messages whose ids were just minted, earlier, or are copies of minted ones are written as @msgpack/msgpack writes them (property)", () => {
    // The ids uuidv7, newTraceId and newSpanId minted last are copied from the bytes they were made of; any
    // other id, a flat copy of a minted one included, is written from the string. Commands interleave the
    // cases: a fresh message, a message minted earlier (its ids no longer the last), flat copies, an id that is
    // not ASCII, a reply or request shape, a child span, and runs that cross a trace counter's 4,095.
    const earlier: Message[] = [];
    const command = fc.oneof(
      fc.record({ kind: fc.constant("fresh" as const), count: fc.integer({ min: 1, max: 5000 }), recipient: fc.constantFrom("b", "c") }),
      fc.record({ kind: fc.constant("earlier" as const), index: fc.nat() }),
      fc.record({ kind: fc.constant("flat" as const) }),
      fc.record({ kind: fc.constant("accented" as const) }),
      fc.record({ kind: fc.constant("request" as const) }),
      fc.record({ kind: fc.constant("child" as const) }),
    );
    const written = (m: Message): void => {
      // The timestamp is a float64 even for a whole second, as Python's is; @msgpack/msgpack writes a whole number
      // as an integer, so at a whole second (one message in a thousand) the general writer is the reference.
      const reference = m.timestamp % 1000 === 0 ? encodeWire(toWire(m), "msgpack") : msgpackEncode(toWire(m));
      expect(Buffer.from(encodeForBus(m, "msgpack")).toString("hex")).toBe(Buffer.from(reference).toString("hex"));
    };
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 12 }), (commands) => {
        for (const c of commands) {
          if (c.kind === "fresh") {
            // Only the last of a run is written: the run moves the counters on (across their ends when long).
            let m = createMessage({ sender: "a", recipient: c.recipient, payload: { n: c.count } });
            for (let i = 1; i < c.count; i++) m = createMessage({ sender: "a", recipient: c.recipient, payload: { n: i } });
            written(m);
            earlier.push(m);
          } else if (c.kind === "earlier" && earlier.length > 0) {
            createMessage({ sender: "a", recipient: "b", payload: {} }); // its ids are the last minted now
            written(earlier[c.index % earlier.length] as Message);
          } else {
            const m = createMessage({ sender: "a", recipient: "b", payload: { k: c.kind } });
            if (c.kind === "flat") written({ ...m, id: Buffer.from(m.id).toString("latin1"), traceId: Buffer.from(m.traceId).toString("latin1"), spanId: Buffer.from(m.spanId).toString("latin1") });
            else if (c.kind === "accented") written({ ...m, id: `\u00e9${m.id.slice(1)}`, spanId: `\u00e9${m.spanId.slice(1)}` });
            else if (c.kind === "request") written({ ...m, correlationId: m.id, replyTo: "a" });
            else written({ ...m, parentSpanId: m.spanId, attempt: 2 });
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("writes the timestamp of a message sent at a whole second as a float64, as Python's float is, on every path", () => {
    const m = createMessage({ sender: "a", recipient: "b", payload: {}, timestamp: 1_796_692_124_000 });
    const key = Buffer.from("a974696d657374616d70", "hex"); // the key "timestamp"
    for (const bytes of [encodeForBus(m, "msgpack"), encodeMessage(m, "msgpack"), encodeWire(toWire(m), "msgpack")]) {
      const buffer = Buffer.from(bytes);
      const at = buffer.indexOf(key) + key.length;
      expect(buffer[at]).toBe(0xcb);
      expect(buffer.readDoubleBE(at + 1)).toBe(1_796_692_124);
    }
  });

  it("encodeMessage writes the bytes encodeWire writes for the message's wire form, in either encoding (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), serializer, (message, how) => {
        expect(Buffer.from(encodeMessage(message, how)).toString("hex")).toBe(Buffer.from(encodeWire(toWire(message), how)).toString("hex"));
      }),
      { numRuns: 500 },
    );
  });

  it("encodeMessage writes envelope strings of any length and script as encodeWire does (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "grapheme", maxLength: 300 }), fc.string({ maxLength: 300 })), fc.constantFrom(0, 23, 24, 31, 32, 255, 256, 70_000), (text, pad) => {
        const message = createMessage({ sender: "a", recipient: "b", type: text + "x".repeat(pad), payload: {} });
        expect(Buffer.from(encodeMessage(message)).toString("hex")).toBe(Buffer.from(encodeWire(toWire(message))).toString("hex"));
      }),
      { numRuns: 200 },
    );
  });

  it("encodeMessage writes what @msgpack/msgpack itself writes for the wire form: strings of every length and script in every field, any payload (property)", () => {
    // An independent writer: the two checks above compare encodeMessage with encodeWire, which share the string writer.
    const text = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "grapheme", maxLength: 40 }), fc.string({ unit: "binary", maxLength: 40 }));
    const padded = fc.tuple(text, fc.constantFrom(0, 23, 24, 31, 32, 255, 256)).map(([t, pad]) => t + "x".repeat(pad));
    const fields = fc.record({ type: padded.filter((t) => t.length > 0 && !t.startsWith("_agency.")), sender: padded.filter((t) => t.length > 0), recipient: padded.filter((t) => t.length > 0), key: text, value: padded });
    fc.assert(
      fc.property(fields, ({ type, sender, recipient, key, value }) => {
        const message = { ...createMessage({ sender, recipient, type, payload: { [key]: value, n: 1 } }), timestamp: 1_700_000_000_123 };
        expect(Buffer.from(encodeMessage(message)).toString("hex")).toBe(Buffer.from(msgpackEncode(toWire(message))).toString("hex"));
      }),
      { numRuns: 300 },
    );
  });

  it("encodeMessage writes any payload byte for byte as @msgpack/msgpack does: every integer width, floats, long and non-ASCII text, wide maps and arrays (property)", () => {
    const edge = fc.constantFrom(-0, 0.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 2 ** 53, -(2 ** 53), 2 ** 53 - 1, -(2 ** 53) + 1, -33, -32, 127, 128, 255, 256, 65535, 65536, -129, -32769, "é", "\ud800", "x".repeat(300));
    const value = fc.letrec((tie) => ({
      json: fc.oneof(
        { depthSize: "small" },
        edge,
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.string({ unit: "binary", maxLength: 40 }),
        fc.array(tie("json"), { maxLength: 20 }),
        fc.dictionary(fc.string({ maxLength: 6 }), tie("json"), { maxKeys: 20 }),
      ),
    })).json;
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 20 }), (payload) => {
        const message = fromWire({ ...toWire(createMessage({ sender: "a", recipient: "b", payload: {} })), payload });
        expect(Buffer.from(encodeMessage(message)).toString("hex")).toBe(Buffer.from(encodeWire(toWire(message), "msgpack")).toString("hex"));
      }),
      { numRuns: 500 },
    );
  });

  it("the two encodings of one message decode to the same envelope (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), (message) => {
        const wire = toWire(message);
        expect(decodeWire(encodeWire(wire, "msgpack"))).toEqual(decodeWire(encodeWire(wire, "json")));
      }),
    );
  });

  it("JSON output is what JSON.parse reads back as the same envelope (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), (message) => {
        const wire = toWire(message);
        expect(JSON.parse(Buffer.from(encodeWire(wire, "json")).toString("utf8"))).toEqual(JSON.parse(JSON.stringify(wire)));
      }),
    );
  });
});

describe("codec refusals", () => {
  it("any byte string that is not a valid envelope is refused with INVALID_WIRE_MESSAGE, never another error (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expectWireError(thrown(() => decodeMessage(bytes)));
      }),
      { numRuns: 1000 },
    );
  });

  it("a valid encoding cut short, or with bytes flipped or appended, is refused or still a well-formed message (property)", () => {
    fc.assert(
      fc.property(messageArbitrary(), serializer, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("cut", "flip", "append"), (message, how, at, byte, damage) => {
        const bytes = encodeMessage(message, how);
        const i = at % bytes.length;
        const damaged = damage === "cut" ? bytes.slice(0, i) : damage === "append" ? Uint8Array.from([...bytes, byte]) : Uint8Array.from(bytes, (b, j) => (j === i ? byte : b));
        try {
          const decoded = decodeMessage(damaged);
          // a flip inside a string or number can leave a valid envelope: it must then encode again
          expect(decodeMessage(encodeMessage(decoded, how))).toEqual(decoded);
        } catch (error) {
          expectWireError(error);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("any object that is not a valid envelope, encoded either way, is refused with INVALID_WIRE_MESSAGE (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.dictionary(fc.string(), fc.jsonValue())), serializer, (value, how) => {
        const bytes = how === "json" ? Buffer.from(JSON.stringify(value) ?? "null") : encodeWire(value as never, "msgpack");
        expectWireError(thrown(() => decodeMessage(bytes)));
      }),
    );
  });

  it("refuses MessagePack that holds what JSON cannot: binary, an ext type, a __proto__ key", () => {
    const base = Buffer.from(encodeWire(toWire(createMessage({ sender: "a", recipient: "b", payload: {} })), "msgpack"));
    // payload {} is encoded as 0x80 after the "payload" key (a7 'payload'); swap in {"b": <bin 1 byte>}
    const payloadKey = Buffer.from([0xa7, ...Buffer.from("payload")]);
    const at = base.indexOf(payloadKey) + payloadKey.length;
    const withPayload = (bytes: number[]): Buffer => Buffer.concat([base.subarray(0, at), Buffer.from(bytes), base.subarray(at + 1)]);
    expect(base[at]).toBe(0x80);
    expect(decodeMessage(withPayload([0x80])).payload).toEqual({});
    expectWireError(thrown(() => decodeMessage(withPayload([0x81, 0xa1, 0x62, 0xc4, 0x01, 0x00]))));
    expectWireError(thrown(() => decodeMessage(withPayload([0x81, 0xa1, 0x62, 0xd4, 0x05, 0x00]))));
    expectWireError(thrown(() => decodeMessage(withPayload([0x81, 0xa9, ...Buffer.from("__proto__"), 0x01]))));
  });

  it("refuses MessagePack strings that are not UTF-8 (an encoded surrogate), in a value or a key, as the JSON reader does", () => {
    const base = Buffer.from(encodeWire(toWire(createMessage({ sender: "a", recipient: "b", payload: {} })), "msgpack"));
    const payloadKey = Buffer.from([0xa7, ...Buffer.from("payload")]);
    const at = base.indexOf(payloadKey) + payloadKey.length;
    const withPayload = (bytes: number[]): Buffer => Buffer.concat([base.subarray(0, at), Buffer.from(bytes), base.subarray(at + 1)]);
    // 0xED 0xA0 0x80 is U+D800 written as UTF-8: not UTF-8, and a lone surrogate if decoded leniently.
    expect(decodeMessage(withPayload([0x81, 0xa1, 0x62, 0xa3, 0xe2, 0x82, 0xac])).payload).toEqual({ b: "\u20ac" });
    expectWireError(thrown(() => decodeMessage(withPayload([0x81, 0xa1, 0x62, 0xa3, 0xed, 0xa0, 0x80]))));
    expectWireError(thrown(() => decodeMessage(withPayload([0x81, 0xa3, 0xed, 0xa0, 0x80, 0x01]))));
  });

  it.each<[string, Uint8Array]>([
    ["empty", new Uint8Array()],
    ["a MessagePack array", Uint8Array.of(0x91, 0x01)],
    ["a MessagePack string", Uint8Array.of(0xa1, 0x61)],
    ["JSON text of an array", Buffer.from("[1]")],
    ["invalid UTF-8 in JSON", Uint8Array.of(0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d)],
  ])("refuses %s with INVALID_WIRE_MESSAGE", (_what, bytes) => {
    expectWireError(thrown(() => decodeMessage(bytes)));
  });
});
