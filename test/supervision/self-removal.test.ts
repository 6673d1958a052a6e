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
import { Spawner, bossWithChild, harness, stopAll, waitUntil, turns } from "../support/agents.js";
import { AgentProcess, type ChildTerminationReason } from "../../src/index.js";

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

/** Removes itself once told that a child it spawned is gone (a hook, not handle()). */
class LastOneOut extends Spawner {
  override async onChildTerminated(name: string, reason: ChildTerminationReason): Promise<void> {
    await super.onChildTerminated(name, reason);
    await this.despawn(this.name);
  }
}

/** Decides in onStart that it is not needed, and removes itself. */
class SelfRemover extends AgentProcess {
  override async onStart(): Promise<void> {
    await this.despawn(this.name);
  }
}

describe("an agent removing itself from a hook other than handle()", () => {
  it("despawn(this.name) from onChildTerminated removes the agent at once, not after its shutdownTimeoutMs", async () => {
    const { dyn, boss } = await bossWithChild(LastOneOut);
    await dyn.despawn("w");
    await turns(100); // the test clock does not move: nothing may wait out a timeout
    expect(boss.terminated).toEqual([{ name: "w", reason: "despawned" }]);
    expect(dyn.children).toEqual([]);
    expect(boss.status).toBe(ProcessStatus.STOPPED);
  });

  it("despawn(this.name) from onStart does not deadlock: the spawn settles and the agent is gone", async () => {
    const dyn = new DynamicSupervisor("dyn");
    const { runtime, clock } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    let settled = false;
    void dyn.spawn(SelfRemover, "s").then(
      () => (settled = true),
      () => (settled = true),
    );
    await clock.advance(600_000); // ten minutes: far past any deadline the runtime has
    await turns(50);
    expect(settled).toBe(true);
    expect(runtime.getAgent("s")).toBeUndefined();
  });
});
