/**
 * Review of 13e654a..HEAD (announce matched by suspensionId, no second loop or
 * stop during a start, DynamicSupervisor shutdown of starting children,
 * priority-lane asks failed at close, recordedAtResume receipts).
 * Each test pins a defect reproduced against HEAD; it fails until fixed.
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
import { gate, outcome, runtimes, sleep, unannouncedRecord, until, WrappedStore } from "../support/review-kit.js";

const runtime = runtimes();

/** A store whose `set` hangs (forever) while `hang` is true. */
class HangingStore extends WrappedStore {
  hang = false;
  hung = 0;
  override async set(name: string, state: JsonObject): Promise<void> {
    if (this.hang) {
      this.hung++;
      await new Promise<void>(() => undefined);
    }
    await this.inner.set(name, state);
  }
}

describe("stopChild waits for a start that is announcing a restored pause", () => {
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
    const rt = runtime([dyn], { store });
    await rt.start();
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
    const rt = new Runtime({ root: [dyn], logger: silentLogger, keepAlive: false, store, auditSink: audit });
    await rt.start();
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

describe("Supervisor (static) stopped by its parent while restarting a child whose onStart hangs", () => {
  it("is bounded as a DynamicSupervisor's is: the parent's ONE_FOR_ALL restart does not wait for the hanging onStart forever", async () => {
    let starts = 0;
    let started2 = false;
    class Flaky extends AgentProcess {
      override async onStart(): Promise<void> {
        starts++;
        if (starts === 2) {
          started2 = true;
          await new Promise<void>(() => undefined); // the restart's onStart hangs
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
    const inner = new Supervisor("inner", { backoffBaseMs: 0, children: [new Flaky("w", { shutdownTimeoutMs: 50 })] });
    const crasher = new Crasher("crasher");
    const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [inner, crasher] });
    const rt = runtime(root);
    await rt.start();
    await rt.send("w", {});
    await until(() => started2, "the restart's onStart", 1000, 2);
    await rt.send("crasher", {});
    await sleep(400);
    expect(crasher.incarnation, "root never restarts: inner's stop waits for w's hanging onStart (its work queue)").toBe(2);
  });
});

describe("a stop that comes during onStart", () => {
  it("does not let the new incarnation take a queued business message before the stop begins (drain 'current' leaves what is queued)", async () => {
    const handled: number[] = [];
    const release = gate();
    let inOnStart = false;
    class SlowStart extends AgentProcess {
      override async onStart(): Promise<void> {
        inOnStart = true;
        await release.promise;
      }
      override async handle(message: { payload: JsonObject }): Promise<void> {
        handled.push(message.payload.i as number);
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    const rt = runtime([dyn], { store: new InMemoryStateStore() });
    await rt.start();
    const spawning = dyn.spawn(SlowStart, "a", { shutdownTimeoutMs: 2000 }).catch(() => undefined);
    await until(() => inOnStart, "onStart entered", 1000, 2);
    for (let i = 0; i < 3; i++) await rt.send("a", { i });
    // The stop (drain "current": nothing is being handled, so nothing should be) comes before any message was taken.
    const stopping = dyn.stop("a");
    await sleep(10);
    release.open(); // onStart finishes in time
    await stopping;
    await spawning;
    expect(handled, "a message queued before the stop was handled after it").toEqual([]);
  });
});
