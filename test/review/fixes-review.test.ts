/**
 * Review of e18d1d6..HEAD (stopWhileStarting, announcementOwed, startedAfter,
 * suspend() while STOPPING, removals set, removed agents, approver fast path).
 * Each test pins a defect reproduced against HEAD; it fails until fixed.
 */
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  Supervisor,
  SUSPENSION_KEY,
  type AuditEvent,
  type JsonObject,
  type Message,
} from "../../src/index.js";
import { gate, outcome, runtimes, sleep, unannouncedRecord, until } from "../support/review-kit.js";
import { testTracing } from "../support/tracing.js";

const runtime = runtimes();

describe("announce(): the early return when the marker changed meanwhile", () => {
  it("still ends the civitas.agent.suspend span when a despawn clears the pause during onSuspend", async () => {
    const tracing = testTracing();
    const release = gate();
    let inOnSuspend = false;
    class SlowSuspend extends AgentProcess {
      override async onSuspend(): Promise<void> {
        inOnSuspend = true;
        await release.promise;
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    const rt = runtime([dyn], { tracerProvider: tracing.provider, store: new InMemoryStateStore() });
    await rt.start();
    await dyn.spawn(SlowSuspend, "a", { shutdownTimeoutMs: 5000 });
    const suspending = rt.suspend("a", "approve").catch(() => undefined);
    await until(() => inOnSuspend, "onSuspend entered", 1000, 2);
    // The despawn gives up on the loop (busy announcing) after 20 ms, stops it and clears its pause.
    await dyn.stop("a", { timeoutMs: 20 });
    release.open();
    await suspending;
    await sleep(20);
    // The suspend span was started; before the change it was always ended (setAttribute + endSpan ran unconditionally).
    expect(tracing.named("civitas.agent.start")).toHaveLength(1); // tracing works
    expect(tracing.named("civitas.agent.stop").length).toBeGreaterThan(0);
    expect(tracing.named("civitas.agent.suspend"), "the suspend span is never ended (never exported)").toHaveLength(1);
    await tracing.close();
  });
});

describe("announcementOwed is cleared only if the marker object is unchanged", () => {
  it("a reason update during a restored announcement leaves the pause owed forever (announced:false written, re-announced on every restart)", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    const calls: string[] = [];
    class Escalating extends AgentProcess {
      override async onSuspend(reason: string): Promise<void> {
        calls.push(reason);
        // The agent refines its own reason when told it is paused (a plain this.suspend()).
        if (reason === "r1") this.suspend("r2");
        await sleep(10);
      }
    }
    const audit = new MemoryAuditSink();
    const agent = new Escalating("a");
    const rt = runtime([agent], { store, auditSink: audit });
    await rt.start();
    await sleep(50);
    expect(agent.status).toBe(ProcessStatus.SUSPENDED);
    expect(calls).toEqual(["r1"]);
    // onSuspend finished in time and the agent.suspend receipt was recorded:
    expect(audit.events.filter((e: AuditEvent) => e.event === "agent.suspend")).toHaveLength(1);
    // ... so the stored pause should be recorded as announced.
    // A later write of the same pause (a reason update) still flags it: owed never clears.
    await rt.suspend("a", "r3");
    const stored = (await store.get("a"))?.[SUSPENSION_KEY] as JsonObject;
    expect(stored.reason).toBe("r3");
    expect(stored.announced, "the pause was announced, yet it is still stored announced:false").toBeUndefined();
  });

  it("... and so the next process announces it again (onSuspend and agent.suspend once more) though both were done", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    const calls: string[] = [];
    class Escalating extends AgentProcess {
      override async onSuspend(reason: string): Promise<void> {
        calls.push(reason);
        if (reason === "r1") this.suspend("r2");
        await sleep(10);
      }
    }
    const rt1 = runtime([new Escalating("a")], { store, auditSink: new MemoryAuditSink() });
    await rt1.start();
    await sleep(50);
    await rt1.stop();
    const audit2 = new MemoryAuditSink();
    const rt2 = runtime([new Escalating("a")], { store, auditSink: audit2 });
    await rt2.start();
    await sleep(50);
    expect(calls, "onSuspend ran again in a new process for a pause it had been told about").toEqual(["r1"]);
    expect(audit2.events.filter((e: AuditEvent) => e.event === "agent.suspend")).toHaveLength(0);
  });
});

describe("a this.suspend() during a restored announcement starts a loop while start() is still announcing", () => {
  it("start() then starts a second loop: two handlers run at once, and the resume lands before the pause's own receipt", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    let active = 0;
    let overlaps = 0;
    const order: string[] = [];
    class Confirming extends AgentProcess {
      override async onSuspend(reason: string): Promise<void> {
        order.push("onSuspend:start");
        this.suspend(reason); // same reason: only re-confirms the pause
        await sleep(40);
        order.push("onSuspend:end");
      }
      override async onResume(): Promise<void> {
        order.push("onResume");
      }
      override async handle(_message: Message): Promise<void> {
        if (active > 0) overlaps++;
        active++;
        await sleep(15);
        active--;
      }
    }
    const audit = new MemoryAuditSink();
    const agent = new Confirming("a");
    const rt = runtime([agent], { store, auditSink: audit });
    // Sent while the runtime starts: they wait in the mailbox (a resume sent while it starts lifts a stored pause).
    const starting = rt.start();
    const resumed = rt.resume("a", "alice");
    for (let i = 0; i < 6; i++) void rt.send("a", { i });
    await starting;
    await resumed;
    await sleep(200);
    const events = audit.events.filter((e: AuditEvent) => e.agent === "a").map((e: AuditEvent) => e.event);
    // onResume must not run while onSuspend of the same pause is still running.
    expect.soft(order.indexOf("onResume"), order.join(",")).toBeGreaterThan(order.indexOf("onSuspend:end"));
    // No agent.suspend receipt after the agent.resume that settled the pause.
    expect.soft(events.lastIndexOf("agent.suspend"), events.join(",")).toBeLessThan(events.indexOf("agent.resume"));
    expect(overlaps, "handle() ran concurrently (two loops)").toBe(0);
  });
});

describe("DynamicSupervisor.shutdown: a child restarting when its supervisor is stopped", () => {
  it("is bounded by the child's shutdownTimeoutMs (as a despawn of a starting child is), not held by its hanging onStart", async () => {
    let starts = 0;
    const never = new Promise<void>(() => undefined);
    let started2 = false;
    class Flaky extends AgentProcess {
      override async onStart(): Promise<void> {
        starts++;
        if (starts === 2) {
          started2 = true;
          await never; // the restart's onStart hangs
        }
      }
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    class Crasher extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("sibling boom");
      }
    }
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const crasher = new Crasher("crasher");
    const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [dyn, crasher] });
    const rt = runtime(root);
    await rt.start();
    await dyn.spawn(Flaky, "w", { shutdownTimeoutMs: 50 });
    await rt.send("w", {});
    await until(() => started2, "the restart's onStart", 1000, 2);
    // A sibling crash makes root restart every child: dyn is stopped (not by runtime.stop()).
    await rt.send("crasher", {});
    await sleep(400);
    expect.soft(dyn.status).toBe("RUNNING"); expect(dyn.incarnation, "dyn's stop waits for w's hanging onStart forever: root never restarts").toBe(2);
    expect(crasher.incarnation).toBe(2);
  });
});

describe("close(): requests queued on the priority lane", () => {
  it("fails a queued ask on the priority lane (civitas.eval.halt) with MAILBOX_CLOSED, as before d26c756, instead of leaving it to time out", async () => {
    const busy = gate();
    let entered = false;
    class Busy extends AgentProcess {
      override async handle(): Promise<void> {
        entered = true;
        await busy.promise;
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    const rt = runtime([dyn]);
    await rt.start();
    await dyn.spawn(Busy, "b");
    void rt.send("b", {});
    await until(() => entered, "the handler entered", 1000, 2);
    const halt = rt.ask("b", {}, { type: "civitas.eval.halt", timeoutMs: 5000 });
    const despawn = dyn.despawn("b");
    busy.open();
    await despawn;
    const result = await outcome(halt, 300);
    expect(result, "the ask is silently dropped when the mailbox closes").not.toBe("pending");
    expect(result !== "pending" && !result.ok && (result.error as { code?: string }).code).toBe("MAILBOX_CLOSED");
  });
});
