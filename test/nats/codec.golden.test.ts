import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fromWire } from "../../src/message/from-wire.js";
import { toWire } from "../../src/message/to-wire.js";
import { decodeMessage, decodeWire, encodeMessage, encodeWire } from "../../src/nats/codec.js";
import { pythonFloat } from "../../src/nats/python-json.js";

/** Envelopes encoded by the real Python json and msgpack modules (test/nats/fixtures/golden_vectors.py). */
const golden = JSON.parse(readFileSync(new URL("fixtures/golden-vectors.json", import.meta.url), "utf8")) as {
  vectors: { name: string; json: string; msgpack: string }[];
};
const bytes = (base64: string): Uint8Array => new Uint8Array(Buffer.from(base64, "base64"));

describe("golden vectors written by Python's json and msgpack", () => {
  it("there are vectors to check", () => {
    expect(golden.vectors.length).toBeGreaterThanOrEqual(10);
  });

  describe.each(golden.vectors)("$name", (vector) => {
    const json = bytes(vector.json);
    const msgpack = bytes(vector.msgpack);

    it("both encodings decode to the same envelope, and the reader tells them apart by the first byte", () => {
      expect(json[0]).toBe(0x7b);
      expect((msgpack[0]! & 0xf0) === 0x80 || msgpack[0] === 0xde).toBe(true);
      expect(decodeWire(msgpack)).toEqual(decodeWire(json));
      expect(decodeWire(json)).toEqual(JSON.parse(Buffer.from(json).toString("utf8")));
    });

    it("re-encodes byte for byte as msgpack.packb does", () => {
      expect(Buffer.from(encodeMessage(decodeMessage(msgpack), "msgpack")).toString("hex")).toBe(Buffer.from(msgpack).toString("hex"));
      expect(Buffer.from(encodeMessage(decodeMessage(json), "msgpack"))).toEqual(Buffer.from(msgpack));
    });

    it("re-encodes byte for byte as json.dumps does", () => {
      expect(Buffer.from(encodeMessage(decodeMessage(json), "json")).toString("utf8")).toBe(Buffer.from(json).toString("utf8"));
      expect(Buffer.from(encodeWire(toWire(fromWire(decodeWire(msgpack))), "json"))).toEqual(Buffer.from(json));
    });
  });
});

describe("pythonFloat writes Python's repr(float)", () => {
  it.each<[number, string]>([
    [1764690000, "1764690000.0"],
    [1764690000.123, "1764690000.123"],
    [0.5, "0.5"],
    [1e-7, "1e-07"],
    [0.0001, "0.0001"],
    [0.00001, "1e-05"],
    [1e15, "1000000000000000.0"],
    [1e16, "1e+16"],
    [1.5e300, "1.5e+300"],
    [-2.25, "-2.25"],
    [123456789012345680, "1.2345678901234568e+17"],
    [5e-324, "5e-324"],
    [-0, "-0.0"],
    [0, "0.0"],
  ])("%s as %s", (value, text) => {
    expect(pythonFloat(value)).toBe(text);
  });
});
