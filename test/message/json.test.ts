import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { PayloadNotSerializableError } from "../../src/errors/errors.js";
import { assertJsonObject, copyJson, findNonJson, MAX_JSON_DEPTH, type JsonObject, type JsonValue } from "../../src/message/json.js";
import { createMessage } from "../../src/message/message.js";
import { fromWire } from "../../src/message/from-wire.js";
import { toWire } from "../../src/message/to-wire.js";

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

/** Runs `fn` and returns what it threw. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

function payloadError(payload: unknown): PayloadNotSerializableError {
  const err = thrown(() => createMessage({ sender: "a", recipient: "b", payload: payload as JsonObject }));
  expect(err).toBeInstanceOf(PayloadNotSerializableError);
  expect(err).toBeInstanceOf(CivitasError);
  const e = err as PayloadNotSerializableError;
  expect(e.code).toBe("PAYLOAD_NOT_SERIALIZABLE");
  expect(e.name).toBe("PayloadNotSerializableError");
  return e;
}

const cyclic: Record<string, unknown> = { name: "loop" };
cyclic.self = cyclic;
const sparse: number[] = [1];
sparse[2] = 3;
const cyclicArray: unknown[] = [];
cyclicArray.push({ back: cyclicArray });

describe("payload checks", () => {
  it.each<[string, unknown, string]>([
    ["a Date", { at: new Date(0) }, "$.at"],
    ["a Map", { m: new Map() }, "$.m"],
    ["a Set", { s: new Set([1]) }, "$.s"],
    ["a class instance", { p: new Point(1, 2) }, "$.p"],
    ["a function", { f: () => 1 }, "$.f"],
    ["a symbol value", { s: Symbol("x") }, "$.s"],
    ["a bigint", { big: 1n }, "$.big"],
    ["an undefined value", { u: undefined }, "$.u"],
    ["NaN", { n: Number.NaN }, "$.n"],
    ["Infinity", { n: Number.POSITIVE_INFINITY }, "$.n"],
    ["-Infinity", { n: Number.NEGATIVE_INFINITY }, "$.n"],
    ["a typed array", { bytes: new Uint8Array(2) }, "$.bytes"],
    ["a boxed primitive", { n: new Number(1) }, "$.n"],
    ["a deeply nested Date", { a: { b: [1, { c: new Date(0) }] } }, "$.a.b[1].c"],
    ["an undefined array element", { list: [1, undefined] }, "$.list[1]"],
    ["a sparse array", { list: sparse }, "$.list[1]"],
    ["a cycle", cyclic, "$.self"],
    ["a cycle through an array", { root: cyclicArray }, "$.root[0].back"],
    ["a non-identifier key", { "a.b": { "": undefined } }, '$["a.b"][""]'],
  ])("rejects %s and names its path", (_what, payload, path) => {
    const err = payloadError(payload);
    expect(err.path).toBe(path);
    expect(err.message).toContain(path);
    expect(err.message).toContain("payload of a message to 'b'");
  });

  it.each<[string, unknown]>([
    ["an array", [1, 2]],
    ["a string", "hello"],
    ["a number", 42],
    ["null", null],
    ["undefined", undefined],
    ["a Date", new Date(0)],
    ["a Map", new Map()],
    ["a class instance", new Point(0, 0)],
    ["an object with a custom prototype", Object.create({ inherited: 1 }) as object],
  ])("rejects %s as the payload itself, with path $", (_what, payload) => {
    expect(payloadError(payload).path).toBe("$");
  });

  it("ignores symbol-keyed and non-enumerable properties, as JSON.stringify does, and they do not cross the wire", () => {
    const payload = { ok: 1, [Symbol("hidden")]: new Date(0) } as unknown as JsonObject;
    Object.defineProperty(payload, "secret", { value: () => 1, enumerable: false });
    const message = createMessage({ sender: "a", recipient: "b", payload });
    expect(message.payload).toBe(payload);
    expect(fromWire(JSON.parse(JSON.stringify(toWire(message))) as unknown).payload).toStrictEqual({ ok: 1 });
  });

  it("accepts nested plain JSON, null-prototype objects and shared (non-cyclic) references", () => {
    const shared = { k: "v" };
    const bare = Object.create(null) as Record<string, unknown>;
    bare.inner = Object.assign(Object.create(null) as object, { n: 1 });
    const payloads: JsonObject[] = [
      {},
      { a: 1, b: "two", c: true, d: null, e: [1, "x", false, null, { f: [[]] }], g: { h: { i: -0.5 } } },
      { left: shared, right: shared, list: [shared, shared] },
      bare as JsonObject,
      { nested: bare as JsonObject },
      { "weird key": 1, "": 2, "a.b": [3] },
    ];
    for (const payload of payloads) {
      const message = createMessage({ sender: "a", recipient: "b", payload });
      expect(message.payload).toBe(payload);
    }
  });

  it("accepts any object built from fc.jsonValue() (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (payload) => {
        const message = createMessage({ sender: "a", recipient: "b", payload: payload as JsonObject });
        expect(message.payload).toBe(payload);
        expect(findNonJson(payload)).toBeUndefined();
      }),
    );
  });

  it("accepts any object produced by JSON.parse (property)", () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        const value: unknown = JSON.parse(text);
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
          expect(() => assertJsonObject(value, "value")).toThrow(PayloadNotSerializableError);
        } else {
          expect(() => assertJsonObject(value, "value")).not.toThrow();
        }
      }),
    );
  });

  it("rejects a JSON object once any non-JSON value is planted anywhere in it (property)", () => {
    const poison = fc.constantFrom<unknown>(
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      () => 0,
      Symbol("s"),
      10n,
      new Date(0),
      new Map(),
      new Point(1, 1),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1 }), fc.nat(), poison, (payload, pick, bad) => {
        // walk down to a random container and plant the bad value there
        let container: Record<string, unknown> | unknown[] = payload;
        let path = "$";
        for (let depth = 0; depth < 10; depth++) {
          const keys: string[] = Array.isArray(container) ? container.map((_, i) => String(i)) : Object.keys(container);
          if (keys.length === 0) break;
          const key = keys[(pick + depth) % keys.length] as string;
          const child: unknown = (container as Record<string, unknown>)[key];
          if (typeof child !== "object" || child === null) break;
          path += Array.isArray(container) ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
          container = child as Record<string, unknown> | unknown[];
        }
        const slot = Array.isArray(container) ? `[${container.length}]` : '["planted key"]';
        if (Array.isArray(container)) container.push(bad);
        else container["planted key"] = bad;
        const err = payloadError(payload);
        // the first offence found is the planted one (everything else is JSON)
        expect(err.path).toBe(path + slot);
      }),
    );
  });
});

describe("findNonJson / assertJsonObject", () => {
  it("returns undefined for JSON and [path, reason] otherwise", () => {
    expect(findNonJson({ a: [1, { b: null }] })).toBeUndefined();
    expect(findNonJson("text")).toBeUndefined();
    expect(findNonJson(null)).toBeUndefined();
    const found = findNonJson({ a: [1, { b: Number.NaN }] });
    expect(found?.[0]).toBe("$.a[1].b");
    expect(found?.[1]).toContain("NaN");
  });

  it("names what was checked and how to fix it", () => {
    const err = thrown(() => assertJsonObject({ when: new Date(0) }, "state of 'payer'")) as PayloadNotSerializableError;
    expect(err).toBeInstanceOf(PayloadNotSerializableError);
    expect(err.path).toBe("$.when");
    expect(err.message).toContain("state of 'payer'");
    expect(err.message).toContain("Date");
    expect(err.message).toMatch(/convert/);
  });

  it(`accepts values nested ${MAX_JSON_DEPTH} levels deep and refuses deeper ones with a clear reason, never a RangeError`, () => {
    const nest = (levels: number): JsonObject => {
      let value: JsonObject = { leaf: [1] }; // the array is the innermost level
      for (let i = 2; i < levels; i++) value = { n: value };
      return value;
    };
    expect(findNonJson(nest(MAX_JSON_DEPTH))).toBeUndefined();
    expect(() => assertJsonObject(nest(MAX_JSON_DEPTH), "payload")).not.toThrow();
    expect(findNonJson(nest(MAX_JSON_DEPTH + 1))?.[1]).toBe(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    // far deeper than the stack could recurse
    const text = '{"n":'.repeat(100_000) + "1" + "}".repeat(100_000);
    const err = thrown(() => assertJsonObject(JSON.parse(text), "payload")) as PayloadNotSerializableError;
    expect(err).toBeInstanceOf(PayloadNotSerializableError);
    expect(err.code).toBe("PAYLOAD_NOT_SERIALIZABLE");
    expect(err.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(err.message).toMatch(/flatten/);
    expect(err.message.length).toBeLessThan(400); // the long path is shortened in the message
    expect(err.path.startsWith("$.n.n.n")).toBe(true);
  });

  it("does not confuse a shared object with a cycle after a cycle was rejected", () => {
    // the ancestor stack must be unwound even when a nested check fails
    expect(findNonJson({ a: cyclic })).toEqual(["$.a.self", "a circular reference"]);
    const shared = { x: 1 };
    expect(findNonJson({ a: shared, b: shared })).toBeUndefined();
  });
});

describe("copyJson", () => {
  const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

  it("gives exactly what a JSON round trip gives, for any JSON value (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = copyJson(value as JsonValue);
        expect(copy).toStrictEqual(roundTrip(value));
        expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
      }),
      { numRuns: 500 },
    );
  });

  it("turns -0 into 0, keeps a __proto__ key as an own property, gives null-prototype objects Object.prototype, keeps key order", () => {
    const bare = Object.create(null) as JsonObject;
    bare.z = 1;
    bare.a = [-0, JSON.parse('{"__proto__":{"polluted":true}}') as JsonObject];
    const source = JSON.parse('{"2":"two","b":1,"1":"one","__proto__":{"x":-0}}') as JsonObject;
    source.bare = bare;
    const copy = copyJson(source);
    expect(copy).toStrictEqual(roundTrip(source));
    expect(Object.keys(copy)).toEqual(["1", "2", "b", "__proto__", "bare"]);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(copy.bare)).toBe(Object.prototype);
    expect(Object.is((copy.bare as { a: number[] }).a[0], 0)).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf((copy.bare as { a: JsonObject[] }).a[1])).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(copy, "__proto__")).toBe(true);
  });

  it("shares nothing with its source: mutating either leaves the other as it was", () => {
    const source: JsonObject = { list: [1, { deep: "x" }], nested: { n: 1 } };
    const copy = copyJson(source);
    ((copy.list as JsonValue[])[1] as JsonObject).deep = "changed";
    (source.nested as JsonObject).n = 2;
    expect(source).toStrictEqual({ list: [1, { deep: "x" }], nested: { n: 2 } });
    expect(copy).toStrictEqual({ list: [1, { deep: "changed" }], nested: { n: 1 } });
  });
});
