/**
 * An agent removing itself (despawn or stop of its own name) is removed once
 * its current work is done, at once and without deadlock, from handle() or any
 * hook.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/supervision-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { DynamicSupervisor, ProcessStatus, Supervisor } from "civitas-ts";
import { Spawner, harness, stopAll, waitUntil } from "../support/agents.js";

afterEach(stopAll);

describe("an agent removing itself", () => {
  for (const op of ["despawn", "stop"] as const) {
    it(`${op} of itself from handle() resolves at once and removes it when the message is done, not after its shutdown timeout`, async () => {
      const dyn = new DynamicSupervisor("dyn");
      const { runtime } = harness(new Supervisor("root", { children: [dyn] })); // a TestClock: a shutdown timeout would never elapse
      await runtime.start();
      const boss = await dyn.spawn(Spawner, "boss");
      const kid = await dyn.spawn((name: string) => new Spawner(name, { shutdownTimeoutMs: 60_000 }), "kid", {}, "boss");
      const reply = await runtime.ask("kid", { op, name: "kid" });
      expect(reply.payload).toEqual({ ok: true });
      await waitUntil(() => !dyn.children.includes(kid), "kid to be removed");
      expect(kid.status).toBe(ProcessStatus.STOPPED);
      await waitUntil(() => boss.terminated.length === 1, "boss to be told");
      expect(boss.terminated).toEqual([{ name: "kid", reason: "despawned" }]);
    });
  }
});
