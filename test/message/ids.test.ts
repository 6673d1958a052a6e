import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { newSpanId, newTraceId, useIdSource, uuidv7 } from "../../src/message/ids.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MAX_48_BIT = 2 ** 48 - 1;

/** The 48-bit millisecond timestamp at the front of a UUIDv7. */
function timeOf(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** How far back a time may step and still continue the last id's sequence (see uuidv7). */
const CLOCK_STEP_MS = 10_000;

/**
 * Mints an id for `ms` as the first of a fresh sequence: ids are monotonic,
 * so a time at most 10 s behind the last one used would continue that
 * one's sequence; a time further away starts a new one.
 */
function fresh(ms: number): string {
  uuidv7(ms > MAX_48_BIT / 2 ? 0 : MAX_48_BIT);
  return uuidv7(ms);
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
        const id = fresh(ms);
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

  it("sorts by creation time, and never backwards for a clock stepped back at most 10 s (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_48_BIT }), fc.integer({ min: 0, max: MAX_48_BIT }), (a, b) => {
        fc.pre(a !== b);
        const ida = fresh(a);
        const idb = uuidv7(b);
        expect(ida < idb).toBe(a < b || a - b <= CLOCK_STEP_MS);
      }),
    );
  });

  it("moves on to the next millisecond when the counter overflows, so ids in one millisecond stay in order", () => {
    const ms = 1_600_000_000_000;
    const ids = [fresh(ms)];
    for (let i = 0; i < 10_000; i++) ids.push(uuidv7(ms));
    for (let i = 1; i < ids.length; i++) expect(ids[i] as string > (ids[i - 1] as string)).toBe(true);
    // at most 4,096 ids per millisecond (fewer from a random counter start): 10,001 ids span 3 to 5 milliseconds
    const times = ids.map(timeOf);
    expect(times[0]).toBe(ms);
    expect(Math.max(...times)).toBeGreaterThanOrEqual(ms + 2);
    expect(Math.max(...times)).toBeLessThanOrEqual(ms + 5);
    // the clock catching up continues the same sequence
    const caughtUp = uuidv7(ms + 1);
    expect(caughtUp > (ids[ids.length - 1] as string)).toBe(true);
  });

  it("never goes below the last time used when the clock steps back up to 10 s", () => {
    const ms = 1_650_000_000_000;
    const first = fresh(ms);
    const back = uuidv7(ms - 3_000);
    const edge = uuidv7(ms - CLOCK_STEP_MS);
    expect(back > first).toBe(true);
    expect(edge > back).toBe(true);
    expect(timeOf(back)).toBe(ms);
    expect(timeOf(edge)).toBe(ms);
    // further back is an explicit earlier time: encoded as given
    expect(timeOf(uuidv7(ms - CLOCK_STEP_MS - 1))).toBe(ms - CLOCK_STEP_MS - 1);
  });

  it("stays well-formed and unique when the counter overflows at the last 48-bit millisecond", () => {
    const ids = new Set<string>([fresh(MAX_48_BIT)]);
    for (let i = 0; i < 5_000; i++) {
      const id = uuidv7(MAX_48_BIT);
      expect(id).toMatch(UUID_V7);
      expect(timeOf(id)).toBe(MAX_48_BIT);
      ids.add(id);
    }
    expect(ids.size).toBe(5_001);
  });

  it("stays well-formed for fractional, negative and non-finite times", () => {
    expect(uuidv7(1_700_000_000_000.75)).toMatch(UUID_V7);
    expect(timeOf(uuidv7(1_700_000_000_000.75))).toBe(1_700_000_000_000);
    expect(uuidv7(-5)).toMatch(UUID_V7);
    expect(timeOf(uuidv7(-5))).toBe(0);
    expect(uuidv7(Number.NaN)).toMatch(UUID_V7);
    expect(uuidv7(Number.POSITIVE_INFINITY)).toMatch(UUID_V7);
  });

  it("starts a well-formed sequence whatever the first time is, -1 included (before the first id, no time continues a sequence)", () => {
    useIdSource();
    const first = uuidv7(-1);
    expect(first).toMatch(UUID_V7);
    expect(timeOf(first)).toBe(0);
    expect(uuidv7(-1) > first).toBe(true);
  });

  it("stays well-formed, unique and in order for any sequence of times from a fresh start (property)", () => {
    const time = fc.oneof(fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_004 }), fc.constantFrom(-1, 0, 0.5, Number.NaN), fc.double({ min: 1_700_000_000_000, max: 1_700_000_000_004, noNaN: true }));
    fc.assert(
      fc.property(fc.array(time, { minLength: 1, maxLength: 200 }), (times) => {
        useIdSource();
        const ids = times.map((ms) => uuidv7(ms));
        for (const id of ids) expect(id).toMatch(UUID_V7);
        expect(new Set(ids).size).toBe(ids.length);
        // A time more than 10 s behind the latest one so far starts afresh (NaN reads the clock, years ahead of these times).
        let latest = -Infinity;
        for (let i = 0; i < ids.length; i++) {
          const ms = Number.isNaN(times[i]) ? Date.now() : Math.max(0, Math.floor(times[i] as number));
          if (i > 0 && ms >= latest - CLOCK_STEP_MS) expect((ids[i] as string) > (ids[i - 1] as string)).toBe(true);
          latest = Math.max(latest, ms);
        }
      }),
    );
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

// ---------------------------------------------------------------- ids
describe("UUIDv7 order", () => {
  it("ids minted in one millisecond are in strictly increasing order (monotonic within a process)", () => {
    const ms = 1_700_000_000_123;
    const ids: string[] = [];
    for (let i = 0; i < 5_000; i++) ids.push(uuidv7(ms));
    let firstDrop = -1;
    for (let i = 1; i < ids.length; i++) {
      if (!((ids[i] as string) > (ids[i - 1] as string))) {
        firstDrop = i;
        break;
      }
    }
    expect(firstDrop, `id ${firstDrop} (${ids[firstDrop]}) sorts before id ${firstDrop - 1} (${ids[firstDrop - 1]})`).toBe(-1);
  });

  it("ids minted back to back on the real clock never go backwards", () => {
    const ids: string[] = [];
    for (let i = 0; i < 200_000; i++) ids.push(uuidv7());
    let backwards = 0;
    for (let i = 1; i < ids.length; i++) if ((ids[i] as string) <= (ids[i - 1] as string)) backwards++;
    expect(backwards).toBe(0);
  });
});
