/**
 * Review of the change bf6678e..HEAD (announcement flag, drain mark, stop
 * bounds, abandonStart, removals in shutdown …). Each test pins a defect the
 * change introduced or left open: it asserts what the docs / CHANGELOG
 * promise, and fails until it is fixed.
 */
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  SUSPENSION_KEY,
  type AuditEvent,
  type JsonObject,
} from "../../src/index.js";
import { gate, outcome, runtimes, sleep, WrappedStore } from "../support/review-kit.js";

const runtime = runtimes();

/** A store whose get can be held on a gate. */
class SlowGetStore extends WrappedStore {
  getGate: Promise<void> | undefined;
  getEntered: (() => void) | undefined;
  override async get(name: string): Promise<JsonObject | undefined> {
    this.getEntered?.();
    if (this.getGate !== undefined) await this.getGate;
    return this.inner.get(name);
  }
}

describe("a stop of a child still starting (abandonStart)", () => {
  it("is bounded even when it comes before onStart begins (while the start reads the store)", async () => {
    const store = new SlowGetStore();
    class HangingStart extends AgentProcess {
      override async onStart(): Promise<void> {
        await new Promise<void>(() => undefined); // never returns
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool, { store });
    await rt.start();
    const held = gate();
    const entered = gate();
    store.getGate = held.promise;
    store.getEntered = entered.open;
    void pool.spawn(HangingStart, "worker", { shutdownTimeoutMs: 100 }).catch(() => undefined);
    await entered.promise; // the start is reading the store: onStart has not begun
    const stopped = pool.stop("worker", { timeoutMs: 100 });
    await sleep(10);
    held.open(); // now onStart runs (and hangs)
    // "a stop or despawn of a child still in onStart gives it shutdownTimeoutMs, then fails its start"
    expect(await outcome(stopped, 1500)).not.toBe("pending");
  });
});

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
    const rt1 = runtime([first], { store, auditSink: sink });
    await rt1.start();
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
    const rt1 = runtime([new AgentProcess("a")], { store, auditSink: sink });
    await rt1.start();
    await rt1.suspend("a", "approve INV-7");
    // kill -9: rt1 is simply abandoned; a new process starts on the same store and sink (now healthy)
    sink.failSuspend = false;
    const second = new AgentProcess("a");
    const rt2 = runtime([second], { store, auditSink: sink });
    await rt2.start();
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

/** A store the application closes: afterwards every call rejects, the data stays readable through `inner`. */
class ClosableStore extends WrappedStore {
  closed = false;
  private check(): void {
    if (this.closed) throw new Error("store closed");
  }
  override async get(name: string): Promise<JsonObject | undefined> {
    await sleep(5); // a store that does I/O
    this.check();
    return this.inner.get(name);
  }
  override async set(name: string, state: JsonObject): Promise<void> {
    await sleep(5);
    this.check();
    return this.inner.set(name, state);
  }
  override async close(): Promise<void> {
    this.closed = true;
  }
}

describe("runtime.stop() and a despawn that begins while it stops", () => {
  it("waits for a self-despawn a handler makes during the stop: its marker clearing lands before stop() resolves", async () => {
    const store = new ClosableStore();
    const entered = gate();
    const proceed = gate();
    class Worker extends AgentProcess {
      override async handle(): Promise<void> {
        // asks for a pause it stores with its pending action ...
        this.suspend("approve");
        await this.checkpoint();
        entered.open();
        await proceed.promise;
        // ... then gives up on the work and removes itself, while the runtime is stopping
        void this.despawn(this.name);
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool, { store });
    await rt.start();
    await pool.spawn(Worker, "w", { shutdownTimeoutMs: 2000 });
    await rt.send("w", {});
    await entered.promise;
    const stopping = rt.stop();
    await sleep(10);
    proceed.open();
    await stopping;
    await store.close(); // the application closes its store once runtime.stop() resolved
    await sleep(100);
    // S8: a despawn clears the marker, so a future agent of that name does not come back paused.
    expect((await store.inner.get("w"))?.[SUSPENSION_KEY]).toBeUndefined();
  });
});

describe("this.suspend() + checkpoint() from a handler a stop came during", () => {
  it("stores the pause with the pending action (one atomic write), so a graceful runtime.stop() does not lose it", async () => {
    const store = new InMemoryStateStore();
    const entered = gate();
    const proceed = gate();
    class Payer extends AgentProcess<{ pending?: JsonObject }> {
      override state: { pending?: JsonObject } = {};
      override async handle(): Promise<void> {
        entered.open();
        await proceed.promise; // e.g. a policy engine answering REQUIRE_APPROVAL
        this.state.pending = { pay: 100 };
        this.suspend("approve payment");
        await this.checkpoint();
      }
    }
    const rt1 = runtime([new Payer("payer", { shutdownTimeoutMs: 2000 })], { store });
    await rt1.start();
    await rt1.send("payer", {});
    await entered.promise;
    const stopping = rt1.stop(); // graceful: the message being handled finishes (S8: the marker is kept)
    await sleep(10);
    proceed.open();
    await stopping;
    const stored = await store.get("payer");
    expect(stored?.pending).toEqual({ pay: 100 }); // the pending action is on disk ...
    expect(stored?.[SUSPENSION_KEY]).toBeDefined(); // ... so its pause must be too
    // next process: it must not come back RUNNING with an unapproved action
    const again = new Payer("payer");
    const rt2 = runtime([again], { store });
    await rt2.start();
    expect(again.status).toBe(ProcessStatus.SUSPENDED);
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

describe("a late checkpoint from a handler a despawn gave up on", () => {
  it("cannot write back the pause the removal cleared (no zombie suspension for the next agent of that name)", async () => {
    const go = gate();
    const entered = gate();
    let late: unknown;
    class Hangs extends AgentProcess {
      override async handle(): Promise<void> {
        this.state.pending = "INV-3";
        this.suspend("approve INV-3");
        entered.open();
        await go.promise; // still talking to someone when the despawn gives up on it
        await this.checkpoint().catch((error: unknown) => (late = error));
      }
    }
    const store = new InMemoryStateStore();
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool, { store });
    await rt.start();
    await pool.spawn(Hangs, "w", { shutdownTimeoutMs: 30 });
    await rt.send("w", {});
    await entered.promise;
    await pool.despawn("w");
    expect((await store.get("w"))?.[SUSPENSION_KEY]).toBeUndefined();
    go.open();
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect((await store.get("w"))?.[SUSPENSION_KEY]).toBeUndefined();
    expect((late as { code?: string } | undefined)?.code).toBe("AGENT_NOT_FOUND");
    // a new agent of that name starts RUNNING
    const next = await pool.spawn(Hangs, "w");
    expect(next.status).toBe(ProcessStatus.RUNNING);
  });
});
