/**
 * checkpoint() takes plain JSON state only: anything else is refused with
 * PAYLOAD_NOT_SERIALIZABLE and the stored state is kept.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { InMemoryStateStore } from "civitas-ts";
import { whenStarted, supervisedRuntimes } from "../support/runtimes.js";
import { Doer } from "../support/probe-agents.js";

const supervised = supervisedRuntimes();

describe("checkpoint() of non-plain state", () => {
  for (const [what, make] of [
    ["a Map", () => new Map([["count", 7]])],
    ["a Date", () => new Date(0)],
    ["a class instance", () => new (class Counter { count = 7; })()],
    ["an array", () => [1, 2, 3]],
    ["undefined", () => undefined],
  ] as const) {
    it(`a top-level state that is ${what} is refused with PAYLOAD_NOT_SERIALIZABLE and the stored state is kept`, async () => {
      const store = new InMemoryStateStore();
      const agent = new Doer("cp");
      agent.state = { count: 1 };
      const rt = await whenStarted(supervised([agent], { store }));
      agent.fn = async (self) => self.checkpoint();
      expect((await rt.ask("cp", {})).payload).toMatchObject({ ok: true });
      expect(await store.get("cp")).toEqual({ count: 1 });
      agent.fn = async (self) => {
        (self as { state: unknown }).state = make();
        await self.checkpoint();
      };
      const reply = await rt.ask("cp", {});
      expect(reply.payload).toMatchObject({ ok: false, code: "PAYLOAD_NOT_SERIALIZABLE" });
      expect(await store.get("cp")).toEqual({ count: 1 });
    });
  }
});
