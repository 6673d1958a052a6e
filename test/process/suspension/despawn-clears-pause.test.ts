/**
 * A despawn clears the pause of the agent it removes for good: nothing writes
 * it back.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor, InMemoryStateStore, ProcessStatus, SUSPENSION_KEY } from "../../../src/index.js";
import { gate } from "../../support/agents.js";
import { runtimes, whenStarted } from "../../support/runtimes.js";

const runtime = runtimes();

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
    const rt = await whenStarted(runtime(pool, { store }));
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
