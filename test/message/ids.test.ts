import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { newSpanId, newTraceId, uuidv7 } from "../../src/message/ids.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MAX_48_BIT = 2 ** 48 - 1;

/** The 48-bit millisecond timestamp at the front of a UUIDv7. */
function timeOf(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

describe("uuidv7", () => {
  it("has the RFC 9562 layout: version nibble 7 and variant bits 10", () => {
    for (let i = 0; i < 2000; i++) {
      const id = uuidv7();
      expect(id).toMatch(UUID_V7);
      expect(id[14]).toBe("7");
      // the two top bits of the variant octet are 1 0
      expect(Number.parseInt(id.charAt(19), 16) >> 2).toBe(0b10);
    }
  });

  it("encodes the given time in its first 48 bits (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_48_BIT }), (ms) => {
        const id = uuidv7(ms);
        expect(id).toMatch(UUID_V7);
        expect(timeOf(id)).toBe(ms);
      }),
    );
  });

  it("encodes the current time by default", () => {
    const before = Date.now();
    const id = uuidv7();
    const after = Date.now();
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(after);
  });

  it("sorts by creation time (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_48_BIT }), fc.integer({ min: 0, max: MAX_48_BIT }), (a, b) => {
        fc.pre(a !== b);
        const [ida, idb] = [uuidv7(a), uuidv7(b)];
        expect(ida < idb).toBe(a < b);
      }),
    );
  });

  it("stays well-formed for fractional, negative and non-finite times", () => {
    expect(uuidv7(1_700_000_000_000.75)).toMatch(UUID_V7);
    expect(timeOf(uuidv7(1_700_000_000_000.75))).toBe(1_700_000_000_000);
    expect(uuidv7(-5)).toMatch(UUID_V7);
    expect(timeOf(uuidv7(-5))).toBe(0);
    expect(uuidv7(Number.NaN)).toMatch(UUID_V7);
    expect(uuidv7(Number.POSITIVE_INFINITY)).toMatch(UUID_V7);
  });

  it("is unique, also within one millisecond", () => {
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(uuidv7(1_700_000_000_000));
    expect(ids.size).toBe(10_000);
  });
});

describe("trace and span ids", () => {
  it("newTraceId is 32 lowercase hex characters, newSpanId 16", () => {
    for (let i = 0; i < 1000; i++) {
      expect(newTraceId()).toMatch(/^[0-9a-f]{32}$/);
      expect(newSpanId()).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it("are unique and not all zero", () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    // crosses several blocks of 4,095 ids (each with a fresh random prefix) and refills of the random pool
    const count = 20_000;
    for (let i = 0; i < count; i++) {
      traces.add(newTraceId());
      spans.add(newSpanId());
    }
    expect(traces.size).toBe(count);
    expect(spans.size).toBe(count);
    // a new block draws a new random prefix: at least 4 distinct prefixes over 20,000 ids
    expect(new Set([...traces].map((id) => id.slice(0, 29))).size).toBeGreaterThanOrEqual(4);
    expect(new Set([...spans].map((id) => id.slice(0, 13))).size).toBeGreaterThanOrEqual(4);
    expect(traces.has("0".repeat(32))).toBe(false);
    expect(spans.has("0".repeat(16))).toBe(false);
  });
});
