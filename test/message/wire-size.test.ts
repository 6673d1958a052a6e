import { describe, expect, it } from "vitest";
import { createMessage, fromWire, MAX_WIRE_BYTES, toWire } from "../../src/index.js";
import { decodeMessage, encodeMessage } from "../../src/nats/codec.js";
import { expectCivitasError } from "../support/outcome.js";

/** Asserts `run` throws a CivitasError with `code` whose message matches `text`. */
function refuses(run: () => unknown, code: string, text: RegExp): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expectCivitasError(thrown, code);
  expect((thrown as Error).message).toMatch(text);
}

// Issue 21, item 5: a documented bound on what a peer can make this process parse.

function messageOf(bytes: number): ReturnType<typeof createMessage> {
  return createMessage({ sender: "a", recipient: "b", payload: { blob: "x".repeat(bytes) } });
}

describe("MAX_WIRE_BYTES", () => {
  it("is 8 MiB: a message just under it is read, one over it is refused with INVALID_WIRE_MESSAGE (text, bytes, MessagePack)", () => {
    expect(MAX_WIRE_BYTES).toBe(8 * 1024 * 1024);
    const under = JSON.stringify(toWire(messageOf(MAX_WIRE_BYTES - 1024)));
    expect(Buffer.byteLength(under)).toBeLessThanOrEqual(MAX_WIRE_BYTES);
    expect((fromWire(under).payload.blob as string).length).toBe(MAX_WIRE_BYTES - 1024);
    const over = JSON.stringify(toWire(messageOf(MAX_WIRE_BYTES)));
    for (const input of [over, Buffer.from(over, "utf8")]) {
      refuses(() => fromWire(input), "INVALID_WIRE_MESSAGE", /over the limit of 8388608 bytes/);
    }
    refuses(() => decodeMessage(encodeMessage(messageOf(MAX_WIRE_BYTES), "msgpack")), "INVALID_WIRE_MESSAGE", /over the limit/);
    refuses(() => decodeMessage(encodeMessage(messageOf(MAX_WIRE_BYTES), "json")), "INVALID_WIRE_MESSAGE", /over the limit/);
    expect(decodeMessage(encodeMessage(messageOf(1000), "msgpack")).payload.blob).toBe("x".repeat(1000));
  });

  it("counts UTF-8 bytes of a string, not its UTF-16 length", () => {
    // 3 bytes per character: under the limit in characters, over it in bytes.
    const text = JSON.stringify(toWire(createMessage({ sender: "a", recipient: "b", payload: { blob: "€".repeat(Math.ceil(MAX_WIRE_BYTES / 3) + 10) } })));
    expect(text.length).toBeLessThan(MAX_WIRE_BYTES);
    refuses(() => fromWire(text), "INVALID_WIRE_MESSAGE", /over the limit/);
  });
});
