/**
 * Second adversarial review of supervision (Supervisor, DynamicSupervisor, and
 * how the process runner drives them). Each test pins a defect still open:
 * it asserts what SPEC 4/6 and docs/supervision.md promise, and fails today.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, ProcessStatus, Supervisor, type ChildTerminationReason } from "../../src/index.js";
import { Spawner, harness, stopAll, turns } from "../support/agents.js";

afterEach(stopAll);

describe("review 2: onChildTerminated goes to the spawner, and only to it", () => {
  it("a child whose spawner was despawned is not reported to a new, unrelated agent that reuses the spawner's name", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    const boss = await dyn.spawn(Spawner, "boss");
    expect((await runtime.ask("boss", { op: "spawn", name: "w" })).payload).toEqual({ ok: true });
    await dyn.despawn("boss"); // the spawner is gone for good; 'w' lives on
    const impostor = await dyn.spawn(Spawner, "boss"); // a different agent that happens to reuse the name
    expect(impostor).not.toBe(boss);
    await dyn.despawn("w");
    await turns(30);
    expect(boss.terminated).toEqual([]);
    // the new 'boss' never spawned 'w': SPEC 6 reports onChildTerminated to the spawner only
    expect(impostor.terminated).toEqual([]);
  });
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

describe("review 2: an agent removing itself from a hook other than handle()", () => {
  it("despawn(this.name) from onChildTerminated removes the agent at once, not after its shutdownTimeoutMs", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    const boss = await dyn.spawn(LastOneOut, "boss");
    expect((await runtime.ask("boss", { op: "spawn", name: "w" })).payload).toEqual({ ok: true });
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
