/**
 * Review of ff7151e (halting / startingChild / initialized / afterAbandonedOnStart).
 * Probes of the paths named in the brief; each asserts the contracted behaviour.
 */
import { describe, expect, it } from "vitest";
import { gate, outcome, runtimes, sleep, unannouncedRecord, until, WrappedStore } from "../support/review-kit.js";
import { AgentProcess, DynamicSupervisor, ProcessStatus, Supervisor, type JsonObject } from "../../src/index.js";

const runtime = runtimes();

class Crasher extends AgentProcess {
  override async handle(): Promise<void> {
    throw new Error("boom");
  }
}

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
    const inner = new Supervisor("inner", { children: [k1, k2] });
    const c1 = new Crasher("c1");
    const mid = new Supervisor("mid", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [inner, c1] });
    const c2 = new Crasher("c2");
    const top = new Supervisor("top", { strategy: "ONE_FOR_ALL", backoffBaseMs: 0, children: [mid, c2] });
    const rt = runtime(top);
    await rt.start();
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

describe("a stop during INITIALIZING whose start fails in the restore", () => {
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
    const rt = runtime([dyn], { store });
    await rt.start();
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
    const rt = runtime(top, { store });
    await rt.start();
    await rt.send("c1", {}); // mid restarts c1 and a (a restored into its stored pause again)
    await until(() => aStarts === 2, "a restarting", 2000, 2);
    await rt.send("c2", {}); // top stops mid during a's onStart, then restarts it
    await until(() => c2.incarnation === 2, "top restarted", 3000, 2);
    await until(() => aStarts === 3 && (a.status === ProcessStatus.SUSPENDED || a.status === ProcessStatus.RUNNING), "a started anew", 3000, 2);
    await rt.resume("a", "ops").catch(() => undefined);
    await until(() => a.status === ProcessStatus.RUNNING, "a resumed", 2000, 2);
  });
});
