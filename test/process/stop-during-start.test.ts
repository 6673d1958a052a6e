/**
 * A stop that comes while an agent (or a supervisor's subtree) is starting: it
 * is bounded, and the next start is whole.
 *
 * Each test pins a defect found by the review of 8655ed8 (stops during starts:
 * abandonStart / abandonChildStart) (these tests were in
 * test/review/startstop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  InMemoryStateStore,
  MemoryAuditSink,
  ProcessStatus,
  Runtime,
  silentLogger,
  Supervisor,
  type JsonObject,
} from "../../src/index.js";
import { gate, heldHook } from "../support/agents.js";
import { outcome, codeOf } from "../support/outcome.js";
import { runtimes, sleep, whenStarted, supervisedRuntimes, until } from "../support/runtimes.js";
import { unannouncedRecord, WrappedStore } from "../support/stores.js";
import { Sink, Crasher, besideCrasher } from "../support/probe-agents.js";

const runtime = runtimes();

const forever = (): Promise<void> => new Promise<void>(() => undefined);

/** A store whose `set` hangs (forever) while `hang` is true. */
class HangingStore extends WrappedStore {
  hang = false;
  hung = 0;
  override async set(name: string, state: JsonObject): Promise<void> {
    if (this.hang) {
      this.hung++;
      await forever();
    }
    await this.inner.set(name, state);
  }
}

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

const supervised = supervisedRuntimes();

/**
 * `k1` and `k2` under `inner`, which sits beside the crasher `c1` under `mid`
 * (ONE_FOR_ALL), which sits beside the crasher `c2` under `top` (ONE_FOR_ALL),
 * with no backoff: a message to `c1` makes `mid` restart `inner` (starting k1,
 * then k2), one to `c2` makes `top` stop `mid`, and `inner` with it, and start
 * it again.
 */
function nestedUnderCrashers(k1: AgentProcess, k2: AgentProcess): { top: Supervisor; inner: Supervisor; c2: Crasher } {
  const inner = new Supervisor("inner", { children: [k1, k2] });
  const mid = new Supervisor("mid", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [inner, new Crasher("c1")] });
  const c2 = new Crasher("c2");
  const top = new Supervisor("top", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [mid, c2] });
  return { top, inner, c2 };
}

describe("a supervisor stopped while its subtree starts abandons only the start in flight at that instant", () => {
  it("a nested supervisor's startup (a parent's restart) starts no further child once a stop came, so the stop finishes", async () => {
    const log = { k1Starts: 0, k2Starts: 0, k1InSecondStart: false };
    class K1 extends AgentProcess {
      override async onStart(): Promise<void> {
        log.k1Starts++;
        if (log.k1Starts === 2) {
          log.k1InSecondStart = true;
          await sleep(150); // well within its shutdownTimeoutMs
        }
      }
    }
    class K2 extends AgentProcess {
      override async onStart(): Promise<void> {
        log.k2Starts++;
        if (log.k1Starts === 2) await forever(); // started within the restart the stop came during: it would hang (e.g. a dependency is down)
      }
    }
    const k1 = new K1("k1", { shutdownTimeoutMs: 1000 });
    const k2 = new K2("k2", { shutdownTimeoutMs: 50 });
    const { top, c2 } = nestedUnderCrashers(k1, k2);
    const rt = await whenStarted(runtime(top));
    await rt.send("c1", {}); // mid restarts inner (and c1): inner.startAll -> k1 (slow), then k2 (hangs)
    await until(() => log.k1InSecondStart, "condition", 1000, 2);
    await rt.send("c2", {}); // top stops mid (a plain stop by its parent), then restarts it
    await sleep(800);
    // docs/supervision.md: "an onStart still running gets the agent's shutdownTimeoutMs ... so a stop always finishes".
    // k1 (the start in flight when mid's stop began) was abandoned; inner's startup then started k2 with no bound.
    expect(c2.incarnation, "top never restarts: mid's stop waits forever for k2's onStart").toBe(2);
    expect(k2.status, "k2 is started by the restart after the stop, not by the startup the stop came during").toBe(ProcessStatus.RUNNING);
    expect(log.k2Starts, "k2 was not started within the abandoned startup").toBe(2);
  });
});

describe("a stop that comes during onStart of an agent restoring an unannounced pause", () => {
  it("runtime.stop() finishes although the announcement's store write hangs (as when the stop comes a moment later)", async () => {
    const store = new HangingStore();
    await store.inner.set("a", unannouncedRecord("r1"));
    const audit = new MemoryAuditSink();
    const slowStart = heldHook("onStart");
    const dyn = new DynamicSupervisor("dyn");
    const rt = await whenStarted(new Runtime({ root: [dyn], logger: silentLogger, keepAlive: false, store, auditSink: audit }));
    store.hang = true; // the write that records the announcement hangs (a store without its own timeout)
    const spawning = dyn.spawn(slowStart.Agent, "a", { shutdownTimeoutMs: 1000 }).catch(() => undefined);
    await until(slowStart.entered, "condition", 1000, 2);
    const stopping = rt.stop();
    await sleep(10);
    slowStart.release.open(); // onStart finishes well within shutdownTimeoutMs
    await until(() => store.hung > 0, "condition", 1000, 2);
    const stopped = await outcome(stopping, 1500);
    expect(stopped, "runtime.stop() waits for the whole start, announcement write included").not.toBe("pending");
    void spawning;
  });

  it("dyn.stop(name, { timeoutMs: 50 }) that comes in onStart is bounded by its own timeoutMs, not onSuspend's shutdownTimeoutMs (3 s)", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    const release = gate();
    let inOnStart = false;
    let inOnSuspend = false;
    class SlowNotify extends AgentProcess {
      override async onStart(): Promise<void> {
        inOnStart = true;
        await release.promise;
      }
      override async onSuspend(): Promise<void> {
        inOnSuspend = true;
        await forever(); // the approval queue does not answer
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    await whenStarted(runtime([dyn], { store }));
    const spawning = dyn.spawn(SlowNotify, "a", { shutdownTimeoutMs: 3000 }).catch(() => undefined);
    await until(() => inOnStart, "condition", 1000, 2);
    const began = Date.now();
    const stopping = dyn.stop("a", { timeoutMs: 50 });
    await sleep(5);
    release.open();
    await until(() => inOnSuspend, "condition", 1000, 2);
    const stopped = await outcome(stopping, 1000);
    expect(stopped, `the stop was still pending after ${Date.now() - began} ms`).not.toBe("pending");
    await spawning;
  });
});

describe("a parent's stop reaches the children a DynamicSupervisor is still starting", () => {
  it("a child restart in onStart is not failed by a parent's stop of a sibling first: its spawner never hears 'restarts_exhausted' during a plain stop", async () => {
    const terminated: string[] = [];
    let wStarts = 0;
    let wInSecondStart = false;
    class W extends AgentProcess {
      override async onStart(): Promise<void> {
        wStarts++;
        if (wStarts === 2) {
          wInSecondStart = true;
          await sleep(300); // a slow but healthy restart
        }
      }
      override async handle(): Promise<void> {
        throw new Error("w boom");
      }
    }
    class Spawner extends AgentProcess {
      override async onChildTerminated(name: string, reason: string): Promise<void> {
        terminated.push(`${name}:${reason}`);
      }
    }
    let inSlow = false;
    class SlowToStop extends AgentProcess {
      override async handle(): Promise<void> {
        inSlow = true;
        await sleep(400); // the message in flight when its supervisor is stopped
      }
    }
    const s = new Spawner("s");
    const dyn = new DynamicSupervisor("dyn", { maxRestarts: 1, backoffBaseMs: 0 });
    const slow = new SlowToStop("slow");
    const mid = new Supervisor("mid", { children: [s, dyn, slow] });
    const c2 = new Crasher("c2");
    const top = new Supervisor("top", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [mid, c2] });
    const rt = await whenStarted(runtime(top));
    await dyn.spawn(W, "w", { shutdownTimeoutMs: 50, maxRetries: 0 }, "s");
    await rt.send("w", {}); // w crashes; dyn restarts it (first restart: within maxRestarts)
    await until(() => wInSecondStart, "condition", 1000, 2);
    await rt.send("slow", {});
    await until(() => inSlow, "condition", 1000, 2);
    await rt.send("c2", {}); // top stops mid: a plain stop of the whole subtree
    await sleep(700);
    expect(terminated, "a plain stop was reported to the spawner as exhausted restarts").toEqual([]);
  });
});

describe("a restart after a start the parent's stop abandoned", () => {
  it("the new incarnation's onStart waits for the abandoned onStart of the same instance (hooks do not run concurrently)", async () => {
    let starts = 0;
    let running = 0;
    let maxRunning = 0;
    let inSecondStart = false;
    const release = gate();
    class Flaky extends AgentProcess {
      override async onStart(): Promise<void> {
        starts++;
        running++;
        maxRunning = Math.max(maxRunning, running);
        try {
          if (starts === 2) {
            inSecondStart = true;
            await release.promise; // the restart's onStart is stuck (released at the end of the test)
          }
        } finally {
          running--;
        }
      }
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    const w = new Flaky("w", { shutdownTimeoutMs: 300 });
    const { root } = besideCrasher(new Supervisor("inner", { backoffBaseMs: 0, children: [w] }));
    const rt = await whenStarted(runtime(root));
    await rt.send("w", {});
    await until(() => inSecondStart, "condition", 1000, 2);
    await rt.send("crasher", {}); // root stops inner (abandoning w's start), then restarts it
    // the abandoned onStart returns while the next start waits for it (it waits up to shutdownTimeoutMs)
    await until(() => w.incarnation >= 3, "condition", 1000, 2);
    expect(starts, "the next incarnation's onStart waits for the abandoned one to return").toBe(2);
    release.open();
    await until(() => starts >= 3, "condition", 1000, 2);
    expect(maxRunning, "two onStart calls of the same agent instance overlapped").toBe(1);
  });
});

describe("a stop of a child that is announcing a restored pause", () => {
  it("dyn.stop(name, { timeoutMs: 50 }) during a restored pause's announcement is bounded by its timeoutMs, not by onSuspend's shutdownTimeoutMs", async () => {
    const store = new InMemoryStateStore();
    await store.set("a", unannouncedRecord("r1"));
    let inOnSuspend = false;
    class SlowNotify extends AgentProcess {
      override async onSuspend(): Promise<void> {
        inOnSuspend = true;
        await new Promise<void>(() => undefined); // the approval queue does not answer
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    await whenStarted(runtime([dyn], { store }));
    const spawning = dyn.spawn(SlowNotify, "a", { shutdownTimeoutMs: 3000 }).catch(() => undefined);
    await until(() => inOnSuspend, "onSuspend entered", 1000, 2);
    const began = Date.now();
    const stopped = await outcome(dyn.stop("a", { timeoutMs: 50 }), 1000);
    // A stop's own timeoutMs "replaces both bounds" (docs/supervision.md); before this change it resolved at once.
    expect(stopped, `the stop was still pending after ${Date.now() - began} ms`).not.toBe("pending");
    await spawning;
  });

  it("a stop (here runtime.stop()) finishes while the restored announcement's store write hangs", async () => {
    const store = new HangingStore();
    await store.inner.set("a", unannouncedRecord("r1"));
    const audit = new MemoryAuditSink();
    class Plain extends AgentProcess {}
    const dyn = new DynamicSupervisor("dyn");
    const rt = await whenStarted(new Runtime({ root: [dyn], logger: silentLogger, keepAlive: false, store, auditSink: audit }));
    store.hang = true; // the write that records the announcement hangs (a store without its own timeout)
    const spawning = dyn.spawn(Plain, "a", { shutdownTimeoutMs: 50 }).catch(() => undefined);
    await until(() => store.hung > 0, "the hanging write", 1000, 2);
    const agent = rt.getAgent("a");
    expect(agent?.status).toBe(ProcessStatus.SUSPENDED);
    // Stopping the whole runtime: docs/supervision.md "so a stop always finishes".
    const stopped = await outcome(rt.stop(), 1500);
    expect(stopped, "runtime.stop() hangs on the start's store write").not.toBe("pending");
    void spawning;
  });
});

describe("a stop that comes during onStart", () => {
  it("does not let the new incarnation take a queued business message before the stop begins (drain 'current' leaves what is queued)", async () => {
    const handled: number[] = [];
    const slowStart = heldHook("onStart");
    class SlowStart extends slowStart.Agent {
      override async handle(message: { payload: JsonObject }): Promise<void> {
        handled.push(message.payload.i as number);
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    const rt = await whenStarted(runtime([dyn], { store: new InMemoryStateStore() }));
    const spawning = dyn.spawn(SlowStart, "a", { shutdownTimeoutMs: 2000 }).catch(() => undefined);
    await until(slowStart.entered, "onStart entered", 1000, 2);
    for (let i = 0; i < 3; i++) await rt.send("a", { i });
    // The stop (drain "current": nothing is being handled, so nothing should be) comes before any message was taken.
    const stopping = dyn.stop("a");
    await sleep(10);
    slowStart.release.open(); // onStart finishes in time
    await stopping;
    await spawning;
    expect(handled, "a message queued before the stop was handled after it").toEqual([]);
  });
});

describe("halting is reset and the subtree runs again after a stop during a start", () => {
  it("inner supervisor abandoned mid-start by mid's stop: after top restarts mid, every inner child runs and handles messages", async () => {
    const log = { k1Starts: 0, handled: [] as string[] };
    class K1 extends AgentProcess {
      override async onStart(): Promise<void> {
        log.k1Starts++;
        if (log.k1Starts === 2) await sleep(150);
      }
      override async handle(): Promise<void> {
        log.handled.push("k1");
      }
    }
    class K2 extends AgentProcess {
      override async handle(): Promise<void> {
        log.handled.push("k2");
      }
    }
    const k1 = new K1("k1", { shutdownTimeoutMs: 1000 });
    const k2 = new K2("k2", { shutdownTimeoutMs: 50 });
    const { top, inner, c2 } = nestedUnderCrashers(k1, k2);
    const rt = await whenStarted(runtime(top));
    await rt.send("c1", {});
    await until(() => log.k1Starts === 2, "k1 second start", 1000, 2);
    await rt.send("c2", {});
    await until(() => c2.incarnation === 2 && inner.status === ProcessStatus.RUNNING && k2.status === ProcessStatus.RUNNING, "restarted", 2000, 2);
    await rt.send("k1", {});
    await rt.send("k2", {});
    await until(() => log.handled.length === 2, "both handled", 1000, 2);
    // a crash under inner is still restarted (inner's halting was reset)
    expect(inner.status).toBe(ProcessStatus.RUNNING);
  });
});

describe("a stop while the agent restores its state, whose restore then fails", () => {
  it("dyn.stop during a spawn whose store.get rejects finishes", async () => {
    const release = gate();
    class FailingGet extends WrappedStore {
      override async get(name: string): Promise<JsonObject | undefined> {
        if (name === "a") {
          await release.promise;
          throw new Error("store down");
        }
        return this.inner.get(name);
      }
    }
    const store = new FailingGet();
    const dyn = new DynamicSupervisor("dyn");
    await whenStarted(runtime([dyn], { store }));
    class A extends AgentProcess {}
    const spawning = dyn.spawn(A, "a").catch(() => "failed");
    await sleep(10);
    const stopping = dyn.stop("a");
    await sleep(10);
    release.open();
    expect(await outcome(stopping, 1000)).not.toBe("pending");
    expect(await spawning).toBe("failed");
  });
});

describe("a restart after a stop that came during a start with a restored pause", () => {
  it("a restored, slow-to-announce agent stopped in onStart by its supervisor's parent is started anew and is not left without a loop", async () => {
    class Store extends WrappedStore {}
    const store = new Store();
    await store.inner.set("a", unannouncedRecord("r1"));
    let aStarts = 0;
    class A extends AgentProcess {
      override async onStart(): Promise<void> {
        aStarts++;
        await sleep(100);
      }
      override async onSuspend(): Promise<void> {
        await sleep(300);
      }
    }
    const a = new A("a", { shutdownTimeoutMs: 1000 });
    const c1 = new Crasher("c1");
    const mid = new Supervisor("mid", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [c1, a] });
    const c2 = new Crasher("c2");
    const top = new Supervisor("top", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [mid, c2] });
    const rt = await whenStarted(runtime(top, { store }));
    await rt.send("c1", {}); // mid restarts c1 and a (a restored into its stored pause again)
    await until(() => aStarts === 2, "a restarting", 2000, 2);
    await rt.send("c2", {}); // top stops mid during a's onStart, then restarts it
    await until(() => c2.incarnation === 2, "top restarted", 3000, 2);
    await until(() => aStarts === 3 && (a.status === ProcessStatus.SUSPENDED || a.status === ProcessStatus.RUNNING), "a started anew", 3000, 2);
    await rt.resume("a", "ops").catch(() => undefined);
    await until(() => a.status === ProcessStatus.RUNNING, "a resumed", 2000, 2);
  });
});

describe("a stop of a child still starting", () => {
  it("is bounded even when it comes before onStart begins (while the start reads the store)", async () => {
    const store = new SlowGetStore();
    class HangingStart extends AgentProcess {
      override async onStart(): Promise<void> {
        await new Promise<void>(() => undefined); // never returns
      }
    }
    const pool = new DynamicSupervisor("pool");
    await whenStarted(runtime(pool, { store }));
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

describe("stopping while an agent starts", () => {
  it("runtime.stop() is bounded by shutdownTimeoutMs even when an onStart never returns", async () => {
    const log: string[] = [];
    class Stuck extends AgentProcess {
      override async onStart(): Promise<void> {
        log.push("onStart");
        await new Promise(() => undefined); // never settles
      }
      override async onStop(): Promise<void> {
        log.push("onStop");
      }
    }
    const stuck = new Stuck("stuck", { shutdownTimeoutMs: 50 });
    const rt = supervised([new Sink("before"), stuck]);
    const starting = outcome(rt.start(), 2000);
    await until(() => log.includes("onStart"));
    const stopped = await outcome(rt.stop(), 1000);
    expect(stopped).toEqual({ ok: true, value: undefined });
    const started = await starting;
    expect(started !== "pending" && !started.ok && codeOf(started.error)).toBe("START_FAILED");
    expect(log).toEqual(["onStart", "onStop"]);
    expect(stuck.status).toBe(ProcessStatus.CRASHED);
  });

  it("an onStart that finishes within shutdownTimeoutMs of the stop lets the agent start, then stop", async () => {
    let release!: () => void;
    class Slow extends AgentProcess {
      override async onStart(): Promise<void> {
        await new Promise<void>((r) => (release = r));
      }
    }
    const slow = new Slow("slow", { shutdownTimeoutMs: 1000 });
    const rt = supervised([slow]);
    const starting = outcome(rt.start(), 2000);
    await until(() => release !== undefined);
    const stopping = rt.stop();
    setTimeout(() => release(), 20);
    expect(await outcome(stopping, 1500)).toEqual({ ok: true, value: undefined });
    expect(await starting).toEqual({ ok: true, value: undefined });
    expect(slow.status).toBe(ProcessStatus.STOPPED);
  });
});
