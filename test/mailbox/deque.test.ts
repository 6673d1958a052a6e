import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Deque } from "../../src/mailbox/deque.js";

describe("Deque", () => {
  it("is empty when new", () => {
    const deque = new Deque<number>();
    expect(deque.length).toBe(0);
    expect(deque.shift()).toBeUndefined();
    expect(deque.peek()).toBeUndefined();
    expect(deque.drain()).toEqual([]);
  });

  it("is first in, first out", () => {
    const deque = new Deque<string>();
    deque.push("a");
    deque.push("b");
    deque.push("c");
    expect(deque.length).toBe(3);
    expect(deque.peek()).toBe("a");
    expect(deque.shift()).toBe("a");
    expect(deque.peek()).toBe("b");
    expect(deque.shift()).toBe("b");
    expect(deque.shift()).toBe("c");
    expect(deque.shift()).toBeUndefined();
    expect(deque.length).toBe(0);
  });

  it("keeps order when it grows while its contents wrap around the end of the buffer", () => {
    const deque = new Deque<number>();
    // initial storage holds 4: move the head forward so the next pushes wrap
    for (const n of [1, 2, 3]) deque.push(n);
    expect(deque.shift()).toBe(1);
    expect(deque.shift()).toBe(2);
    for (const n of [4, 5, 6]) deque.push(n); // wraps: [5, 6, 3, 4] with head at 2
    for (const n of [7, 8, 9, 10, 11]) deque.push(n); // grows twice from a wrapped state
    expect(deque.length).toBe(9);
    expect(deque.drain()).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(deque.length).toBe(0);
    deque.push(12);
    expect(deque.peek()).toBe(12);
  });

  it("survives many wraparounds at a steady size without growing out of order", () => {
    const deque = new Deque<number>();
    const expected: number[] = [];
    let next = 0;
    for (let i = 0; i < 5; i++) {
      deque.push(next);
      expected.push(next++);
    }
    for (let round = 0; round < 1000; round++) {
      expect(deque.shift()).toBe(expected.shift());
      deque.push(next);
      expected.push(next++);
    }
    expect(deque.drain()).toEqual(expected);
  });

  it("drain returns every item, even falsy and undefined ones, and empties the deque", () => {
    const deque = new Deque<number | undefined | null>();
    for (const item of [0, undefined, null, 2]) deque.push(item);
    expect(deque.drain()).toEqual([0, undefined, null, 2]);
    expect(deque.length).toBe(0);
    deque.push(7);
    expect(deque.drain()).toEqual([7]);
  });

  it("removes an item from the middle of a wrapped buffer, keeping the others in order", () => {
    const deque = new Deque<number>();
    for (const n of [1, 2, 3]) deque.push(n);
    deque.shift();
    deque.shift();
    for (const n of [4, 5, 6]) deque.push(n); // wrapped: 3 4 5 6 with the head at index 2
    expect(deque.remove(5)).toBe(true);
    expect(deque.remove(42)).toBe(false);
    expect(deque.length).toBe(3);
    deque.push(7);
    expect(deque.drain()).toEqual([3, 4, 6, 7]);
  });

  it("behaves like an array used as a queue (property)", () => {
    type Op = { op: "push"; value: number } | { op: "unshift"; value: number } | { op: "shift" } | { op: "peek" } | { op: "drain" } | { op: "toArray" } | { op: "remove"; value: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.integer({ min: 0, max: 20 }).map((value): Op => ({ op: "push", value })) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 20 }).map((value): Op => ({ op: "unshift", value })) },
      { weight: 1, arbitrary: fc.constant<Op>({ op: "toArray" }) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 20 }).map((value): Op => ({ op: "remove", value })) },
      { weight: 3, arbitrary: fc.constant<Op>({ op: "shift" }) },
      { weight: 1, arbitrary: fc.constant<Op>({ op: "peek" }) },
      { weight: 1, arbitrary: fc.constant<Op>({ op: "drain" }) },
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), (ops) => {
        const deque = new Deque<number>();
        const model: number[] = [];
        for (const op of ops) {
          switch (op.op) {
            case "push":
              deque.push(op.value);
              model.push(op.value);
              break;
            case "unshift":
              deque.unshift(op.value);
              model.unshift(op.value);
              break;
            case "shift":
              expect(deque.shift()).toBe(model.shift());
              break;
            case "toArray":
              expect(deque.toArray()).toEqual(model);
              break;
            case "peek":
              expect(deque.peek()).toBe(model[0]);
              break;
            case "drain":
              expect(deque.drain()).toEqual(model.splice(0));
              break;
            case "remove": {
              const index = model.indexOf(op.value);
              expect(deque.remove(op.value)).toBe(index >= 0);
              if (index >= 0) model.splice(index, 1);
              break;
            }
          }
          expect(deque.length).toBe(model.length);
        }
        expect(deque.drain()).toEqual(model);
      }),
      { numRuns: 300 },
    );
  });
});
