import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { snapshotMessage } from "../../src/message/snapshot.js";
import type { Message } from "../../src/message/message.js";

const FIELDS = ["id", "type", "sender", "recipient", "correlationId", "replyTo", "payload", "timestamp", "traceId", "spanId", "parentSpanId", "traceFlags", "attempt", "priority", "ttlMs"];

/** Objects shaped like messages: any subset of the fields SPEC 2 names, in any order, with a few others, values of any kind. */
const messageLike = fc
  .tuple(
    fc.shuffledSubarray([...FIELDS, "extra", "x-tenant", "__meta"]),
    fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
    fc.array(fc.oneof(fc.jsonValue(), fc.constant(undefined)), { minLength: 18, maxLength: 18 }),
  )
  .map(([keys, payload, values]) => {
    const message: Record<string, unknown> = {};
    keys.forEach((key, i) => (message[key] = key === "payload" ? payload : values[i]));
    return message as unknown as Message;
  });

describe("snapshotMessage", () => {
  it("holds exactly the own fields and values a spread reads, payload copied, frozen", () => {
    fc.assert(
      fc.property(messageLike, (message) => {
        const copy = snapshotMessage(message);
        expect(Object.isFrozen(copy)).toBe(true);
        // The payload is compared apart: a copy of plain JSON has the plain prototype, whatever the original's.
        const spread: Record<string, unknown> = { ...(message as object) };
        if ("payload" in message) spread["payload"] = copy.payload;
        expect(copy).toStrictEqual(spread);
        // The copy is JSON's: -0 is stored as 0, as JSON.stringify writes it (fast-check's jsonValue draws -0).
        expect(copy.payload).toEqual(JSON.parse(JSON.stringify(message.payload ?? null)) ?? message.payload);
        expect(Object.keys(copy).sort()).toEqual(Object.keys(message).sort());
        if (typeof message.payload === "object" && message.payload !== null && !Array.isArray(message.payload)) {
          expect(copy.payload).not.toBe(message.payload);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("copies a payload's -0 as 0, as JSON writes it", () => {
    const copy = snapshotMessage({ id: "m", payload: { "": -0, n: [-0] } } as unknown as Message);
    expect(Object.is(copy.payload[""], 0)).toBe(true);
    expect(Object.is((copy.payload["n"] as number[])[0], 0)).toBe(true);
  });

  it("reads each field once: a getter that changes its answer is asked once", () => {
    let reads = 0;
    const message = { id: "m", sender: "a", recipient: "b", payload: {}, timestamp: 1, traceId: "t", spanId: "s", attempt: 0, priority: 0 } as Record<string, unknown>;
    Object.defineProperty(message, "type", { enumerable: true, get: () => (reads++ === 0 ? "business" : "_agency.resume") });
    const copy = snapshotMessage(message as unknown as Message);
    expect(copy.type).toBe("business");
    expect(copy.type).toBe("business");
    expect(reads).toBe(1);
  });
});
