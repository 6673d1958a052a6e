import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PendingRequests } from "../../src/bus/pending-requests.js";

interface Entry {
  readonly correlationId: string;
  readonly n: number;
}

describe("PendingRequests", () => {
  it("takes back what was added, once, by correlation id, with or without requests added after it", () => {
    const pending = new PendingRequests<Entry>();
    const a = { correlationId: "a", n: 1 };
    const b = { correlationId: "b", n: 2 };
    pending.add(a);
    expect(pending.size).toBe(1);
    pending.add(b);
    expect(pending.size).toBe(2);
    expect(pending.ids()).toEqual(["a", "b"]);
    expect(pending.take("a")).toBe(a);
    expect(pending.take("a")).toBeUndefined();
    expect(pending.take("nobody")).toBeUndefined();
    expect(pending.take("b")).toBe(b);
    expect(pending.size).toBe(0);
    expect(pending.ids()).toEqual([]);
  });

  it("behaves like a Map from correlation id to request over any sequence of adds and takes (model-based)", () => {
    type Op = { kind: "add" } | { kind: "take"; pick: number } | { kind: "takeUnknown" };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.constant<Op>({ kind: "add" }),
      fc.nat().map<Op>((pick) => ({ kind: "take", pick })),
      fc.constant<Op>({ kind: "takeUnknown" }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const pending = new PendingRequests<Entry>();
        const model = new Map<string, Entry>();
        let next = 0;
        for (const o of ops) {
          if (o.kind === "add") {
            const entry = { correlationId: `id-${next}`, n: next++ };
            pending.add(entry);
            model.set(entry.correlationId, entry);
          } else if (o.kind === "take") {
            const ids = [...model.keys()];
            const id = ids.length === 0 ? "id-none" : (ids[o.pick % ids.length] as string);
            const expected = model.get(id);
            model.delete(id);
            expect(pending.take(id)).toBe(expected);
          } else {
            expect(pending.take("never-added")).toBeUndefined();
          }
          expect(pending.size).toBe(model.size);
          expect([...pending.ids()].sort()).toEqual([...model.keys()].sort());
        }
      }),
      { numRuns: 500 },
    );
  });
});
