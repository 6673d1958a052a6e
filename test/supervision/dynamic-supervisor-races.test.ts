/**
 * DynamicSupervisor under races: a despawn or a stop during a restart backoff
 * leaves nothing running and no timer armed, and shutdown goes in reverse
 * spawn order.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/supervision-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { CivitasError, DynamicSupervisor, ProcessStatus, Supervisor, type RuntimeOptions } from "civitas-ts";
import { Probe, Spawner, gate, harness, stopAll, turns, waitUntil, type Harness } from "../support/agents.js";
import { GatedStore } from "../support/stores.js";

afterEach(stopAll);

/**
 * A root holding one DynamicSupervisor "dyn" of `dynamic`'s options (the runtime on `options`, such as a store),
 * started, whose spawned Probe "w" has crashed: its restart backoff is the one timer armed.
 */
async function crashedInBackoff(dynamic: ConstructorParameters<typeof DynamicSupervisor>[1], options: Omit<RuntimeOptions, "root"> = {}): Promise<Harness & { readonly dyn: DynamicSupervisor; readonly worker: Probe }> {
  const dyn = new DynamicSupervisor("dyn", dynamic);
  const h = harness(new Supervisor("root", { children: [dyn] }), options);
  await h.runtime.start();
  const worker = await dyn.spawn(Probe, "w");
  await h.runtime.send("w", { op: "crash" });
  await waitUntil(() => worker.status === ProcessStatus.CRASHED, "the crash");
  await turns(10);
  expect(h.clock.pendingTimers).toBe(1); // the restart backoff
  return { ...h, dyn, worker };
}

describe("DynamicSupervisor races", () => {
  it("despawn while a restart backoff is pending never leaves a running agent behind", async () => {
    const store = new GatedStore();
    const { dyn, runtime, clock, worker } = await crashedInBackoff({ backoffBaseMs: 1000, maxRestarts: 5 }, { store });

    // despawn: the removal reads the store (clearSuspension) — a durable store takes a while
    const held = gate();
    store.holdNext = { name: "w", gate: held };
    const despawning = dyn.despawn("w");
    await turns(10);
    // the backoff expires while the despawn is in flight
    await clock.advance(1000);
    await turns(20);
    held.open();
    await despawning;
    await turns(20);

    expect(dyn.children).toEqual([]);
    expect(runtime.getAgent("w")).toBeUndefined();
    // a despawned agent must not be running (nobody would ever stop it again)
    expect(worker.status).not.toBe(ProcessStatus.RUNNING);
    expect(worker.incarnation).toBe(1);
    await runtime.stop();
    expect(worker.status).not.toBe(ProcessStatus.RUNNING);
  });

  it("spawn with a class that is not an AgentProcess rejects with a CivitasError (INVALID_ARGUMENT)", async () => {
    const dyn = new DynamicSupervisor("dyn");
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    class NotAnAgent {
      constructor(readonly name: string) {}
    }
    const error = await dyn.spawn(NotAnAgent as unknown as typeof Probe, "x").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CivitasError);
    expect(error).toMatchObject({ code: "INVALID_ARGUMENT", argument: "factory" });
    expect(runtime.getAgent("x")).toBeUndefined();
  });

  it("runtime.stop() during a dynamic child's backoff cancels the restart and leaves no timer", async () => {
    const { runtime, clock, worker } = await crashedInBackoff({ backoffBaseMs: 500 });
    await runtime.stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(worker.incarnation).toBe(1);
    expect(worker.startCalls).toBe(1);
    expect(worker.status).toBe(ProcessStatus.CRASHED);
  });

  it('despawn during a pending backoff reports "despawned" once to the spawner and cancels the restart', async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 1000, maxRestarts: 5 });
    const { runtime, clock } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    // the spawner is itself a dynamic child so it can spawn
    const boss = await dyn.spawn(Spawner, "boss");
    const reply = await runtime.ask("boss", { op: "spawn", name: "w" });
    expect(reply.payload).toEqual({ ok: true });
    const worker = runtime.getAgent("w") as Probe;
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => worker.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    await dyn.despawn("w");
    await clock.advance(5000);
    await waitUntil(() => boss.terminated.length > 0, "the notification");
    await turns(20);
    expect(boss.terminated).toEqual([{ name: "w", reason: "despawned" }]);
    expect(worker.incarnation).toBe(1);
    expect(worker.status).toBe(ProcessStatus.CRASHED);
  });
});

describe("DynamicSupervisor shutdown order", () => {
  it("runtime.stop() stops dynamic children in reverse spawn order", async () => {
    const journal: string[] = [];
    const dyn = new DynamicSupervisor("dyn");
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    for (const name of ["d0", "d1", "d2"]) await dyn.spawn((n: string) => new Probe(n, {}, journal), name);
    journal.length = 0;
    await runtime.stop();
    expect(journal).toEqual(["stop:d2", "stop:d1", "stop:d0"]);
  });
});

describe("a despawn cancels a pending restart backoff", () => {
  it("despawn of a child waiting out its restart backoff disarms the backoff timer (TSDoc: the pending backoff is cancelled)", async () => {
    const { dyn, clock } = await crashedInBackoff({ backoffBaseMs: 60_000, maxRestarts: 5 });
    await dyn.despawn("w");
    await turns(10);
    expect(dyn.children).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});
