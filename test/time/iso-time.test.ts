import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoTime } from "../../src/time/clock.js";

describe("isoTime", () => {
  it("formats exactly as Date#toISOString, for any time Date can represent (property)", () => {
    const limit = 8.64e15;
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -limit, max: limit }), fc.double({ min: -limit, max: limit, noNaN: true }), fc.integer({ min: 1.7e12, max: 1.8e12 })), (ms) => {
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 2000 },
    );
  });

  it("stays right across second boundaries and repeated calls within a second", () => {
    const start = Date.UTC(2026, 11, 31, 23, 59, 59, 998);
    for (let ms = start; ms < start + 2_005; ms++) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  });

  it("throws a RangeError for a time Date cannot represent, as toISOString does", () => {
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});
