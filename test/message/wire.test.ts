import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { InvalidWireMessageError } from "../../src/errors/errors.js";
import type { JsonObject } from "../../src/message/json.js";
import { buildMessage, createMessage, type Message } from "../../src/message/message.js";
import { fromWire } from "../../src/message/from-wire.js";
import { toWire } from "../../src/message/to-wire.js";
import { WIRE_SCHEMA_VERSION, type WireMessage } from "../../src/message/wire.js";
import { caught } from "../support/outcome.js";

const name = fc.string({ minLength: 1, maxLength: 12 });
const hex = (length: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length });

/** Any message this library can create. */
const messageArb: fc.Arbitrary<Message> = fc
  .record(
    {
      id: fc.uuid({ version: 7 }),
      type: fc.oneof(name, fc.constantFrom("message", "reply", "_agency.suspend", "civitas.eval.halt")),
      sender: name,
      recipient: name,
      correlationId: name,
      replyTo: name,
      payload: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })).map((p) => p as JsonObject),
      timestamp: fc.integer({ min: 0, max: 2 ** 48 - 1 }),
      traceId: hex(32),
      spanId: hex(16),
      parentSpanId: hex(16),
      attempt: fc.nat(),
      priority: fc.nat(5),
      ttlMs: fc.nat(),
    },
    { requiredKeys: ["id", "type", "sender", "recipient", "payload", "timestamp", "traceId", "spanId", "attempt", "priority"] },
  )
  .map((init) => createMessage(init));

/** What JSON makes of a value (e.g. -0 becomes 0). */
const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The input as text for an assertion's label; an exotic object that cannot be looked at is named as such. */
function label(input: unknown): string {
  try {
    return JSON.stringify(input) ?? String(input);
  } catch {
    return "an unreadable object";
  }
}

function wireError(input: unknown): InvalidWireMessageError {
  let caught: unknown;
  try {
    fromWire(input);
  } catch (err) {
    caught = err;
  }
  expect(caught, `fromWire(${label(input)})`).toBeInstanceOf(InvalidWireMessageError);
  const e = caught as InvalidWireMessageError;
  expect(e).toBeInstanceOf(CivitasError);
  expect(e.code).toBe("INVALID_WIRE_MESSAGE");
  expect(e.name).toBe("InvalidWireMessageError");
  return e;
}

const sample = (): WireMessage =>
  toWire(
    createMessage({
      sender: "alice",
      recipient: "bob",
      type: "quote.request",
      payload: { items: [1, 2], note: "x" },
      correlationId: "corr",
      replyTo: "alice",
      parentSpanId: "f".repeat(16),
      ttlMs: 1000,
      attempt: 1,
    }),
  );

describe("toWire", () => {
  it.each<[string, unknown]>([
    ["null", null],
    ["undefined", undefined],
    ["an empty object", {}],
    ["a string", "message"],
    ["an array", []],
  ])("refuses %s with INVALID_WIRE_MESSAGE", (_what, input) => {
    expect(() => toWire(input as Message)).toThrow(InvalidWireMessageError);
  });

  it.each<[string, unknown]>([
    ["id", ""],
    ["type", 42],
    ["sender", undefined],
    ["recipient", 7],
    ["payload", null],
    ["payload", [1]],
    ["timestamp", "1"],
    ["timestamp", -1],
    ["traceId", 5],
    ["spanId", null],
    ["attempt", 1.5],
    ["priority", undefined],
    ["correlationId", 5],
    ["replyTo", {}],
    ["parentSpanId", ""],
    ["ttlMs", -1],
    ["traceFlags", 256],
    ["traceFlags", "1"],
  ])("refuses a message whose %s is %j, naming the field", (field, value) => {
    const m = { ...createMessage({ sender: "a", recipient: "b", payload: {} }), [field]: value } as Message;
    let caught: unknown;
    try {
      toWire(m);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidWireMessageError);
    expect((caught as Error).message).toContain(`'${field}'`);
  });

  it("round-trips an empty type, correlationId and replyTo", () => {
    const m = createMessage({ sender: "a", recipient: "b", payload: { x: 1 }, type: "", correlationId: "", replyTo: "" });
    expect(fromWire(JSON.stringify(toWire(m)))).toEqual(m);
  });

  it("writes an empty sender, recipient, traceId and spanId, as Python does on some messages", () => {
    const m = { ...createMessage({ sender: "a", recipient: "b", payload: {} }), sender: "", recipient: "", traceId: "", spanId: "" };
    const wire = toWire(m);
    expect([wire.sender, wire.recipient, wire.trace_id, wire.span_id]).toEqual(["", "", "", ""]);
    expect(fromWire(wire)).toEqual(m);
  });

  it("writes Python's to_dict() keys in Python's order, then the ttl_ms and trace_flags extras", () => {
    const m = createMessage({ sender: "a", recipient: "b", payload: {}, traceFlags: 1, ttlMs: 5 });
    expect(Object.keys(toWire(m))).toEqual([
      "schema_version", "id", "type", "sender", "recipient", "correlation_id", "reply_to", "payload",
      "timestamp", "trace_id", "span_id", "parent_span_id", "attempt", "priority", "ttl_ms", "trace_flags",
    ]);
    expect(Object.keys(toWire(createMessage({ sender: "a", recipient: "b", payload: {} })))).toHaveLength(14);
  });

  it("writes the timestamp as float unix seconds and reads whole milliseconds back exactly", () => {
    const m = createMessage({ sender: "a", recipient: "b", payload: {}, timestamp: 1_764_690_000_123 });
    expect(toWire(m).timestamp).toBe(1_764_690_000.123);
    expect(fromWire(toWire(m)).timestamp).toBe(1_764_690_000_123);
  });

  it("writes snake_case keys and schema_version 1", () => {
    const m = createMessage({
      sender: "alice",
      recipient: "bob",
      payload: { a: 1 },
      correlationId: "c",
      replyTo: "alice",
      parentSpanId: "p".repeat(16),
      traceFlags: 1,
      ttlMs: 5,
    });
    const wire = toWire(m);
    expect(WIRE_SCHEMA_VERSION).toBe(1);
    expect(wire).toEqual({
      schema_version: 1,
      id: m.id,
      type: "message",
      sender: "alice",
      recipient: "bob",
      correlation_id: "c",
      reply_to: "alice",
      payload: { a: 1 },
      timestamp: m.timestamp / 1000,
      trace_id: m.traceId,
      span_id: m.spanId,
      parent_span_id: "p".repeat(16),
      trace_flags: 1,
      attempt: 0,
      priority: 0,
      ttl_ms: 5,
    });
  });

  it("writes null for absent optional ids and leaves ttl_ms out without a ttl", () => {
    const wire = toWire(createMessage({ sender: "a", recipient: "b", payload: {} }));
    expect(wire.correlation_id).toBeNull();
    expect(wire.reply_to).toBeNull();
    expect(wire.parent_span_id).toBeNull();
    expect("ttl_ms" in wire).toBe(false);
    expect("trace_flags" in wire).toBe(false);
    expect(Object.keys(wire).every((key) => key === key.toLowerCase())).toBe(true);
  });
});

describe("fromWire round trip", () => {
  it("fromWire(toWire(m)) equals m for any message, its payload copied as JSON would (-0 becomes 0) (property)", () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        expect(fromWire(toWire(m))).toEqual({ ...m, payload: viaJson(m.payload) });
      }),
    );
  });

  it("round-trips through JSON text and through UTF-8 bytes (property)", () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        const text = JSON.stringify(toWire(m));
        expect(fromWire(text)).toEqual(viaJson(m));
        expect(fromWire(new TextEncoder().encode(text))).toEqual(viaJson(m));
        expect(fromWire(Buffer.from(text, "utf8"))).toEqual(viaJson(m));
      }),
    );
  });

  it("leaves absent optional fields out rather than undefined", () => {
    const m = fromWire(JSON.stringify(toWire(createMessage({ sender: "a", recipient: "b", payload: {} }))));
    for (const key of ["correlationId", "replyTo", "parentSpanId", "ttlMs"]) expect(key in m).toBe(false);
  });

  it("ignores unknown keys such as the Python envelope's ttl and seq", () => {
    const wire = { ...sample(), ttl: null, seq: 7, extra: { any: "thing" } };
    const m = fromWire(wire);
    expect(m.sender).toBe("alice");
    expect(Object.keys(m)).not.toContain("seq");
    expect(Object.keys(m)).not.toContain("extra");
  });

  it("reads trace_flags 0 and 1, and null or a missing key as absent", () => {
    expect(fromWire({ ...sample(), trace_flags: 0 }).traceFlags).toBe(0);
    expect(fromWire({ ...sample(), trace_flags: 1 }).traceFlags).toBe(1);
    expect("traceFlags" in fromWire({ ...sample(), trace_flags: null })).toBe(false);
    expect("traceFlags" in fromWire(sample())).toBe(false);
  });

  it("accepts null for ttl_ms and reads Python's float seconds as milliseconds", () => {
    const m = fromWire({ ...sample(), ttl_ms: null, timestamp: 1_700_000_000.25 });
    expect("ttlMs" in m).toBe(false);
    expect(m.timestamp).toBe(1_700_000_000_250);
    expect(fromWire({ ...sample(), timestamp: 1_700_000_000.123456 }).timestamp).toBeCloseTo(1_700_000_000_123.456, 2);
    expect(fromWire({ ...sample(), timestamp: 1_700_000_000 }).timestamp).toBe(1_700_000_000_000);
  });

  it("accepts what Python writes: empty sender, recipient, trace_id and span_id, an empty parent_span_id as none", () => {
    const m = fromWire({ ...sample(), sender: "", recipient: "", trace_id: "", span_id: "", parent_span_id: "" });
    expect([m.sender, m.recipient, m.traceId, m.spanId]).toEqual(["", "", "", ""]);
    expect("parentSpanId" in m).toBe(false);
  });

  it("keeps a multi-byte payload intact through bytes", () => {
    const m = buildMessage({ sender: "a", recipient: "b", payload: { text: "ünïcødé ✓ 🚀" } });
    expect(fromWire(new TextEncoder().encode(JSON.stringify(toWire(m)))).payload).toEqual({ text: "ünïcødé ✓ 🚀" });
  });
});

describe("fromWire rejects malformed input with INVALID_WIRE_MESSAGE", () => {
  it.each<[string, unknown]>([
    ["missing", undefined],
    ["0", 0],
    ["2", 2],
    ["the string '1'", "1"],
    ["null", null],
    ["1.5", 1.5],
  ])("schema_version %s", (_what, version) => {
    const wire: Record<string, unknown> = { ...sample() };
    if (version === undefined) delete wire.schema_version;
    else wire.schema_version = version;
    expect(wireError(wire).message).toContain("schema_version");
  });

  it.each<[string, unknown]>([
    ["negative", -1],
    ["above a byte", 256],
    ["fractional", 1.5],
    ["a string", "01"],
    ["a boolean", true],
  ])("trace_flags %s", (_what, flags) => {
    expect(wireError({ ...sample(), trace_flags: flags }).message).toContain("'trace_flags'");
  });

  it("checks schema_version before anything else", () => {
    // every other field is broken too; the version is what gets reported
    expect(wireError({ schema_version: 99 }).message).toContain("schema_version");
    expect(wireError(JSON.stringify({ schema_version: 2, payload: "nope" })).message).toContain("schema_version");
  });

  it.each<[string, unknown]>([
    ["null", null],
    ["a number", 42],
    ["a boolean", true],
    ["an array", [sample()]],
    ["undefined", undefined],
    ["JSON text of a string", '"hello"'],
    ["JSON text of an array", "[1,2]"],
    ["JSON text of null", "null"],
  ])("a non-object: %s", (_what, input) => {
    wireError(input);
  });

  it.each<[string, string | Uint8Array]>([
    ["truncated text", '{"schema_version": 1,'],
    ["empty text", ""],
    ["not JSON at all", "schema_version=1"],
    ["invalid bytes", new Uint8Array([0xff, 0xfe, 0x7b])],
    ["empty bytes", new Uint8Array()],
  ])("bad JSON: %s", (_what, input) => {
    expect(wireError(input).message).toContain("JSON");
  });

  it.each(["id", "type", "sender", "recipient", "correlation_id", "reply_to", "payload", "timestamp", "trace_id", "span_id", "parent_span_id", "attempt", "priority"])(
    "missing required field %s",
    (field) => {
      const wire: Record<string, unknown> = { ...sample() };
      delete wire[field];
      expect(wireError(wire).message).toContain(field);
    },
  );

  it.each<[string, unknown]>([
    ["id", 5],
    ["id", ""],
    ["type", null],
    ["sender", null],
    ["trace_id", null],
    ["correlation_id", undefined],
    ["payload", { bin: new Uint8Array([1]) }],
    ["sender", ["alice"]],
    ["recipient", {}],
    ["payload", []],
    ["payload", "text"],
    ["payload", null],
    ["payload", { nested: { bad: Number.NaN } }],
    ["payload", { when: new Date(0) }],
    ["timestamp", "1700000000000"],
    ["timestamp", -1],
    ["timestamp", Number.POSITIVE_INFINITY],
    ["trace_id", 12],
    ["span_id", false],
    ["attempt", -1],
    ["attempt", 1.5],
    ["attempt", "0"],
    ["priority", -1],
    ["priority", null],
    ["ttl_ms", -5],
    ["ttl_ms", "10"],
    ["ttl_ms", 2.5],
    ["correlation_id", 5],
    ["reply_to", {}],
    ["parent_span_id", 1],
  ])("mistyped field %s = %j", (field, value) => {
    expect(wireError({ ...sample(), [field]: value }).message).toContain(field);
  });

  it("refuses a payload nested deeper than 1000 levels with INVALID_WIRE_MESSAGE, not a RangeError", () => {
    const nested = (levels: number): string => '{"n":'.repeat(levels - 1) + "[1]" + "}".repeat(levels - 1);
    const text = (levels: number): string => JSON.stringify({ ...sample(), payload: null }).replace('"payload":null', `"payload":${nested(levels)}`);
    expect(fromWire(text(1000)).payload).toHaveProperty("n");
    expect(wireError(text(1001)).message).toContain("nested deeper than 1000 levels");
    const deep = wireError(text(100_000));
    expect(deep.message).toContain("payload");
    expect(deep.message.length).toBeLessThan(400);
  });

  it("never throws anything but InvalidWireMessageError for a damaged message (property)", () => {
    const fields = Object.keys(sample());
    fc.assert(
      fc.property(
        fc.constantFrom(...fields),
        fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true }),
        fc.boolean(),
        (field, junk, asText) => {
          const wire: Record<string, unknown> = { ...sample(), [field]: junk };
          let input: unknown = wire;
          if (asText) {
            try {
              input = JSON.stringify(wire);
            } catch {
              input = wire; // bigint: not expressible as text
            }
          }
          try {
            const m = fromWire(input);
            // whatever it accepted is a well-formed message again (a fractional millisecond may move by a float's last bit)
            const again = fromWire(toWire(m));
            expect({ ...again, timestamp: 0 }).toEqual({ ...m, timestamp: 0 });
            expect(again.timestamp).toBeCloseTo(m.timestamp, 3);
          } catch (err) {
            expect(err).toBeInstanceOf(InvalidWireMessageError);
          }
        },
      ),
    );
  });

  it("refuses arbitrary input with InvalidWireMessageError, never another error (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.string(), fc.json(), fc.uint8Array()), (input) => {
        expect(() => fromWire(input)).toThrow(InvalidWireMessageError);
      }),
    );
  });
});

describe("fromWire on exotic objects", () => {
  it("refuses a revoked proxy, as the envelope or as the payload, with INVALID_WIRE_MESSAGE", () => {
    const envelope = Proxy.revocable({ ...sample() }, {});
    envelope.revoke();
    expect(wireError(envelope.proxy).message).toContain("could not be read");
    const payload = Proxy.revocable({ a: 1 }, {});
    payload.revoke();
    expect(wireError({ ...sample(), payload: payload.proxy }).message).toContain("payload");
    const nested = Proxy.revocable([1], {});
    nested.revoke();
    expect(wireError({ ...sample(), payload: { list: nested.proxy } }).message).toContain("payload");
  });

  it("refuses an envelope or payload whose getter throws, keeping the thrown error as cause", () => {
    const boom = new Error("boom");
    const wire = { ...sample() };
    Object.defineProperty(wire, "sender", { enumerable: true, get: () => { throw boom; } });
    const e = wireError(wire);
    expect(e.cause).toBe(boom);
    const payload = {};
    Object.defineProperty(payload, "x", { enumerable: true, get: () => { throw boom; } });
    expect(wireError({ ...sample(), payload }).cause).toBe(boom);
  });

  it("reads each field once: a getter that answers differently per read cannot pass the check with one value and deliver another", () => {
    const reads: Record<string, number> = {};
    const base = sample() as unknown as Record<string, unknown>;
    const wire = new Proxy(base, {
      get(target, key: string) {
        reads[key] = (reads[key] ?? 0) + 1;
        // valid the first time, junk afterwards
        return reads[key] === 1 ? target[key] : 42;
      },
    });
    const m = fromWire(wire);
    expect(m.sender).toBe("alice");
    expect(Object.values(reads).every((n) => n === 1)).toBe(true);

    let n = 0;
    const payload = {};
    Object.defineProperty(payload, "flip", { enumerable: true, get: () => (n++ === 0 ? "ok" : { not: Symbol("json") }) });
    const copied = fromWire({ ...sample(), payload }).payload;
    expect(copied).toEqual({ flip: "ok" });
    expect(n).toBe(1);
    expect(Object.getOwnPropertyDescriptor(copied, "flip")).toMatchObject({ value: "ok", writable: true });
  });

  it("refuses a payload getter that answers a non-JSON value", () => {
    const payload = {};
    Object.defineProperty(payload, "when", { enumerable: true, get: () => new Date(0) });
    expect(wireError({ ...sample(), payload }).message).toContain("$.payload.when");
  });
});

// ---------------------------------------------------------------- wire
describe("fromWire and toWire on hostile input", () => {
  it("a deeply nested payload (valid JSON text) is refused with a CivitasError, not a RangeError", () => {
    const depth = 100_000;
    const nested = '{"n":'.repeat(depth) + "1" + "}".repeat(depth);
    const text = `{"schema_version":1,"id":"0190b7c2-6d3e-7000-8000-000000000000","type":"t","sender":"a","recipient":"b","timestamp":1,"trace_id":"${"a".repeat(32)}","span_id":"${"b".repeat(16)}","attempt":0,"priority":0,"payload":${nested}}`;
    expect((): unknown => JSON.parse(text)).not.toThrow(); // the text itself is fine JSON
    const error = caught(() => fromWire(text));
    expect(error).toBeInstanceOf(CivitasError);
    expect((error as CivitasError).code).toBe("INVALID_WIRE_MESSAGE");
  });

  it("every message createMessage accepts survives toWire/fromWire (empty type or correlationId)", () => {
    const results: Record<string, string> = {};
    const inits = {
      "empty type": { type: "" },
      "empty correlationId": { correlationId: "" },
      "empty replyTo": { replyTo: "" },
    };
    for (const [what, extra] of Object.entries(inits)) {
      const m = createMessage({ sender: "a", recipient: "b", payload: { x: 1 }, ...extra });
      try {
        results[what] = JSON.stringify(fromWire(toWire(m))) === JSON.stringify(m) ? "lossless" : "changed";
      } catch (error) {
        results[what] = (error as CivitasError).code;
      }
    }
    expect(results).toEqual({ "empty type": "lossless", "empty correlationId": "lossless", "empty replyTo": "lossless" });
  });

  it("toWire refuses something that is not a message with a CivitasError instead of a TypeError or a broken wire object", () => {
    const outcome = (input: unknown): string => {
      try {
        const wire = toWire(input as Message);
        return `returned ${JSON.stringify(wire)}`;
      } catch (error) {
        return error instanceof CivitasError ? error.code : `${(error as Error).name}`;
      }
    };
    expect([outcome(null), outcome({})]).toEqual(["INVALID_WIRE_MESSAGE", "INVALID_WIRE_MESSAGE"]);
  });

  it("round-trips optional fields, unicode (astral, combining, lone surrogates), and a multi-megabyte payload through text", () => {
    const big = "x".repeat(4 * 1024 * 1024);
    const payload: JsonObject = {
      text: "ünïcødé 🚀 e\u0301 \u{10FFFF} \ud800 alone",
      "🔑": ["\u0000", "\u2028\u2029", -0.5, 1e308, 0],
      __proto__key: { nested: [null, true, { deep: big }] },
    };
    const m = createMessage({
      sender: "sénder",
      recipient: "récipient-日本",
      payload,
      type: "typ€",
      correlationId: "c",
      replyTo: "r",
      parentSpanId: "a".repeat(16),
      ttlMs: 0,
      attempt: 7,
      priority: 3,
      timestamp: 1_700_000_000_000.5,
    });
    const back = fromWire(JSON.stringify(toWire(m)));
    expect(back).toEqual(m);
    expect(Object.keys(back).sort()).toEqual(Object.keys(m).sort());
    const bytes = fromWire(new TextEncoder().encode(JSON.stringify(toWire(m))));
    expect(bytes).toEqual(m);
  });
});
