import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, Supervisor, SUSPENSION_KEY, uuidv7 } from "../../../src/index.js";
import { dynamicRig, expectLegal, pathOf, Pausable, pausableRig, RecordingStore, startedRig, teardown } from "./helpers.js";
import { gate, turns, waitUntil } from "../../support/agents.js";
import { track } from "../../support/outcome.js";

afterEach(teardown);

const S = ProcessStatus;

describe("RUNNING -> SUSPENDED", () => {
  it("a self-suspend inside handle lets that message finish and takes no further business message", async () => {
    const { agent, ...r } = await pausableRig();
    const blocker = gate();
    agent.blocker = blocker;
    await r.runtime.send("a", { op: "suspend", reason: "needs approval", seq: 1 });
    await r.runtime.send("a", { seq: 2 });
    await r.runtime.send("a", { seq: 3 });
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    await turns(20);
    // the message being handled (seq 1) finished; 2 and 3 stay queued
    expect(agent.handled).toEqual([1]);
    expect(agent.entered).toBe(1);
    expect(agent.mailbox.size).toBe(2);
    expect(agent.suspends).toEqual(["needs approval"]);
    expect(agent.suspension?.reason).toBe("needs approval");
    expect(pathOf(r.statuses, "a")).toEqual(["INITIALIZING>RUNNING", "RUNNING>SUSPENDED"]);
  });

  it("suspend() inside handle returns at once: the handler's code after it still runs before the transition", async () => {
    const order: string[] = [];
    class Mid extends Pausable {
      override async handle(): Promise<void> {
        this.suspend("mid");
        order.push(`after suspend() status=${this.status}`);
        await turns(3);
        order.push(`end of handle status=${this.status}`);
      }
      override async onSuspend(reason: string): Promise<void> {
        order.push(`onSuspend:${reason}`);
      }
    }
    const agent = new Mid("m");
    const r = await startedRig([agent]);
    await r.runtime.send("m", {});
    await waitUntil(() => agent.status === S.SUSPENDED, "SUSPENDED");
    await turns(5);
    expect(order).toEqual(["after suspend() status=RUNNING", "end of handle status=RUNNING", "onSuspend:mid"]);
  });
});

describe("runtime.suspend of a busy agent", () => {
  it("resolves only after the message being handled finished; the next queued business message is not taken", async () => {
    const { agent, ...r } = await pausableRig();
    const blocker = gate();
    agent.blocker = blocker;
    await r.runtime.send("a", { op: "block", seq: 1 });
    await r.runtime.send("a", { seq: 2 });
    await waitUntil(() => agent.entered === 1, "handling 1");
    const suspending = track(r.runtime.suspend("a", "ops"));
    await turns(20);
    expect(suspending.state).toBe("pending");
    expect(agent.status).toBe(S.RUNNING);
    blocker.open();
    await suspending.promise;
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.handled).toEqual([1]);
    await turns(20);
    expect(agent.entered).toBe(1);
    expect(agent.mailbox.size).toBe(1);
  });

  it("a suspend and a resume sent back to back are applied in the order sent", async () => {
    const { agent, ...r } = await pausableRig();
    const s1 = r.runtime.suspend("a", "one");
    const r1 = r.runtime.resume("a", "alice");
    await Promise.all([s1, r1]);
    expect(agent.status).toBe(S.RUNNING);
    expect(agent.suspends).toEqual(["one"]);
    expect(agent.resumes).toEqual(["alice"]);
    const r2 = r.runtime.resume("a", "bob"); // no-op: not suspended yet
    const s2 = r.runtime.suspend("a", "two");
    await Promise.all([r2, s2]);
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.resumes).toEqual(["alice"]);
  });

  it("a handler that asks to suspend and then crashes goes RUNNING -> CRASHED, never SUSPENDED -> CRASHED", async () => {
    class SuspendThenCrash extends Pausable {
      override async handle(): Promise<void> {
        this.suspend("then boom");
        throw new Error("boom");
      }
    }
    const agent = new SuspendThenCrash("a");
    const r = await startedRig(new Supervisor("root", { backoffBaseMs: 0, children: [agent] }));
    await r.runtime.send("a", {});
    await waitUntil(() => agent.incarnation === 2 && agent.status !== S.INITIALIZING, "restarted");
    await turns(20);
    expect(pathOf(r.statuses, "a").slice(0, 2)).toEqual(["INITIALIZING>RUNNING", "RUNNING>CRASHED"]);
    expect(pathOf(r.statuses, "a")).not.toContain("SUSPENDED>CRASHED");
  });
});

describe("SUSPENDED -> RUNNING", () => {
  it("resume brings the agent back to RUNNING and it handles what was queued", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a", "wait");
    await r.runtime.send("a", { seq: 1 });
    await turns(5);
    expect(agent.handled).toEqual([]);
    await r.runtime.resume("a", "alice");
    expect(agent.status).toBe(S.RUNNING);
    await waitUntil(() => agent.handled.length === 1, "handled");
    expect(agent.resumes).toEqual(["alice"]);
    expect(pathOf(r.statuses, "a")).toEqual(["INITIALIZING>RUNNING", "RUNNING>SUSPENDED", "SUSPENDED>RUNNING"]);
  });
});

describe("INITIALIZING -> SUSPENDED", () => {
  it("a fresh runtime on a store holding a marker starts the agent SUSPENDED, without onSuspend, and start() resolves", async () => {
    const { agent: first, ...r1 } = await pausableRig();
    const { store } = r1;
    await r1.runtime.suspend("a", "overnight");
    const marker = first.suspension;
    await r1.runtime.stop();

    const { agent: again, ...r2 } = await pausableRig("a", { store });
    expect(again.status).toBe(S.SUSPENDED);
    expect(again.suspension).toEqual(marker);
    expect(again.suspends).toEqual([]);
    expect(again.startCalls).toBe(1);
    expect(pathOf(r2.statuses, "a")).toEqual(["INITIALIZING>SUSPENDED"]);
    // restored agents take no business either
    await r2.runtime.send("a", { seq: 1 });
    await turns(10);
    expect(again.handled).toEqual([]);
    await r2.runtime.resume("a", "bob", { suspensionId: marker!.suspensionId });
    await waitUntil(() => again.handled.length === 1, "handled after resume");
  });

  it("a store seeded with a well-formed marker (user state kept) also starts SUSPENDED", async () => {
    const store = new RecordingStore();
    const suspensionId = uuidv7();
    await store.inner.set("a", {
      counter: 7,
      [SUSPENSION_KEY]: { reason: "seeded", since: "2024-01-02T03:04:05.678Z", approver: null, suspensionId },
    });
    const { agent, ...r } = await pausableRig("a", { store });
    expect(agent.status).toBe(S.SUSPENDED);
    expect(agent.suspension).toEqual({ reason: "seeded", since: "2024-01-02T03:04:05.678Z", approver: null, suspensionId });
    expect(agent.state.counter).toBe(7);
    expect(agent.suspends).toEqual([]);
    expect(r.runtime.listSuspended()).toEqual([{ name: "a", reason: "seeded", since: "2024-01-02T03:04:05.678Z", suspensionId }]);
  });
});

describe("SUSPENDED -> STOPPING -> STOPPED", () => {
  it("runtime.stop stops a suspended agent", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a");
    await r.runtime.stop();
    expect(agent.status).toBe(S.STOPPED);
    expect(agent.stopCalls).toBe(1);
    expect(pathOf(r.statuses, "a")).toEqual(["INITIALIZING>RUNNING", "RUNNING>SUSPENDED", "SUSPENDED>STOPPING", "STOPPING>STOPPED"]);
  });

  it("DynamicSupervisor.despawn and .stop stop a suspended child", async () => {
    const { r, dyn } = await dynamicRig();
    const a = await dyn.spawn(Pausable, "da");
    const b = await dyn.spawn(Pausable, "db");
    await r.runtime.suspend("da");
    await r.runtime.suspend("db");
    await dyn.despawn("da");
    await dyn.stop("db", { drain: "all" });
    expect(a.status).toBe(S.STOPPED);
    expect(b.status).toBe(S.STOPPED);
    for (const name of ["da", "db"]) {
      expect(pathOf(r.statuses, name)).toEqual(["INITIALIZING>RUNNING", "RUNNING>SUSPENDED", "SUSPENDED>STOPPING", "STOPPING>STOPPED"]);
    }
    expect(r.runtime.getAgent("da")).toBeUndefined();
  });

  it("civitas.eval.halt stops a suspended agent", async () => {
    const { agent, ...r } = await pausableRig();
    await r.runtime.suspend("a");
    await r.runtime.send("a", { seq: 1 });
    await r.runtime.send("a", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => agent.status === S.STOPPED, "STOPPED");
    expect(agent.handled).toEqual([]);
    expect(pathOf(r.statuses, "a")).toEqual(["INITIALIZING>RUNNING", "RUNNING>SUSPENDED", "SUSPENDED>STOPPING", "STOPPING>STOPPED"]);
  });
});

describe("the status journal", () => {
  it("a busy suspend/resume/stop life records only legal transitions and never SUSPENDED -> CRASHED", async () => {
    const agents = [new Pausable("x0"), new Pausable("x1"), new Pausable("x2")];
    const r = await startedRig(new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: agents }));
    for (let round = 0; round < 3; round++) {
      await r.runtime.suspend("x1", `r${round}`);
      await r.runtime.send("x0", { seq: round });
      await r.runtime.suspend("x1", `again${round}`);
      await r.runtime.resume("x1", "ops");
      await r.runtime.suspend("x2");
    }
    await r.runtime.resume("x2", "ops");
    await r.runtime.stop();
    expect(r.statuses.length).toBeGreaterThan(10);
    expect(r.statuses.some((c) => c.from === S.SUSPENDED && c.to === S.RUNNING)).toBe(true);
    // teardown asserts legality of every change
  });
});

describe("the legality check itself", () => {
  it("rejects SUSPENDED -> CRASHED and other illegal edges", () => {
    expect(() => expectLegal([{ agent: "x", from: S.SUSPENDED, to: S.CRASHED }])).toThrow();
    expect(() => expectLegal([{ agent: "x", from: S.STOPPED, to: S.RUNNING }])).toThrow();
    expect(() => expectLegal([{ agent: "x", from: S.INITIALIZING, to: S.SUSPENDED }])).not.toThrow();
  });
});
