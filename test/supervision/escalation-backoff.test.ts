import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, RestartIntensityError, Supervisor, backoffDelay, type BackoffPolicy, type RestartStrategy } from "../../src/index.js";
import { Probe, harness, probes, stopAll, turns, waitUntil, type Harness } from "../support/agents.js";

afterEach(stopAll);

/** {@link harness} for `root`, started, with every error it escalates collected in `escalations`. */
async function startedCollectingEscalations(root: Supervisor): Promise<Harness & { readonly escalations: Error[] }> {
  const h = harness(root);
  const escalations: Error[] = [];
  h.runtime.on("escalated", (e) => escalations.push(e));
  await h.runtime.start();
  return { ...h, escalations };
}

describe("escalation", () => {
  it("a nested supervisor that gives up is restarted whole by its parent, with a fresh restart intensity", async () => {
    const x = new Probe("x");
    const y = new Probe("y");
    const inner = new Supervisor("inner", { children: [x], maxRestarts: 1, backoffBaseMs: 0 });
    const root = new Supervisor("root", { children: [inner, y], maxRestarts: 5, backoffBaseMs: 0 });
    const { runtime, audit, escalations } = await startedCollectingEscalations(root);

    // first crash: inner restarts x itself
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => x.incarnation === 2 && x.status === ProcessStatus.RUNNING, "inner to restart x");
    expect(inner.incarnation).toBe(1);
    expect(inner.restartCount).toBe(1);

    // second crash within the window: inner gives up, root restarts inner (and so x)
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => inner.incarnation === 2 && inner.status === ProcessStatus.RUNNING && x.status === ProcessStatus.RUNNING, "root to restart inner");
    expect(x.incarnation).toBe(3);
    expect(root.restartCount).toBe(1);
    expect(audit.ofType("supervisor.escalate", "inner")).toHaveLength(1);
    expect(audit.ofType("agent.restart", "inner")).toHaveLength(1);
    expect(audit.ofType("agent.restart", "inner")[0]!.details).toMatchObject({ supervisor: "root", crashed: "inner", incarnation: 2 });
    expect(y.incarnation).toBe(1);
    expect(y.status).toBe(ProcessStatus.RUNNING);

    // fresh intensity: one more crash is restarted by inner itself, not escalated
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => x.incarnation === 4 && x.status === ProcessStatus.RUNNING, "inner to restart x again");
    await turns(10);
    expect(inner.incarnation).toBe(2);
    expect(audit.ofType("supervisor.escalate", "inner")).toHaveLength(1);

    // and the next one escalates again
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => inner.incarnation === 3 && inner.status === ProcessStatus.RUNNING && x.status === ProcessStatus.RUNNING, "root to restart inner again");
    expect(x.incarnation).toBe(5);
    expect(root.restartCount).toBe(2);
    expect(escalations).toEqual([]);
    expect(root.status).toBe(ProcessStatus.RUNNING);
  });

  it("a nested escalation under ONE_FOR_ALL restarts the siblings of the nested supervisor too", async () => {
    const x = new Probe("x");
    const y = new Probe("y");
    const inner = new Supervisor("inner", { children: [x], maxRestarts: 0, backoffBaseMs: 0 });
    const root = new Supervisor("root", { children: [y, inner], strategy: "ONE_FOR_ALL", backoffBaseMs: 0 });
    const { runtime } = harness(root);
    await runtime.start();
    await runtime.send("x", { op: "crash" });
    await waitUntil(() => inner.incarnation === 2 && y.incarnation === 2 && x.status === ProcessStatus.RUNNING && y.status === ProcessStatus.RUNNING, "the tree to restart");
    expect(x.incarnation).toBe(2);
  });

  it("escalation at the root stops the whole runtime and emits 'escalated'", async () => {
    const journal: string[] = [];
    const [a, b] = probes(2, "r", journal) as [Probe, Probe];
    const inner = new Supervisor("inner", { children: [b], maxRestarts: 0, backoffBaseMs: 0 });
    const root = new Supervisor("root", { children: [a, inner], maxRestarts: 1, backoffBaseMs: 0 });
    const { runtime, audit, escalations } = await startedCollectingEscalations(root);

    await runtime.send("r0", { op: "crash" });
    await waitUntil(() => a.incarnation === 2 && a.status === ProcessStatus.RUNNING, "root to restart r0");
    journal.length = 0;
    await runtime.send("r0", { op: "crash" });
    await waitUntil(() => escalations.length === 1 && root.status === ProcessStatus.STOPPED, "the runtime to stop");
    await turns(10);

    const error = escalations[0] as RestartIntensityError;
    expect(error).toBeInstanceOf(RestartIntensityError);
    expect(error.code).toBe("RESTART_INTENSITY");
    expect(error.supervisor).toBe("root");
    expect(error.message).toContain("root");
    expect((error.cause as Error).message).toBe("boom in r0");
    expect(escalations).toHaveLength(1);
    expect(journal).toEqual(["stop:r0", "stop:r1"]);
    expect(a.status).toBe(ProcessStatus.CRASHED);
    expect(b.status).toBe(ProcessStatus.STOPPED);
    expect(inner.status).toBe(ProcessStatus.STOPPED);
    expect(a.incarnation).toBe(2);
    expect(audit.ofType("supervisor.escalate", "root")).toHaveLength(1);
    await expect(runtime.start()).rejects.toMatchObject({ code: "RUNTIME_STOPPED" });
    // The runtime stopped itself: it takes nothing more (RUNTIME_STOPPED, before any mailbox is looked at).
    await expect(runtime.send("r1", { op: "work" })).rejects.toMatchObject({ code: "RUNTIME_STOPPED" });
  });

  it("restarts whose onStart fails count as restarts and end in escalation", async () => {
    const [a, b] = probes(2) as [Probe, Probe];
    const root = new Supervisor("root", { children: [a, b], maxRestarts: 3, backoffBaseMs: 0 });
    const { runtime, escalations } = await startedCollectingEscalations(root);
    a.failStarts = 100;
    await runtime.send("p0", { op: "crash" });
    await waitUntil(() => escalations.length === 1 && root.status === ProcessStatus.STOPPED, "the escalation");
    expect(a.startCalls).toBe(4); // the first start, then three failed restarts
    expect(b.incarnation).toBe(1);
    expect(b.status).toBe(ProcessStatus.STOPPED);
  });

  it("maxRestarts 0 escalates on the first crash", async () => {
    const kid = new Probe("only");
    const root = new Supervisor("root", { children: [kid], maxRestarts: 0 });
    const { runtime, escalations } = await startedCollectingEscalations(root);
    await runtime.send("only", { op: "crash" });
    await waitUntil(() => escalations.length === 1, "the escalation");
    expect(kid.incarnation).toBe(1);
    expect(root.restartCount).toBe(0);
  });
});

describe("backoff", () => {
  const expected: Record<BackoffPolicy, number[]> = {
    CONSTANT: [100, 100, 100, 100, 100],
    LINEAR: [100, 200, 300, 400, 500],
    EXPONENTIAL: [100, 200, 400, 500, 500],
  };

  it("backoffDelay computes the policies, capped at the maximum", () => {
    for (const [policy, delays] of Object.entries(expected) as Array<[BackoffPolicy, number[]]>) {
      expect(delays.map((_, i) => backoffDelay(policy, i + 1, 100, 500))).toEqual(delays);
    }
    expect(backoffDelay("EXPONENTIAL", 0, 100, 500)).toBe(100);
    expect(backoffDelay("EXPONENTIAL", 2000, 100, 500)).toBe(500);
    expect(backoffDelay("LINEAR", 3, 0, 500)).toBe(0);
  });

  for (const policy of Object.keys(expected) as BackoffPolicy[]) {
    it(`${policy}: each restart waits exactly its delay on the clock`, async () => {
      const kid = new Probe("c");
      const root = new Supervisor("root", { children: [kid], backoff: policy, backoffBaseMs: 100, backoffMaxMs: 500, maxRestarts: 10, restartWindowMs: 1_000_000 });
      const { runtime, clock } = harness(root);
      await runtime.start();
      for (const [i, delay] of expected[policy].entries()) {
        await runtime.send("c", { op: "crash" });
        await waitUntil(() => kid.status === ProcessStatus.CRASHED, `crash ${i + 1}`);
        await turns(10);
        expect(clock.nextDueMs! - clock.now(), `delay before restart ${i + 1}`).toBe(delay);
        await clock.advance(delay - 1);
        await turns(10);
        expect(kid.incarnation).toBe(i + 1);
        expect(kid.status).toBe(ProcessStatus.CRASHED);
        await clock.advance(1);
        await waitUntil(() => kid.incarnation === i + 2 && kid.status === ProcessStatus.RUNNING, `restart ${i + 1}`);
      }
    });
  }

  it("the delay restarts from the base once earlier restarts leave the window", async () => {
    const kid = new Probe("c");
    const root = new Supervisor("root", { children: [kid], backoff: "LINEAR", backoffBaseMs: 100, backoffMaxMs: 10_000, maxRestarts: 5, restartWindowMs: 1000 });
    const { runtime, clock } = harness(root);
    await runtime.start();
    for (const delay of [100, 200]) {
      await runtime.send("c", { op: "crash" });
      await waitUntil(() => kid.status === ProcessStatus.CRASHED, "the crash");
      await turns(10);
      expect(clock.nextDueMs! - clock.now()).toBe(delay);
      await clock.advance(delay);
      await waitUntil(() => kid.status === ProcessStatus.RUNNING, "the restart");
    }
    await clock.advance(5000);
    await runtime.send("c", { op: "crash" });
    await waitUntil(() => kid.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    expect(clock.nextDueMs! - clock.now()).toBe(100);
  });

  for (const strategy of ["ONE_FOR_ALL", "REST_FOR_ONE"] as RestartStrategy[]) {
    it(`${strategy}: the siblings in the restart set stay stopped during the delay`, async () => {
      const kids = probes(3);
      const root = new Supervisor("root", { children: kids, strategy, backoffBaseMs: 250 });
      const { runtime, clock } = harness(root);
      await runtime.start();
      await runtime.send("p1", { op: "crash" });
      await waitUntil(() => kids[2]!.status === ProcessStatus.STOPPED, "p2 to be stopped");
      await turns(10);
      expect(kids[0]!.status).toBe(strategy === "ONE_FOR_ALL" ? ProcessStatus.STOPPED : ProcessStatus.RUNNING);
      await clock.advance(249);
      await turns(10);
      expect(kids.map((k) => k.incarnation)).toEqual([1, 1, 1]);
      await clock.advance(1);
      await waitUntil(() => kids.every((k) => k.status === ProcessStatus.RUNNING) && kids[2]!.incarnation === 2, "the restart");
      expect(kids.map((k) => k.incarnation)).toEqual(strategy === "ONE_FOR_ALL" ? [2, 2, 2] : [1, 2, 2]);
    });
  }

  it("runtime.stop() during a backoff cancels the pending restart", async () => {
    const kid = new Probe("c");
    const { runtime, clock } = harness(new Supervisor("root", { children: [kid], backoffBaseMs: 1000 }));
    await runtime.start();
    await runtime.send("c", { op: "crash" });
    await waitUntil(() => kid.status === ProcessStatus.CRASHED, "the crash");
    await turns(10);
    await runtime.stop();
    await clock.advance(10_000);
    await turns(10);
    expect(kid.incarnation).toBe(1);
    expect(kid.status).toBe(ProcessStatus.CRASHED);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("ONE_FOR_ONE: each child's backoff runs on its own timer", () => {
  /** When each `agent.restart` of `name` was audited, in ms since `t0`. */
  function restartTimes(audit: Harness["audit"], name: string, t0: number): number[] {
    return audit.ofType("agent.restart", name).map((e) => Date.parse(e.ts) - t0);
  }

  async function crash(runtime: Harness["runtime"], kid: Probe): Promise<void> {
    await runtime.send(kid.name, { op: "crash" });
    await waitUntil(() => kid.status === ProcessStatus.CRASHED, `${kid.name} to crash`);
    await turns(10);
  }

  it("a sibling's pending backoff does not delay a restart (LINEAR 1000: p0 crashes at 0 → 1000, p1 at 100 → 2100)", async () => {
    const [p0, p1] = probes(2) as [Probe, Probe];
    const root = new Supervisor("root", { children: [p0, p1], backoff: "LINEAR", backoffBaseMs: 1000, maxRestarts: 10 });
    const { runtime, clock, audit } = harness(root);
    await runtime.start();
    const t0 = clock.now();
    await crash(runtime, p0); // restart 1 in the window: 1000 ms
    await clock.advance(100);
    await crash(runtime, p1); // restart 2 in the window: 2000 ms, from its own crash
    expect(clock.pendingTimers).toBe(2);

    await clock.advance(899); // t = 999
    await turns(10);
    expect([p0.incarnation, p1.incarnation]).toEqual([1, 1]);
    await clock.advance(1); // t = 1000
    await waitUntil(() => p0.incarnation === 2 && p0.status === ProcessStatus.RUNNING, "p0's restart");
    expect(p1.status).toBe(ProcessStatus.CRASHED);
    await clock.advance(1099); // t = 2099 (before the fix: p1 restarted at 1000 + 2000 = 3000)
    await turns(10);
    expect(p1.incarnation).toBe(1);
    await clock.advance(1); // t = 2100
    await waitUntil(() => p1.incarnation === 2 && p1.status === ProcessStatus.RUNNING, "p1's restart");

    expect(restartTimes(audit, "p0", t0)).toEqual([1000]);
    expect(restartTimes(audit, "p1", t0)).toEqual([2100]);
    expect(root.restartCount).toBe(2);
    expect(clock.pendingTimers).toBe(0);
    await turns(20);
    expect([p0.incarnation, p1.incarnation]).toEqual([2, 2]); // restarted once each
  });

  it("CONSTANT: two crashes 100 ms apart restart 100 ms apart", async () => {
    const [p0, p1] = probes(2) as [Probe, Probe];
    const { runtime, clock, audit } = harness(new Supervisor("root", { children: [p0, p1], backoffBaseMs: 1000, maxRestarts: 10 }));
    await runtime.start();
    const t0 = clock.now();
    await crash(runtime, p0);
    await clock.advance(100);
    await crash(runtime, p1);
    await clock.advance(1000);
    await waitUntil(() => p0.status === ProcessStatus.RUNNING && p1.status === ProcessStatus.RUNNING, "both restarts");
    expect(restartTimes(audit, "p0", t0)).toEqual([1000]);
    expect(restartTimes(audit, "p1", t0)).toEqual([1100]);
  });

  it("escalation is immediate while a sibling's backoff is pending, and cancels that backoff", async () => {
    const [p0, p1] = probes(2) as [Probe, Probe];
    const root = new Supervisor("root", { children: [p0, p1], backoffBaseMs: 1000, maxRestarts: 1 });
    const { runtime, clock, escalations } = await startedCollectingEscalations(root);
    const t0 = clock.now();
    await crash(runtime, p0);
    await clock.advance(100);
    await runtime.send("p1", { op: "crash" });
    await waitUntil(() => escalations.length === 1 && root.status === ProcessStatus.STOPPED, "the escalation");
    expect(clock.now() - t0).toBe(100);
    expect(escalations[0]).toBeInstanceOf(RestartIntensityError);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    await turns(20);
    expect([p0.incarnation, p1.incarnation]).toEqual([1, 1]);
    expect(p0.status).toBe(ProcessStatus.CRASHED);
  });

  it("a supervisor restarted by its parent drops the backoffs of its previous incarnation (no double restart)", async () => {
    const [x, y] = probes(2, "x") as [Probe, Probe];
    const inner = new Supervisor("inner", { children: [x, y], backoffBaseMs: 1000, maxRestarts: 1 });
    const root = new Supervisor("root", { children: [inner], backoffBaseMs: 0 });
    const { runtime, clock } = harness(root);
    await runtime.start();
    await crash(runtime, x); // x's backoff is pending ...
    await clock.advance(100);
    await runtime.send("x1", { op: "crash" }); // ... when inner gives up and root restarts it
    await waitUntil(() => inner.incarnation === 2 && inner.status === ProcessStatus.RUNNING, "root to restart inner");
    expect([x.incarnation, y.incarnation]).toEqual([2, 2]);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    await turns(20);
    expect([x.incarnation, y.incarnation]).toEqual([2, 2]);
    expect([x.startCalls, y.startCalls]).toEqual([2, 2]);
    expect(x.status).toBe(ProcessStatus.RUNNING);
  });

  it("runtime.stop() cancels every pending backoff", async () => {
    const kids = probes(3);
    const { runtime, clock } = harness(new Supervisor("root", { children: kids, backoffBaseMs: 1000, maxRestarts: 10 }));
    await runtime.start();
    for (const kid of kids) {
      await crash(runtime, kid);
      await clock.advance(10);
    }
    expect(clock.pendingTimers).toBe(3);
    await runtime.stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    await turns(20);
    expect(kids.map((k) => k.incarnation)).toEqual([1, 1, 1]);
    expect(kids.every((k) => k.status !== ProcessStatus.RUNNING)).toBe(true);
  });
});

describe("restart intensity counts crashes when they happen", () => {
  it("REST_FOR_ONE: a crash during a group backoff is counted at its crash time, not when the queue reaches it", async () => {
    const kids = probes(3);
    const root = new Supervisor("root", { children: kids, strategy: "REST_FOR_ONE", backoffBaseMs: 1000, maxRestarts: 1, restartWindowMs: 1000 });
    const { runtime, clock, escalations } = await startedCollectingEscalations(root);
    await runtime.send("p1", { op: "crash" }); // t = 0: p1 and p2 restart at 1000
    await waitUntil(() => kids[2]!.status === ProcessStatus.STOPPED, "p2 to be stopped");
    await clock.advance(100);
    await runtime.send("p0", { op: "crash" }); // t = 100: the second crash within 1000 ms
    await waitUntil(() => kids[0]!.status === ProcessStatus.CRASHED, "p0 to crash");
    await clock.advance(900); // the group restart runs, then p0's exit is handled at t = 1000
    await waitUntil(() => escalations.length === 1, "the escalation");
    expect(escalations[0]).toBeInstanceOf(RestartIntensityError);
    expect(root.status).toBe(ProcessStatus.STOPPED);
  });
});
