/**
 * Regression tests from an adversarial review of the core runtime (issue 2):
 * each pins down a defect the review found, or behaviour of SPEC no other
 * test covered. Defects it found that are still open are listed in the notes.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  CivitasError,
  DynamicSupervisor,
  ProcessStatus,
  Runtime,
  Supervisor,
  silentLogger,
} from "civitas-ts";
import { TestClock } from "civitas-ts/testing";
import { Probe, Spawner, gate, harness, probes, stopAll, turns, waitUntil } from "../support/agents.js";
import { GatedStore } from "../support/review-kit.js";

afterEach(stopAll);

describe("review: DynamicSupervisor races", () => {
  it("despawn while a restart backoff is pending never leaves a running agent behind", async () => {
    const store = new GatedStore();
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 1000, maxRestarts: 5 });
    const { runtime, clock } = harness(new Supervisor("root", { children: [dyn] }), { store });
    await runtime.start();
    const worker = await dyn.spawn(Probe, "w");
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => worker.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    expect(clock.pendingTimers).toBe(1); // the restart backoff

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
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 500 });
    const { runtime, clock } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    const worker = await dyn.spawn(Probe, "w");
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => worker.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    expect(clock.pendingTimers).toBe(1);
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

describe("review: DynamicSupervisor shutdown order", () => {
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

describe("review: Supervisor", () => {
  it("runtime.stop() while the parent waits out the backoff before restarting an escalated nested supervisor leaves nothing running", async () => {
    const x = new Probe("x");
    const inner = new Supervisor("inner", { children: [x], maxRestarts: 0, backoffBaseMs: 0 });
    const root = new Supervisor("root", { children: [inner], backoffBaseMs: 1000 });
    const { runtime, clock } = harness(root);
    await runtime.start();
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => inner.status === ProcessStatus.CRASHED, "inner to give up");
    await turns(10);
    expect(clock.pendingTimers).toBe(1);
    await runtime.stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5000);
    expect(inner.incarnation).toBe(1);
    expect(x.incarnation).toBe(1);
    expect(x.status).not.toBe(ProcessStatus.RUNNING);
    expect(inner.status).toBe(ProcessStatus.STOPPED);
    expect(root.status).toBe(ProcessStatus.STOPPED);
  });

  it("ONE_FOR_ALL: two children crashing in the same tick give one group restart, counted once", async () => {
    const kids = probes(3);
    const root = new Supervisor("root", { children: kids, strategy: "ONE_FOR_ALL", backoffBaseMs: 100, maxRestarts: 1 });
    const { runtime, audit, clock } = harness(root);
    const escalations: Error[] = [];
    runtime.on("escalated", (e) => escalations.push(e));
    await runtime.start();
    await Promise.all([runtime.send("p0", { op: "crash" }), runtime.send("p2", { op: "crash" })]);
    await waitUntil(() => kids.every((k) => k.status !== ProcessStatus.RUNNING), "the group to stop");
    await turns(20);
    expect(clock.pendingTimers).toBe(1); // one backoff, for one group restart
    await clock.advance(100);
    await waitUntil(() => kids.every((k) => k.incarnation === 2 && k.status === ProcessStatus.RUNNING), "one group restart");
    await turns(30);
    expect(kids.map((k) => k.incarnation)).toEqual([2, 2, 2]);
    expect(kids.map((k) => k.startCalls)).toEqual([2, 2, 2]);
    expect(escalations).toEqual([]);
    expect(root.status).toBe(ProcessStatus.RUNNING);
    expect(audit.ofType("agent.restart")).toHaveLength(3);
  });

  it("escalation climbs two levels: a mid supervisor that exceeds its intensity is restarted whole by the root", async () => {
    const x = new Probe("x");
    const y = new Probe("y");
    const inner = new Supervisor("inner", { children: [x], maxRestarts: 0, backoffBaseMs: 0 });
    const mid = new Supervisor("mid", { children: [inner, y], maxRestarts: 1, backoffBaseMs: 0 });
    const root = new Supervisor("root", { children: [mid], maxRestarts: 5, backoffBaseMs: 0 });
    const { runtime } = harness(root);
    await runtime.start();
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => inner.incarnation === 2 && x.status === ProcessStatus.RUNNING, "mid to restart inner");
    expect(mid.incarnation).toBe(1);
    await runtime.send("x", { op: "crash" });
    // mid exceeds its intensity: root restarts mid (whole subtree), not the runtime stopping
    await waitUntil(() => mid.incarnation === 2 && mid.status === ProcessStatus.RUNNING && x.status === ProcessStatus.RUNNING, "root to restart mid");
    expect(y.incarnation).toBe(2);
    expect(root.status).toBe(ProcessStatus.RUNNING);
  });

  it("a sibling whose stop timed out during a ONE_FOR_ALL restart never runs two handle() calls at once", async () => {
    const a = new Probe("a");
    const b = new Probe("b", { shutdownTimeoutMs: 50 });
    const root = new Supervisor("root", { children: [a, b], strategy: "ONE_FOR_ALL", backoffBaseMs: 0 });
    const { runtime, clock } = harness(root);
    await runtime.start();
    await runtime.send("b", { op: "hang", seq: 1 });
    await waitUntil(() => b.hanging, "b to hang");
    await runtime.send("a", { op: "crash" });
    await turns(10);
    await clock.advance(50); // b's stop gives up waiting; the group restarts
    await waitUntil(() => b.incarnation === 2 && b.status === ProcessStatus.RUNNING, "b to restart");
    await runtime.send("b", { op: "work", seq: 2 });
    await turns(30);
    expect(b.overlaps).toBe(0);
    b.release();
  });

  it("REST_FOR_ONE parent: a nested supervisor that gives up is restarted with the siblings after it, not those before", async () => {
    const journal: string[] = [];
    const [a, x, z] = probes(3, "q", journal) as [Probe, Probe, Probe];
    const inner = new Supervisor("inner", { children: [x], maxRestarts: 0, backoffBaseMs: 0 });
    const root = new Supervisor("root", { children: [a, inner, z], strategy: "REST_FOR_ONE", backoffBaseMs: 0 });
    const { runtime } = harness(root);
    await runtime.start();
    journal.length = 0;
    await runtime.send("q1", { op: "crash" });
    await waitUntil(() => inner.incarnation === 2 && z.incarnation === 2 && z.status === ProcessStatus.RUNNING, "inner and z to restart");
    await turns(20);
    expect(journal).toEqual(["stop:q1", "stop:q2", "start:q1", "start:q2"]);
    expect(a.incarnation).toBe(1);
    expect(x.incarnation).toBe(2);
    expect(root.restartCount).toBe(2);
  });

  it("a child whose onStart throws on every restart ends in escalation, with the backoff waited between attempts", async () => {
    const kid = new Probe("c");
    const root = new Supervisor("root", { children: [kid], maxRestarts: 2, backoff: "CONSTANT", backoffBaseMs: 100 });
    const { runtime, clock } = harness(root);
    const escalations: Error[] = [];
    runtime.on("escalated", (e) => escalations.push(e));
    await runtime.start();
    kid.failStarts = 100;
    await runtime.send("c", { op: "crash" });
    await waitUntil(() => kid.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    await clock.advance(99);
    await turns(10);
    expect(kid.startCalls).toBe(1);
    await clock.advance(1);
    await waitUntil(() => kid.startCalls === 2, "first failed restart");
    await turns(10);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(100);
    await waitUntil(() => escalations.length === 1 && root.status === ProcessStatus.STOPPED, "the escalation");
    expect(kid.startCalls).toBe(3);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("review: bad input", () => {
  it("a Runtime refused for a duplicate name leaves the agents usable in a corrected runtime", () => {
    const a = new Probe("a");
    const b = new Probe("b");
    const dup = new Probe("a");
    expect(() => new Runtime({ root: [a, b, dup], logger: silentLogger, clock: new TestClock() })).toThrow(expect.objectContaining({ code: "DUPLICATE_NAME" }) as Error);
    // nothing should have happened to a and b: they can still form a runtime
    expect(() => new Runtime({ root: [a, b], logger: silentLogger, clock: new TestClock() })).not.toThrow();
  });

  it("a topology whose strategy has no value (YAML null) is refused, not silently ONE_FOR_ONE", () => {
    const yaml = ["supervisor:", "  name: root", "  strategy:", "  maxRestarts:", "  children: []", ""].join("\n");
    expect(() => Runtime.fromTopology(yaml, { agents: {}, logger: silentLogger })).toThrow(expect.objectContaining({ code: "TOPOLOGY_INVALID" }) as Error);
    expect(() => new Supervisor("s", { children: [], strategy: null as unknown as "ONE_FOR_ONE" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }) as Error);
  });

  it("despawn and stop of an unknown name reject with AGENT_NOT_FOUND and touch nothing", async () => {
    const dyn = new DynamicSupervisor("dyn");
    const fixed = new Probe("fixed");
    const { runtime } = harness(new Supervisor("root", { children: [fixed, dyn] }));
    await runtime.start();
    const w = await dyn.spawn(Probe, "w");
    await expect(dyn.despawn("nope")).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    await expect(dyn.stop("fixed", { drain: "all" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    expect(fixed.status).toBe(ProcessStatus.RUNNING);
    expect(w.status).toBe(ProcessStatus.RUNNING);
    expect(dyn.children).toEqual([w]);
  });
});


describe("review: an agent removing itself", () => {
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
