/**
 * The runtime's reaction to a lost write under simulation: `STATE_FENCED`
 * (another process took the agent over) stops the agent at once, as
 * test/postgres/runtime-fencing.test.ts asserts with the real store, at
 * whatever point of its work the takeover lands; `STORE_UNAVAILABLE` is an
 * ordinary failed persist (the handler fails and the supervisor restarts the
 * agent; a suspend stays SUSPENDED with `durable: false`).
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus } from "../../../src/contracts/process-status.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import type { Simulation, SimulationInvariant, SimulationOptions, SimulationStep } from "../../../src/testing/simulation/types.js";
import { alone, faultOnce, Ledger } from "./fixtures.js";
import { Crasher, FencingWorker } from "../../support/probe-agents.js";
import { whenStarted } from "../../support/runtimes.js";

/** The simulations a test built: stopped after it, so that a failed expectation does not leave one running (SIMULATION_BUSY) for the next test. */
const built: Simulation[] = [];
afterEach(async () => {
  for (const sim of built.splice(0)) await sim.stop();
});

/** `sim`, stopped after the test. */
function tracked(sim: Simulation): Simulation {
  built.push(sim);
  return sim;
}

/** Settles `promise` into its outcome, so a rejection is asserted on, not left unhandled. */
function outcome<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

/** The first `store.fenced` step of `agent`, if any. */
function fencedStep(trace: readonly SimulationStep[], agent: string): SimulationStep | undefined {
  return trace.find((s) => s.kind === "store.fenced" && s.agent === agent);
}

/**
 * Watches `agent` after every step once one of its writes was fenced: it
 * never shows RUNNING again, and what the store holds for it does not change
 * (nothing it writes lands). `after` collects the statuses it showed.
 */
function watchFence(agent: string, trace: () => readonly SimulationStep[]): { invariant: SimulationInvariant; after: ProcessStatus[] } {
  const after: ProcessStatus[] = [];
  let stored: string | undefined;
  const invariant: SimulationInvariant = function fencedStaysDown(view) {
    const now = JSON.stringify(view.stored(agent));
    if (fencedStep(trace(), agent) === undefined) {
      stored = now;
      return;
    }
    const status = view.status(agent) as ProcessStatus;
    if (after.at(-1) !== status) after.push(status);
    if (status === ProcessStatus.RUNNING) return `'${agent}' shows RUNNING after its write was fenced`;
    if (now !== stored) return `a write of '${agent}' landed after the fence: the store held ${stored}, now ${now}`;
  };
  return { invariant, after };
}

/**
 * What the runtime must have done when a write of `worker` was fenced (the
 * assertions of the Postgres runtime-fencing tests): it handled no business
 * message after that, no write of it reached the store after that, onStop
 * ran once and its write was refused too, one `agent.fenced` was audited, it
 * is STOPPED and only went through STOPPING to STOPPED.
 */
function expectFencedReaction(sim: Simulation, after: readonly ProcessStatus[], fence: SimulationStep): void {
  const worker = sim.view.agent<FencingWorker>("worker");
  const later = sim.trace.slice(fence.step + 1).filter((s) => s.agent === "worker");
  expect(worker.handledAfterFence).toBe(0);
  expect(later.filter((s) => s.kind === "deliver" && s.type === "work")).toEqual([]);
  expect(later.filter((s) => s.kind.startsWith("store."))).toEqual([]);
  expect(worker.stops).toBe(1);
  expect(worker.stopWriteError).toBe("STATE_FENCED");
  expect(sim.view.stored("worker")?.stopped).toBeUndefined();
  const fenced = sim.view.audit.filter((e) => e.event === "agent.fenced");
  expect(fenced).toHaveLength(1);
  expect(fenced[0]?.details).toMatchObject({ fence: 1, currentFence: 2 });
  expect(sim.view.status("worker")).toBe(ProcessStatus.STOPPED);
  expect([[ProcessStatus.STOPPING, ProcessStatus.STOPPED], [ProcessStatus.STOPPED]]).toContainEqual(after);
}

/** A simulation of `options` with the fence watch on `worker` (see {@link watchFence}) checked after every step. */
function fencedSimulation(options: Omit<SimulationOptions, "invariants">): { sim: Simulation; after: ProcessStatus[] } {
  const watch = watchFence("worker", () => sim.trace); // called after steps only, once sim is set
  const sim = tracked(simulate({ ...options, invariants: [watch.invariant] }));
  return { sim, after: watch.after };
}

/**
 * Sends `count` work messages (suspending the worker before message
 * `pauseAt`), runs, resumes a pause that is still there, runs: the takeover
 * can land on any write — a handler's checkpoint, the suspend's or the
 * resume's marker write.
 */
async function work(sim: Simulation, count: number, pauseAt: number): Promise<void> {
  await sim.start();
  const operations: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    if (i === pauseAt) operations.push(outcome(sim.suspend("worker", "review")));
    operations.push(outcome(sim.send("worker", "work", { i })));
  }
  await sim.run();
  const suspensionId = sim.view.status("worker") === ProcessStatus.SUSPENDED ? sim.view.agent<FencingWorker>("worker").suspension?.suspensionId : undefined;
  if (suspensionId !== undefined) {
    operations.push(outcome(sim.resume("worker", "alice", { suspensionId })));
    await sim.run();
  }
  await Promise.all(operations);
}

describe("STATE_FENCED under simulation: the agent stops at once", () => {
  it("a checkpoint refused with STATE_FENCED: no message handled after it, nothing written after it, onStop's write refused, agent.fenced audited once", async () => {
    const { sim, after } = fencedSimulation({ root: () => alone(new FencingWorker("worker")), chooser: faultOnce("store.set:worker#2", "store.fenced"), faults: { storeWrites: { fenced: 1 } } });
    await work(sim, 4, 4);
    const fence = fencedStep(sim.trace, "worker") as SimulationStep;
    expect(fence).toMatchObject({ key: "store.set:worker#2", detail: "another process took the agent over; nothing was written" });
    expect(sim.view.agent<FencingWorker>("worker").writeErrors).toEqual(["STATE_FENCED"]);
    expect(sim.view.stored("worker")).toEqual({ n: 1 });
    expect(sim.view.audit.find((e) => e.event === "agent.fenced")?.details).toMatchObject({ status: "RUNNING" });
    expectFencedReaction(sim, after, fence);
    await sim.stop();
  });

  it("a sibling's crash under ONE_FOR_ALL does not start the fenced agent again, and does not escalate for it", async () => {
    const root = (): Supervisor => new Supervisor("root", { children: [new FencingWorker("worker"), new Crasher("crasher")], strategy: "ONE_FOR_ALL", backoffBaseMs: 1, maxRestarts: 5 });
    const { sim, after } = fencedSimulation({ root, chooser: faultOnce("store.set:worker#1", "store.fenced"), faults: { storeWrites: { fenced: 1 } } });
    await work(sim, 2, 2);
    const fence = fencedStep(sim.trace, "worker") as SimulationStep;
    expectFencedReaction(sim, after, fence);
    void outcome(sim.send("crasher", "work"));
    await sim.run();
    // The group's restart is refused for the fenced agent once (its start's crash receipt), and it never shows RUNNING (the invariant ran after every step).
    const refused = sim.view.audit.filter((e) => e.event === "agent.crash" && e.agent === "worker");
    expect(refused).toHaveLength(1);
    expect(refused[0]?.details).toMatchObject({ phase: "start", error: expect.stringContaining("StateFencedError") as unknown });
    // A refused start of an agent another process owns is no crash of the group: the budget is not used up, nothing escalates, the sibling runs on.
    expect(sim.view.audit.filter((e) => e.event === "supervisor.escalate")).toEqual([]);
    expect(sim.view.status("crasher")).toBe(ProcessStatus.RUNNING);
    expect(sim.view.status("worker")).not.toBe(ProcessStatus.RUNNING);
    expect(after).not.toContain(ProcessStatus.RUNNING);
    expect(sim.view.agent<FencingWorker>("worker").handledAfterFence).toBe(0);
    expect(sim.trace.slice(fence.step + 1).filter((s) => s.agent === "worker" && s.kind.startsWith("store."))).toEqual([]);
    expect(sim.view.stored("worker")).toBeUndefined();
    await sim.stop();
  });

  it("a resume whose marker write is refused with STATE_FENCED stops the SUSPENDED agent instead of running it: no onResume, the pause stays in the store", async () => {
    const { sim, after } = fencedSimulation({ root: () => alone(new FencingWorker("worker")), chooser: faultOnce("store.set:worker#2", "store.fenced"), faults: { storeWrites: { fenced: 1 } } });
    await sim.start();
    const suspended = outcome(sim.suspend("worker", "approve"));
    await sim.run();
    expect((await suspended).error).toBeUndefined();
    const marker = sim.view.stored("worker")?.["_civitas.suspended"];
    expect(marker).toBeDefined();
    const resumed = outcome(sim.resume("worker", "alice", { suspensionId: sim.view.agent<FencingWorker>("worker").suspension?.suspensionId as string }));
    await sim.run();
    await resumed;
    const fence = fencedStep(sim.trace, "worker") as SimulationStep;
    expect(fence.key).toBe("store.set:worker#2");
    expect(sim.view.agent<FencingWorker>("worker").resumes).toBe(0);
    expect(sim.view.audit.find((e) => e.event === "agent.fenced")?.details).toMatchObject({ status: "SUSPENDED" });
    expect(sim.view.stored("worker")?.["_civitas.suspended"]).toEqual(marker);
    expectFencedReaction(sim, after, fence);
    await sim.stop();
  });

  it("over many seeds, wherever the takeover lands, the agent stops at once; the fenced runs replay step for step", async () => {
    const where = new Set<string>();
    let replayed = false;
    for (let seed = 0; seed < 40; seed++) {
      const options = { root: () => alone(new FencingWorker("worker")), faults: { storeWrites: { fenced: 0.3 } } };
      const { sim, after } = fencedSimulation({ ...options, seed });
      await work(sim, 4, seed % 5);
      const fence = fencedStep(sim.trace, "worker");
      if (fence === undefined) {
        expect(sim.view.audit.some((e) => e.event === "agent.fenced")).toBe(false);
        expect(sim.view.agent<FencingWorker>("worker").state.n).toBe(4);
      } else {
        where.add(fence.key);
        expectFencedReaction(sim, after, fence);
      }
      await sim.stop();
      if (fence !== undefined && !replayed) {
        const again = tracked(replay(JSON.parse(JSON.stringify(sim.trace)) as SimulationStep[], options));
        await work(again, 4, seed % 5);
        await again.stop();
        expect(again.trace.map((s) => [s.kind, s.key, s.detail])).toEqual(sim.trace.map((s) => [s.kind, s.key, s.detail]));
        replayed = true;
      }
    }
    expect(replayed).toBe(true);
    expect(where.size).toBeGreaterThanOrEqual(3);
  });

  it("property: for any seed, message count and pause position, a fenced agent stops at once and never runs again", async () => {
    let fencedRuns = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 1, max: 6 }), fc.nat({ max: 6 }), async (seed, count, pauseAt) => {
        const { sim, after } = fencedSimulation({ root: () => alone(new FencingWorker("worker")), seed, faults: { storeWrites: { fenced: 0.25 } } });
        try {
          await work(sim, count, pauseAt);
          const fence = fencedStep(sim.trace, "worker");
          if (fence !== undefined) {
            fencedRuns++;
            expectFencedReaction(sim, after, fence);
          } else expect(sim.view.agent<FencingWorker>("worker").state.n).toBe(count);
        } finally {
          await sim.stop(); // a failed expectation must not leave the simulation running for the next (shrinking) run
        }
      }),
      { numRuns: 60, seed: 1414 },
    );
    expect(fencedRuns).toBeGreaterThan(10);
  });
});

describe("STORE_UNAVAILABLE under simulation: an ordinary failed persist", () => {
  it("a checkpoint that fails crashes the handler and the supervisor restarts the agent from the store; it runs and writes again, nothing fenced", async () => {
    const sim = await whenStarted(tracked(simulate({ root: () => alone(new Ledger("ledger")), chooser: faultOnce("store.set:ledger#1", "store.fail"), faults: { storeWrites: { fail: 1 } } })));
    const failed = outcome(sim.ask("ledger", "deposit", { amount: 1 }));
    await sim.run();
    expect((await failed).error).toMatchObject({ code: "HANDLER_FAILED", cause: { code: "STORE_UNAVAILABLE" } });
    expect(sim.trace.some((s) => s.kind === "restart" && s.agent === "ledger")).toBe(true);
    expect(sim.view.status("ledger")).toBe(ProcessStatus.RUNNING);
    const ok = outcome(sim.ask("ledger", "deposit", { amount: 2 }));
    await sim.run();
    expect((await ok).error).toBeUndefined();
    expect(sim.view.stored("ledger")).toMatchObject({ accounts: { x: 52, y: 50 } });
    expect(sim.view.audit.some((e) => e.event === "agent.fenced")).toBe(false);
    await sim.stop();
  });

  it("a suspend whose marker write fails stays SUSPENDED with durable: false on record, and resumes", async () => {
    const sim = await whenStarted(tracked(simulate({ root: () => alone(new FencingWorker("worker")), chooser: faultOnce("store.set:worker#1", "store.fail"), faults: { storeWrites: { fail: 1 } } })));
    const suspended = outcome(sim.suspend("worker", "review"));
    await sim.run();
    expect((await suspended).error).toBeUndefined();
    expect(sim.trace.find((s) => s.key === "store.set:worker#1")?.kind).toBe("store.fail");
    expect(sim.view.status("worker")).toBe(ProcessStatus.SUSPENDED);
    expect(sim.view.audit.find((e) => e.event === "agent.suspend")?.details).toMatchObject({ reason: "review", durable: false });
    expect(sim.view.audit.some((e) => e.event === "agent.fenced")).toBe(false);
    const resumed = outcome(sim.resume("worker", "alice", { suspensionId: sim.view.agent<FencingWorker>("worker").suspension?.suspensionId as string }));
    await sim.run();
    expect((await resumed).error).toBeUndefined();
    expect(sim.view.status("worker")).toBe(ProcessStatus.RUNNING);
    expect(sim.view.agent<FencingWorker>("worker").resumes).toBe(1);
    await sim.stop();
  });

  it("over many seeds, failed writes never stop the agent: each deposit is answered or fails with STORE_UNAVAILABLE, and the store holds exactly the answered ones", async () => {
    let failures = 0;
    for (let seed = 0; seed < 30; seed++) {
      const root = (): Supervisor => new Supervisor("root", { children: [new Ledger("ledger")], backoffBaseMs: 100, maxRestarts: 100 });
      const sim = await whenStarted(tracked(simulate({ root, seed, faults: { storeWrites: { fail: 0.3 } } })));
      const answers = [1, 2, 3, 4].map(() => outcome(sim.ask("ledger", "deposit", { amount: 1 })));
      await sim.run();
      const settled = await Promise.all(answers);
      for (const { error } of settled) if (error !== undefined) expect(error).toMatchObject({ code: "HANDLER_FAILED", cause: { code: "STORE_UNAVAILABLE" } });
      const ok = settled.filter((a) => a.error === undefined).length;
      failures += settled.length - ok;
      expect(sim.view.status("ledger")).toBe(ProcessStatus.RUNNING);
      expect((sim.view.stored("ledger") as { accounts?: { x: number } } | undefined)?.accounts?.x ?? 50).toBe(50 + ok);
      expect(sim.view.audit.some((e) => e.event === "agent.fenced")).toBe(false);
      await sim.stop();
    }
    expect(failures).toBeGreaterThan(5);
  });
});
