/**
 * Supervisor restarts and escalation: group restarts counted once, escalation
 * up the tree, backoff between attempts, no overlapping handlers.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/supervision-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, Supervisor } from "civitas-ts";
import { Probe, harness, probes, stopAll, turns, waitUntil } from "../support/agents.js";

afterEach(stopAll);

describe("Supervisor restarts and escalation", () => {
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
