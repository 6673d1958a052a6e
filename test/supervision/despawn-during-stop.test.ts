/**
 * runtime.stop() and a despawn in flight: the stop resolves only once the
 * despawn is done.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it, afterEach } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  SUSPENSION_KEY,
  type JsonObject,
  ProcessStatus,
  Supervisor,
  type Logger,
} from "../../src/index.js";
import { Probe, harness, stopAll, turns, waitUntil, gate } from "../support/agents.js";
import { runtimes, sleep, whenStarted } from "../support/runtimes.js";
import { WrappedStore, GatedStore } from "../support/stores.js";

const runtime = runtimes();

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
    const rt = await whenStarted(runtime(pool, { store }));
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

afterEach(stopAll);

/** A logger that keeps the errors it is given. */
function errorLog(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const logger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (message) => errors.push(message) };
  return { logger, errors };
}

describe("runtime.stop() and a despawn in flight", () => {
  it("runtime.stop() resolves only once a despawn in flight is done, so closing the store afterwards loses no write", async () => {
    const store = new GatedStore();
    const { logger, errors } = errorLog();
    const dyn = new DynamicSupervisor("dyn");
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }), { store, logger });
    await runtime.start();
    const w = await dyn.spawn(Probe, "w");
    await runtime.suspend("w", "needs approval");
    expect(w.status).toBe(ProcessStatus.SUSPENDED);

    // the despawn's marker clearing reads the store: a durable store takes a while
    const held = gate();
    store.holdNext = { name: "w", gate: held };
    let despawned = false;
    const despawning = dyn.despawn("w").then(() => (despawned = true));
    await waitUntil(() => w.status === ProcessStatus.STOPPED, "w to stop");
    await turns(10);

    let stopped = false;
    const stopping = runtime.stop().then(() => (stopped = true));
    await turns(20);
    expect(stopped).toBe(false); // the despawn's write is still in flight
    held.open();
    await stopping;
    const despawnDoneAtStop = despawned;
    // the application now closes the store it owns (SPEC 11.5: the runtime never does)
    await store.close();
    await despawning;
    await turns(10);
    expect(errors.filter((e) => e.includes("could not clear the suspension marker"))).toEqual([]);
    expect(despawnDoneAtStop).toBe(true);
  });
});
