import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { shortAscii } from "../../src/nats/short-ascii.js";

describe("shortAscii", () => {
  it("is the bytes' text for every length from 0 to 16, anywhere in the array (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }).map((bytes) => bytes.map((b) => b & 0x7f)), fc.nat(40), fc.nat(16), (bytes, at, length) => {
        fc.pre(at + length <= bytes.length);
        expect(shortAscii(bytes, at, length)).toBe(Buffer.from(bytes.subarray(at, at + length)).toString("latin1"));
      }),
      { numRuns: 500 },
    );
  });

  it("refuses a length it does not spell out", () => {
    expect(() => shortAscii(new Uint8Array(20), 0, 17)).toThrow(RangeError);
  });
});
