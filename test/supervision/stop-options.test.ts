/**
 * DynamicSupervisor.stop(name, options): its timeoutMs bounds every wait of
 * the stop, and its drain mode decides which queued messages are handled.
 *
 * Each test pins a defect found by the third review of the mailbox, the
 * message loop and the scheduler (these tests were in
 * test/review/loop3-review.test.ts).
 */

import { describe, expect, it, afterEach } from "vitest";
import { AgentProcess, DynamicSupervisor, ProcessStatus, Supervisor, type Message } from "../../src/index.js";
import { settle } from "../../src/entries/testing.js";
import { harness, stopAll, turns, waitUntil, gate } from "../support/agents.js";
import { outcome } from "../support/outcome.js";
import { runtimes, whenStarted } from "../support/runtimes.js";

const runtime = runtimes();

describe("stop(name, { timeoutMs }) of a dynamic child", () => {
  it("bounds the wait for onStop too, as StopOptions.timeoutMs documents, not only the drain", async () => {
    class HangingStop extends AgentProcess {
      override async onStop(): Promise<void> {
        await new Promise<void>(() => undefined); // never returns
      }
    }
    const pool = new DynamicSupervisor("pool");
    await whenStarted(runtime(pool));
    await pool.spawn(HangingStop, "worker", { shutdownTimeoutMs: 5000 });
    const started = Date.now();
    const stopped = await outcome(pool.stop("worker", { timeoutMs: 100 }), 2000);
    // "How long to wait for the drain (and, separately, for onStop)": 100 ms + 100 ms, not shutdownTimeoutMs (5 s).
    expect(stopped).not.toBe("pending");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("is bounded when the child is still in an onStart that never returns", async () => {
    const entered = gate();
    class HangingStart extends AgentProcess {
      override async onStart(): Promise<void> {
        entered.open();
        await new Promise<void>(() => undefined); // never returns
      }
    }
    const pool = new DynamicSupervisor("pool");
    await whenStarted(runtime(pool));
    void pool.spawn(HangingStart, "worker", { shutdownTimeoutMs: 100 }).catch(() => undefined);
    await entered.promise;
    const stopped = await outcome(pool.stop("worker", { timeoutMs: 100 }), 1500);
    expect(stopped).not.toBe("pending");
  });
});

afterEach(stopAll);

/** Handles a tick by sending itself the next one (a self-scheduling worker). */
class Ticker extends AgentProcess {
  ticks = 0;
  override async handle(message: Message): Promise<void> {
    this.ticks++;
    await settle();
    if (message.payload.op === "tick") await this.send(this.name, { op: "tick" });
  }
}

describe("stop(name, { drain }) of a dynamic child", () => {
  it('stop(name, { drain: "all" }) handles the messages queued when it was called, not the ones enqueued during the drain (it ends before its timeout)', async () => {
    const dyn = new DynamicSupervisor("dyn");
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await runtime.start();
    const ticker = await dyn.spawn(Ticker, "t");
    await runtime.send("t", { op: "tick" });
    await waitUntil(() => ticker.ticks >= 3, "a few ticks");
    const ticksAtStop = ticker.ticks;
    let stopped = false;
    void dyn.stop("t", { drain: "all" }).then(() => (stopped = true));
    await turns(200);
    // at most the one tick queued when stop was called (plus the one in hand) may be handled
    const handledDuringDrain = ticker.ticks - ticksAtStop;
    expect(handledDuringDrain).toBeLessThanOrEqual(2);
    expect(stopped).toBe(true);
    expect(ticker.status).toBe(ProcessStatus.STOPPED);
  });
});
