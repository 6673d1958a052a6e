import { afterEach, describe, expect, it, vi } from "vitest";
import { ProcessStatus, Supervisor, SUSPENSION_KEY, type DynamicSupervisor, type RestartStrategy } from "../../../src/index.js";
import { Probe, gate, turns, waitUntil } from "../../support/agents.js";
import { busyDynamicWorker, dynamicRig, pathOf, Pausable, pausableRig, RecordingStore, rig, startedRig, teardown } from "./helpers.js";
import { ProcessRunner } from "../../../src/process/process-runner.js";
import { rejectsWithCode, track } from "../../support/outcome.js";

afterEach(teardown);

const S = ProcessStatus;

/** No marker of "w" is left in the store, and a fresh "w" spawned under `dyn` runs. */
async function expectNoMarkerAndRespawnable(store: RecordingStore, dyn: DynamicSupervisor): Promise<void> {
  expect(await store.marker("w")).toBeUndefined();
  const fresh = await dyn.spawn(Pausable, "w");
  expect(fresh.status).toBe(S.RUNNING);
}

describe("stopping a suspended agent (S7)", () => {
  it("runtime.stop stops it with no leaked loop: nothing queued is ever handled afterwards", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a");
    for (let seq = 1; seq <= 3; seq++) await r.runtime.send("a", { seq });
    const ready = vi.spyOn(ProcessRunner.prototype, "mailboxReady") // the loop's wake-up: the only agent here is "a";
    await r.runtime.stop();
    expect(agent.status).toBe(S.STOPPED);
    expect(agent.stopCalls).toBe(1);
    await r.clock.advance(120_000);
    await turns(20);
    expect(agent.entered).toBe(0);
    expect(ready).not.toHaveBeenCalled();
    expect(agent.mailbox.closed).toBe(true);
    await expect(r.runtime.send("a", { seq: 9 })).rejects.toMatchObject({ code: expect.any(String) as unknown });
    expect(agent.entered).toBe(0);
  });

  it("graceful runtime.stop keeps the marker: a new Runtime on the same store restores SUSPENDED with the same id", async () => {
    const { agent: first, ...r1 } = await pausableRig();
    const { store } = r1;
    await r1.runtime.suspend("a", "over the weekend");
    const marker = first.suspension!;
    await r1.runtime.stop();
    expect(await store.marker("a")).toEqual(marker);

    const { agent: second, ...r2 } = await pausableRig("a", { store });
    expect(second.status).toBe(S.SUSPENDED);
    expect(second.suspension).toEqual(marker);
    expect(second.suspends).toEqual([]);
    expect(r2.audit.ofType("agent.start", "a")[0]!.details).toMatchObject({ suspensionId: marker.suspensionId });
  });

  it("a process crash (no stop at all) keeps the marker too", async () => {
    const { agent: first, ...r1 } = await pausableRig();
    const { store } = r1;
    await r1.runtime.suspend("a", "crash me");
    const marker = first.suspension!;
    // the first runtime is abandoned, as if the process died; a new one opens the same store
    const second = new Pausable("a");
    await startedRig([second], { store });
    expect(second.status).toBe(S.SUSPENDED);
    expect(second.suspension).toEqual(marker);
  });
});

describe("sibling restarts (S7/S8)", () => {
  async function tree(strategy: RestartStrategy) {
    const crasher = new Probe("c0");
    const sleeper = new Pausable("s1");
    const tail = new Probe("t2");
    const head = new Probe("h");
    const children = strategy === "REST_FOR_ONE" ? [head, crasher, sleeper, tail] : [crasher, sleeper, tail];
    const sup = new Supervisor("sup", { strategy, maxRestarts: 1, restartWindowMs: 60_000, backoffBaseMs: 0, children });
    const r = rig(sup);
    const escalations: Error[] = [];
    r.runtime.on("escalated", (e) => escalations.push(e));
    await r.runtime.start();
    await r.runtime.suspend("s1", "approval");
    return { r, sup, crasher, sleeper, tail, head, escalations };
  }

  it.each<RestartStrategy>(["ONE_FOR_ALL", "REST_FOR_ONE"])(
    "%s: a sibling crash restarts the suspended sibling exactly once; it comes back SUSPENDED with the same id, no onSuspend, no escalation at maxRestarts 1",
    async (strategy) => {
      const { r, sup, crasher, sleeper, tail, head, escalations } = await tree(strategy);
      const marker = sleeper.suspension!;
      for (let seq = 1; seq <= 3; seq++) await r.runtime.send("s1", { seq });
      await r.runtime.send("c0", { op: "crash" });
      await waitUntil(() => crasher.incarnation === 2 && sleeper.incarnation === 2 && tail.incarnation === 2 && sleeper.status === S.SUSPENDED && tail.status === S.RUNNING, "restart done");
      await turns(30);
      expect(sleeper.incarnation).toBe(2);
      expect(sleeper.startCalls).toBe(2);
      expect(sleeper.stopCalls).toBe(1);
      expect(sleeper.status).toBe(S.SUSPENDED);
      expect(sleeper.suspension).toEqual(marker);
      expect(sleeper.suspends).toEqual(["approval"]);
      expect(await r.store.marker("s1")).toEqual(marker);
      expect(r.audit.ofType("agent.restart", "s1")).toHaveLength(1);
      expect(r.audit.ofType("agent.suspend", "s1")).toHaveLength(1);
      expect(pathOf(r.statuses, "s1")).toEqual([
        "INITIALIZING>RUNNING",
        "RUNNING>SUSPENDED",
        "SUSPENDED>STOPPING",
        "STOPPING>STOPPED",
        "STOPPED>INITIALIZING",
        "INITIALIZING>SUSPENDED",
      ]);
      if (strategy === "REST_FOR_ONE") expect(head.incarnation).toBe(1);
      expect(sup.status).toBe(S.RUNNING);
      expect(escalations).toEqual([]);
      expect(r.audit.ofType("supervisor.escalate")).toEqual([]);
      // nothing queued was handled while it was suspended, and one loop handles each message once after resume
      expect(sleeper.entered).toBe(0);
      expect(sleeper.mailbox.size).toBe(3);
      await r.runtime.resume("s1", "alice", { suspensionId: marker.suspensionId });
      await waitUntil(() => sleeper.handled.length === 3, "queued handled");
      await turns(20);
      expect(sleeper.handled).toEqual([1, 2, 3]);
      expect(sleeper.entered).toBe(3);
      expect(sleeper.overlaps).toBe(0);
    },
  );

  it("ONE_FOR_ALL: a restart that lands a suspended sibling back in SUSPENDED leaves the budget for the next real crash window intact", async () => {
    const { r, sup, crasher, sleeper, escalations } = await tree("ONE_FOR_ALL");
    await r.runtime.send("c0", { op: "crash" });
    await waitUntil(() => crasher.incarnation === 2 && sleeper.status === S.SUSPENDED && sleeper.incarnation === 2, "first restart");
    // outside the window the single allowed restart is available again
    await r.clock.advance(60_001);
    await r.runtime.send("c0", { op: "crash" });
    await waitUntil(() => crasher.incarnation === 3 && sleeper.incarnation === 3 && sleeper.status === S.SUSPENDED, "second restart");
    expect(sup.status).toBe(S.RUNNING);
    expect(escalations).toEqual([]);
  });
});

describe("write-ahead pause across a sibling restart", () => {
  it("a suspend whose persist failed still comes back SUSPENDED (same id) after a ONE_FOR_ALL restart", async () => {
    const store = new RecordingStore();
    const crasher = new Probe("c0");
    const sleeper = new Pausable("s1");
    const r = await startedRig(new Supervisor("sup", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [crasher, sleeper] }), { store });
    store.failSets = true;
    await r.runtime.suspend("s1", "not durable");
    store.failSets = false;
    const marker = sleeper.suspension!;
    expect(await store.marker("s1")).toBeUndefined();
    await r.runtime.send("c0", { op: "crash" });
    await waitUntil(() => sleeper.incarnation === 2 && sleeper.status === S.SUSPENDED, "restarted");
    expect(sleeper.suspension).toEqual(marker);
    await r.runtime.send("s1", { seq: 1 });
    await turns(10);
    expect(sleeper.handled).toEqual([]);
  });
});

describe("marker lifecycle on permanent removal (S8)", () => {
  it("despawn clears the marker from the store; a new agent with the same name starts RUNNING", async () => {
    const { r, dyn, store } = await dynamicRig();
    await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w", "approval");
    expect(await store.marker("w")).toBeDefined();
    await dyn.despawn("w");
    expect(await store.marker("w")).toBeUndefined();
    expect(Object.hasOwn((await store.get("w")) ?? {}, SUSPENSION_KEY)).toBe(false);
    const fresh = await dyn.spawn(Pausable, "w");
    expect(fresh.status).toBe(S.RUNNING);
    expect(fresh.suspension).toBeUndefined();
    await r.runtime.send("w", { seq: 1 });
    await waitUntil(() => fresh.handled.length === 1, "fresh agent handles");
  });

  it("stop(name) clears it too, and stop({ drain: 'all' }) of a suspended child does NOT handle its queued business", async () => {
    const { r, dyn, store } = await dynamicRig();
    const w = await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w");
    for (let seq = 1; seq <= 4; seq++) await r.runtime.send("w", { seq });
    await dyn.stop("w", { drain: "all" });
    expect(w.status).toBe(S.STOPPED);
    expect(w.entered).toBe(0);
    expect(w.handled).toEqual([]);
    await expectNoMarkerAndRespawnable(store, dyn);
  });

  it("an agent's own this.stop(name) under a DynamicSupervisor (spawner) clears the child's marker", async () => {
    const { r, dyn, store } = await dynamicRig();
    const boss = await dyn.spawn(Pausable, "boss");
    const child = await boss.spawn(Pausable, "kid");
    await r.runtime.suspend("kid");
    await boss.stop("kid", { drain: "current" });
    expect(child.status).toBe(S.STOPPED);
    expect(await store.marker("kid")).toBeUndefined();
  });

  it("halting a suspended dynamic child (clean exit, removed) clears its marker", async () => {
    const { r, dyn, store } = await dynamicRig();
    const w = await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w");
    await r.runtime.send("w", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => w.status === S.STOPPED && dyn.children.length === 0, "removed");
    await waitUntil(() => r.store.sets.some((s) => s.name === "w" && s.state[SUSPENSION_KEY] === undefined), "marker cleared");
    expect(await store.marker("w")).toBeUndefined();
  });

  it("restarts exhausted clears the marker (a marker left by a resume whose persist failed)", async () => {
    const { r, dyn, store } = await dynamicRig({ dynamic: { maxRestarts: 1 } });
    const w = await dyn.spawn(Probe, "w");
    await r.runtime.suspend("w", "approval");
    store.failSets = true;
    await r.runtime.resume("w", "alice"); // degraded: the store still holds the marker
    store.failSets = false;
    expect(w.status).toBe(S.RUNNING);
    expect(await store.marker("w")).toBeDefined();
    w.failStarts = 10;
    await r.runtime.send("w", { op: "crash" });
    await waitUntil(() => dyn.children.length === 0, "w removed after exhausting restarts");
    expect(r.logs.some((l) => l.level === "error" && l.message.includes("exceeded 1 restarts"))).toBe(true);
    await expectNoMarkerAndRespawnable(store, dyn);
  });

  it("despawn clears a marker the store still holds after a resume whose persist failed (no zombie suspension)", async () => {
    const { r, dyn, store } = await dynamicRig();
    const w = await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w", "approval");
    store.failSets = true;
    await r.runtime.resume("w", "alice"); // degraded: RUNNING, but the store still holds the marker
    store.failSets = false;
    expect(w.status).toBe(S.RUNNING);
    expect(await store.marker("w")).toBeDefined();
    await dyn.despawn("w");
    await expectNoMarkerAndRespawnable(store, dyn);
  });

  it("a control request still queued when its agent is removed for good rejects with MAILBOX_CLOSED instead of hanging", async () => {
    const { r, dyn, w, blocker } = await busyDynamicWorker();
    const suspending = track(r.runtime.suspend("w", "late"));
    const despawning = dyn.despawn("w");
    await turns(10);
    blocker.open();
    await despawning;
    await rejectsWithCode(suspending.promise, "MAILBOX_CLOSED");
    expect(w.status).toBe(S.STOPPED);
  });

  it("despawn while a resume's marker-clearing write is in flight: no ILLEGAL_TRANSITION reaches the caller and the resume span is ended", async () => {
    const { r, dyn } = await dynamicRig({ tracing: true });
    const w = await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w", "hold");
    const write = gate();
    r.store.setGate = write;
    const setsBefore = r.store.sets.length;
    const resuming = track(r.runtime.resume("w", "alice"));
    await waitUntil(() => r.store.sets.length === setsBefore + 1, "resume's persist started");
    const despawning = dyn.despawn("w");
    await turns(10);
    r.store.setGate = undefined;
    write.open();
    await despawning;
    await waitUntil(() => resuming.state !== "pending", "resume settled");
    expect(w.status).toBe(S.STOPPED);
    expect(w.resumes).toEqual([]);
    if (resuming.state === "rejected") {
      // the library itself calls ILLEGAL_TRANSITION "a bug in civitas-ts"; a stop racing a resume must not surface it
      expect((resuming.reason as { code?: string }).code).not.toBe("ILLEGAL_TRANSITION");
    }
    expect(r.tracing!.named("civitas.agent.resume")).toHaveLength(1);
  });

  it("a suspended dynamic child survives a graceful runtime stop: the next runtime's spawn restores it SUSPENDED", async () => {
    const store = new RecordingStore();
    const { r, dyn } = await dynamicRig({ store });
    await dyn.spawn(Pausable, "w");
    await r.runtime.suspend("w", "keep me");
    await r.runtime.stop();
    expect(await store.marker("w")).toBeDefined();
    const { dyn: dyn2 } = await dynamicRig({ store });
    const again = await dyn2.spawn(Pausable, "w");
    expect(again.status).toBe(S.SUSPENDED);
    expect(again.suspension?.reason).toBe("keep me");
    expect(again.suspends).toEqual([]);
  });
});
