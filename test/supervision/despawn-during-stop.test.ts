/**
 * runtime.stop() and a despawn in flight: the stop resolves only once the
 * despawn is done.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, SUSPENSION_KEY, type JsonObject } from "../../src/index.js";
import { gate, runtimes, sleep, WrappedStore } from "../support/review-kit.js";

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
