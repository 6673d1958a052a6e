import { describe, expect, it } from "vitest";
import { findCycle, formatChain, type WaitEdge } from "../../../src/testing/simulation/wait-graph.js";

const ask = (from: string, to: string): WaitEdge => ({ from, to, type: "q", via: "ask" });
const put = (from: string, to: string): WaitEdge => ({ from, to, type: "flood", via: "put" });

describe("the wait graph", () => {
  it("finds a cycle through any of an agent's waits, not only its first", () => {
    // a waits on c (a dead end) and, by a second put, on b; b waits on a
    const cycle = findCycle([put("a", "c"), put("a", "b"), ask("b", "a")]);
    expect(cycle && formatChain(cycle)).toBe("a waits for room in b's mailbox (flood) -> b asks a (q)");
  });

  it("a chain without a cycle is none", () => {
    expect(findCycle([ask("a", "b"), put("b", "c"), put("d", "c")])).toBeUndefined();
  });
});
