import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { InvalidArgumentError, PayloadNotSerializableError } from "../../src/errors/errors.js";
import type { JsonObject } from "../../src/message/json.js";
import type { StateStore } from "../../src/state/state-store.js";
import { StoreClosedError } from "../../src/state/store-closed-error.js";

/** What a contract run needs from each store implementation. */
export interface StoreUnderTest {
  store: StateStore;
  /** Closes the store (if still open) and removes whatever it created. */
  cleanup: () => Promise<void>;
}

/** What `JSON.stringify` then `JSON.parse` makes of `value`: what a store must give back. */
function jsonCopy(value: JsonObject): JsonObject {
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}

/** Plain JSON objects built from `fc.jsonValue()`. */
const jsonObjectArb: fc.Arbitrary<JsonObject> = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), {
  maxKeys: 6,
}) as fc.Arbitrary<JsonObject>;

/** State names: any non-empty well-formed string (lone surrogates are refused by contract). */
const nameArb = fc.string({ unit: "binary", minLength: 1, maxLength: 24 });

/** Values that are not plain JSON objects, with a label for the test name. */
function nonJsonStates(): [string, unknown][] {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  return [
    ["a function", { f: () => 1 }],
    ["a Date", { at: new Date(0) }],
    ["a Map", { m: new Map() }],
    ["NaN", { n: Number.NaN }],
    ["Infinity", { n: Number.POSITIVE_INFINITY }],
    ["undefined", { u: undefined }],
    ["a bigint", { b: 1n }],
    ["a symbol", { s: Symbol("x") }],
    ["a cycle", cyclic],
    ["a nested class instance", { deep: [{ x: new (class Point {})() }] }],
    ["an array", [1, 2]],
    ["null", null],
    ["a string", "state"],
    ["undefined itself", undefined],
  ];
}

const badNames: [string, unknown][] = [
  ["the empty string", ""],
  ["a number", 42],
  ["undefined", undefined],
  ["null", null],
  ["an object", { name: "x" }],
  ["a lone surrogate", "agent-\uD800"],
];

/** Asserts that `promise` rejects with a `CivitasError` of class `cls` and `code`. */
async function expectRejection(promise: Promise<unknown>, cls: abstract new (...args: never[]) => Error, code: string): Promise<void> {
  const err: unknown = await promise.then(
    () => {
      throw new Error(`expected a rejection with ${code}, but the promise resolved`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(cls);
  expect(err).toBeInstanceOf(CivitasError);
  expect((err as CivitasError).code).toBe(code);
  expect((err as CivitasError).name).toBe(cls.name);
}

/** Calls `fn`, failing the test if it throws synchronously, and returns its promise. */
function callAsync<T>(fn: () => Promise<T>): Promise<T> {
  let result: Promise<T> | undefined;
  expect(() => {
    result = fn();
  }).not.toThrow();
  expect(result).toBeInstanceOf(Promise);
  return result as Promise<T>;
}

/**
 * The tests every {@link StateStore} passes. `makeStore` is called once per
 * test and must return an empty, open store; `cleanup` runs after the test.
 */
export function describeStateStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`StateStore contract: ${name}`, () => {
    let store: StateStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    afterEach(async () => {
      await cleanup();
    });

    it("declares whether it is durable", () => {
      expect(typeof store.durable).toBe("boolean");
    });

    it("gets undefined for a name that has no state", async () => {
      expect(await store.get("nobody")).toBeUndefined();
      expect(await store.list()).toEqual([]);
    });

    it("round-trips any plain JSON object (property)", async () => {
      await fc.assert(
        fc.asyncProperty(nameArb, jsonObjectArb, async (key, state) => {
          await store.set(key, state);
          expect(await store.get(key)).toEqual(jsonCopy(state));
          expect(await store.list()).toContain(key);
        }),
        { numRuns: 60 },
      );
    });

    it("round-trips awkward but valid values", async () => {
      const state: JsonObject = {
        ...(JSON.parse('{"__proto__": {"polluted": false}}') as JsonObject),
        "": "empty key",
        unicode: "zürich 😀 \u0000 \uD800 lone",
        nested: { a: [1, -0.5, 1e300, null, true, { b: [] }] },
        big: "x".repeat(200_000),
      };
      const key = "a gent/with:odd.chars 😀";
      await store.set(key, state);
      const got = await store.get(key);
      expect(got).toEqual(jsonCopy(state));
      expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it("overwrites the whole state on set (no merge)", async () => {
      await store.set("a", { x: 1, y: 2 });
      await store.set("a", { z: 3 });
      expect(await store.get("a")).toEqual({ z: 3 });
      expect(await store.list()).toEqual(["a"]);
    });

    it("deletes, and deleting a name without state is a no-op", async () => {
      await store.set("a", { x: 1 });
      await store.set("b", { x: 2 });
      await store.delete("a");
      expect(await store.get("a")).toBeUndefined();
      expect(await store.get("b")).toEqual({ x: 2 });
      expect(await store.list()).toEqual(["b"]);
      await expect(store.delete("a")).resolves.toBeUndefined();
      await expect(store.delete("never-set")).resolves.toBeUndefined();
      await store.set("a", { x: 3 });
      expect(await store.get("a")).toEqual({ x: 3 });
    });

    it("lists names sorted", async () => {
      const names = ["zeta", "alpha", "Beta", "beta", "a-1", "a10", "a2", "é", "😀", "\uFFFD"];
      for (const n of names) await store.set(n, { n });
      expect(await store.list()).toEqual([...names].sort());
    });

    it("lists names sorted (property)", async () => {
      await fc.assert(
        fc.asyncProperty(fc.uniqueArray(nameArb, { maxLength: 12 }), async (names) => {
          for (const n of await store.list()) await store.delete(n);
          for (const n of names) await store.set(n, {});
          expect(await store.list()).toEqual([...names].sort());
        }),
        { numRuns: 25 },
      );
    });

    it("copies deeply on set: mutating the caller's object later changes nothing stored", async () => {
      const state = { n: 1, list: [1, 2], inner: { deep: { v: "a" } } };
      await store.set("a", state);
      state.n = 2;
      state.list.push(3);
      state.inner.deep.v = "b";
      expect(await store.get("a")).toEqual({ n: 1, list: [1, 2], inner: { deep: { v: "a" } } });
    });

    it("copies deeply on get: mutating a returned object changes nothing stored", async () => {
      await store.set("a", { n: 1, list: [1, 2], inner: { deep: { v: "a" } } });
      const first = (await store.get("a")) as { n: number; list: number[]; inner: { deep: { v: string } } };
      first.n = 99;
      first.list.push(3);
      first.inner.deep.v = "b";
      const second = await store.get("a");
      expect(second).toEqual({ n: 1, list: [1, 2], inner: { deep: { v: "a" } } });
      expect(second).not.toBe(first);
    });

    for (const [label, bad] of nonJsonStates()) {
      it(`refuses state containing ${label} with PAYLOAD_NOT_SERIALIZABLE and keeps the previous state`, async () => {
        await store.set("a", { kept: true });
        await expectRejection(
          callAsync(() => store.set("a", bad as JsonObject)),
          PayloadNotSerializableError,
          "PAYLOAD_NOT_SERIALIZABLE",
        );
        await expectRejection(
          callAsync(() => store.set("fresh", bad as JsonObject)),
          PayloadNotSerializableError,
          "PAYLOAD_NOT_SERIALIZABLE",
        );
        expect(await store.get("a")).toEqual({ kept: true });
        expect(await store.get("fresh")).toBeUndefined();
        expect(await store.list()).toEqual(["a"]);
      });
    }

    for (const [label, bad] of badNames) {
      it(`rejects (never throws) a name that is ${label} with INVALID_ARGUMENT`, async () => {
        const key = bad as string;
        await expectRejection(callAsync(() => store.get(key)), InvalidArgumentError, "INVALID_ARGUMENT");
        await expectRejection(callAsync(() => store.set(key, { x: 1 })), InvalidArgumentError, "INVALID_ARGUMENT");
        await expectRejection(callAsync(() => store.delete(key)), InvalidArgumentError, "INVALID_ARGUMENT");
        expect(await store.list()).toEqual([]);
      });
    }

    it("closes idempotently, then rejects (never throws) every call with STORE_CLOSED", async () => {
      await store.set("a", { x: 1 });
      await store.close();
      await expect(store.close()).resolves.toBeUndefined();
      await expectRejection(callAsync(() => store.get("a")), StoreClosedError, "STORE_CLOSED");
      await expectRejection(callAsync(() => store.set("a", { x: 2 })), StoreClosedError, "STORE_CLOSED");
      await expectRejection(callAsync(() => store.delete("a")), StoreClosedError, "STORE_CLOSED");
      await expectRejection(callAsync(() => store.list()), StoreClosedError, "STORE_CLOSED");
      await expect(store.close()).resolves.toBeUndefined();
    });

    it("two concurrent close() calls both resolve", async () => {
      await expect(Promise.all([store.close(), store.close()])).resolves.toEqual([undefined, undefined]);
    });

    it("lands every one of many concurrent sets to different names", async () => {
      const names = Array.from({ length: 50 }, (_, i) => `agent-${String(i).padStart(2, "0")}`);
      await Promise.all(names.map((n, i) => store.set(n, { i, name: n })));
      expect(await store.list()).toEqual(names);
      const got = await Promise.all(names.map((n) => store.get(n)));
      expect(got).toEqual(names.map((n, i) => ({ i, name: n })));
    });
  });
}
