/**
 * A pause is announced (onSuspend, the agent.suspend receipt) exactly when its
 * receipt was not yet recorded, across kills and restarts.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it, afterEach } from "vitest";
import {
  AgentProcess,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  SUSPENSION_KEY,
  type AuditEvent,
  type JsonObject,
  DynamicSupervisor,
  type Message,
  ErrorAction,
  Supervisor,
} from "../../../src/index.js";
import { testTracing } from "../../support/tracing.js";
import { Pausable, startedRig, teardown } from "./helpers.js";
import { runtimes, sleep, whenStarted, until } from "../../support/runtimes.js";
import { heldHook, waitUntil } from "../../support/agents.js";
import { unannouncedRecord } from "../../support/stores.js";

const runtime = runtimes();

/** A memory sink that fails `agent.suspend` while `failSuspend` is set. */
class FlakySink extends MemoryAuditSink {
  failSuspend = true;
  override emit(event: AuditEvent): void {
    if (event.event === "agent.suspend" && this.failSuspend) throw new Error("sink down");
    super.emit(event);
  }
}

describe("the announcement flag when the agent.suspend receipt was NOT recorded", () => {
  it("keeps the marker flagged (announced: false), so a restart after a kill records the receipt the pause never got", async () => {
    const store = new InMemoryStateStore();
    const sink = new FlakySink();
    const first = new AgentProcess("a");
    const rt1 = await whenStarted(runtime([first], { store, auditSink: sink }));
    await rt1.suspend("a", "approve INV-7"); // the sink fails the receipt: the agent still suspends (documented)
    expect(first.status).toBe(ProcessStatus.SUSPENDED);
    expect(sink.ofType("agent.suspend", "a")).toHaveLength(0);
    // The pause has no receipt: the flag that makes "a restart announces it again" must still be there.
    const stored = (await store.get("a"))?.[SUSPENSION_KEY] as JsonObject | undefined;
    expect(stored).toBeDefined();
    expect(stored?.announced).toBe(false);
  });

  it("after a kill, the resume of the restored pause names a suspension the log holds an agent.suspend receipt for", async () => {
    const store = new InMemoryStateStore();
    const sink = new FlakySink();
    const rt1 = await whenStarted(runtime([new AgentProcess("a")], { store, auditSink: sink }));
    await rt1.suspend("a", "approve INV-7");
    // kill -9: rt1 is simply abandoned; a new process starts on the same store and sink (now healthy)
    sink.failSuspend = false;
    const second = new AgentProcess("a");
    const rt2 = await whenStarted(runtime([second], { store, auditSink: sink }));
    expect(second.status).toBe(ProcessStatus.SUSPENDED);
    const id = second.suspension?.suspensionId;
    await rt2.resume("a", "alice");
    // "So every pause a resume names has its receipt."
    const suspends = sink.ofType("agent.suspend", "a").map((e) => e.details.suspensionId);
    const resumes = sink.ofType("agent.resume", "a").map((e) => e.details.suspensionId);
    expect(resumes).toEqual([id]);
    expect(suspends).toContain(id);
  });
});

describe("a resume sent while the runtime starts, into a pause a kill left flagged", () => {
  it("lifts the pause, as it does for the same pause stored announced (calls made while start() runs wait in the mailbox)", async () => {
    const audit = new MemoryAuditSink();
    // Process 1 entered the pause and recorded its receipt; the kill came before the write recording that
    // (the window the second write opened): the store holds the marker flagged.
    const marker = { reason: "approve INV-7", since: new Date().toISOString(), approver: null, suspensionId: "01900000-0000-7000-8000-000000000001", announced: false };
    const flagged = new InMemoryStateStore();
    await flagged.set("a", { [SUSPENSION_KEY]: marker });
    // The same record as it would be had the kill come a moment later: announced.
    const announced = new InMemoryStateStore();
    const { announced: _flag, ...plain } = marker;
    await announced.set("a", { [SUSPENSION_KEY]: plain });

    const results: string[] = [];
    for (const store of [announced, flagged]) {
      const agent = new AgentProcess("a");
      const rt = runtime([agent], { store, auditSink: audit });
      // Process 2, the approver's tool: boots and applies the approval it was started for.
      const starting = rt.start();
      const resumed = rt.resume("a", "alice");
      await starting;
      await resumed; // resolves: the caller is told the resume went through ...
      results.push(agent.status); // ... so the agent must be RUNNING
      await rt.stop();
    }
    expect(results).toEqual([ProcessStatus.RUNNING, ProcessStatus.RUNNING]);
  });
});

describe("a despawn that clears the pause during onSuspend", () => {
  it("still ends the civitas.agent.suspend span when a despawn clears the pause during onSuspend", async () => {
    const tracing = testTracing();
    const slowSuspend = heldHook("onSuspend");
    const dyn = new DynamicSupervisor("dyn");
    const rt = await whenStarted(runtime([dyn], { tracerProvider: tracing.provider, store: new InMemoryStateStore() }));
    await dyn.spawn(slowSuspend.Agent, "a", { shutdownTimeoutMs: 5000 });
    const suspending = rt.suspend("a", "approve").catch(() => undefined);
    await until(slowSuspend.entered, "onSuspend entered", 1000, 2);
    // The despawn gives up on the loop (busy announcing) after 20 ms, stops it and clears its pause.
    await dyn.stop("a", { timeoutMs: 20 });
    slowSuspend.release.open();
    await suspending;
    await sleep(20);
    // The suspend span was started; before the change it was always ended (setAttribute + endSpan ran unconditionally).
    expect(tracing.named("civitas.agent.start")).toHaveLength(1); // tracing works
    expect(tracing.named("civitas.agent.stop").length).toBeGreaterThan(0);
    expect(tracing.named("civitas.agent.suspend"), "the suspend span is never ended (never exported)").toHaveLength(1);
    await tracing.close();
  });
});

/**
 * An agent class that refines its own reason when told it is paused in "r1"
 * (a plain `this.suspend("r2")`), then takes 10 ms; every reason `onSuspend`
 * is called with goes into `calls`, across instances.
 */
function refiningAgent(calls: string[]): new (name: string) => AgentProcess {
  return class Escalating extends AgentProcess {
    override async onSuspend(reason: string): Promise<void> {
      calls.push(reason);
      if (reason === "r1") this.suspend("r2");
      await sleep(10);
    }
  };
}

describe("a reason update during a restored announcement", () => {
  it("a reason update during a restored announcement still stores the pause as announced (no announced:false left behind)", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    const calls: string[] = [];
    const Escalating = refiningAgent(calls);
    const audit = new MemoryAuditSink();
    const agent = new Escalating("a");
    const rt = await whenStarted(runtime([agent], { store, auditSink: audit }));
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

  it("the next process does not announce that pause again (no second onSuspend or agent.suspend)", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    const calls: string[] = [];
    const Escalating = refiningAgent(calls);
    const rt1 = await whenStarted(runtime([new Escalating("a")], { store, auditSink: new MemoryAuditSink() }));
    await sleep(50);
    await rt1.stop();
    const audit2 = new MemoryAuditSink();
    await whenStarted(runtime([new Escalating("a")], { store, auditSink: audit2 }));
    await sleep(50);
    expect(calls, "onSuspend ran again in a new process for a pause it had been told about").toEqual(["r1"]);
    expect(audit2.events.filter((e: AuditEvent) => e.event === "agent.suspend")).toHaveLength(0);
  });
});

describe("a this.suspend() during a restored announcement", () => {
  it("runs one loop: no two handlers at once, and the resume lands after the pause's own receipt", async () => {
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

afterEach(teardown);

const S = ProcessStatus;

/** Checkpoint-and-return exactly as docs/durable-suspension.md shows it, then a failure after the checkpoint. */
class PayAfterApproval extends Pausable {
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "pay") return super.handle(message);
    this.state.pending = message.payload.invoice ?? null;
    this.suspend(`approve ${String(message.payload.invoice)}`);
    await this.checkpoint(); // action and pause: one atomic write
    throw new Error("the reply could not be sent"); // anything after the checkpoint can fail
  }

  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }
}

describe("a pause made durable by a checkpoint before the loop boundary", () => {
  it("still gets its agent.suspend receipt and onSuspend when the agent crashes and restarts into it", async () => {
    const agent = new PayAfterApproval("pay");
    const r = await startedRig(new Supervisor("sup", { backoffBaseMs: 0, children: [agent] }), { tracing: true });
    await r.runtime.send("pay", { op: "pay", invoice: "INV-7" });
    await waitUntil(() => agent.incarnation === 2 && agent.status === S.SUSPENDED, "restarted SUSPENDED");
    const marker = agent.suspension!;
    expect(await r.store.marker("pay")).toMatchObject({ suspensionId: marker.suspensionId });
    // The pause is real (stored, restored, listed) — so it must have been announced exactly once.
    const receipts = r.audit.ofType("agent.suspend", "pay");
    expect(receipts.map((e) => e.details.suspensionId)).toEqual([marker.suspensionId]);
    expect(agent.suspends).toEqual(["approve INV-7"]);
    expect(r.tracing!.named("civitas.agent.suspend")).toHaveLength(1);
  });
});
