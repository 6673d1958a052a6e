/**
 * A pause asked for around a stop is kept: a graceful stop does not lose it.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, InMemoryStateStore, ProcessStatus, SUSPENSION_KEY, type JsonObject } from "../../src/index.js";
import { gate, runtimes, sleep } from "../support/review-kit.js";

const runtime = runtimes();

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
