/**
 * A pause asked for around a stop is kept: a graceful stop does not lose it.
 *
 * Each test pins a defect found by the review of bf6678e..HEAD (announcement
 * flag, drain mark, stop bounds, abandonStart) (these tests were in
 * test/review/diff2-review.test.ts).
 */

import { describe, expect, it, afterEach } from "vitest";
import {
  AgentProcess,
  InMemoryStateStore,
  ProcessStatus,
  SUSPENSION_KEY,
  type JsonObject,
  type Message,
} from "../../../src/index.js";
import { busyDynamicWorker, Pausable, pausableRig, startedRig, teardown } from "./helpers.js";
import { gate, turns, waitUntil } from "../../support/agents.js";
import { runtimes, sleep, whenStarted } from "../../support/runtimes.js";
import { track } from "../../support/outcome.js";

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
    const rt1 = await whenStarted(runtime([new Payer("payer", { shutdownTimeoutMs: 2000 })], { store }));
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
    await whenStarted(runtime([again], { store }));
    expect(again.status).toBe(ProcessStatus.SUSPENDED);
  });
});

afterEach(teardown);

const S = ProcessStatus;

/** handle(): asks to pause, then is still busy (an await after suspend(), as in any real handler). */
class SuspendThenBusy extends Pausable {
  readonly busy = gate();
  override async handle(message: Message): Promise<Message | void> {
    if (message.payload.op !== "suspend-then-busy") return super.handle(message);
    this.entered++;
    this.suspend("approve");
    await this.busy.promise;
    this.handled.push(message.payload.seq as number);
  }
}

describe("stop({ drain: 'all' }) and a pause that was asked for", () => {
  it("a runtime.suspend queued before stop(drain: 'all') keeps the queued business unhandled", async () => {
    const { r, dyn, w, blocker } = await busyDynamicWorker();
    // The operator pauses the agent first; its queued business is unapproved from here on.
    const suspending = track(r.runtime.suspend("w", "freeze"));
    await turns(5);
    for (let seq = 2; seq <= 4; seq++) await r.runtime.send("w", { seq });
    const stopping = dyn.stop("w", { drain: "all" });
    await turns(5);
    blocker.open();
    await stopping;
    await waitUntil(() => suspending.state !== "pending", "suspend settled");
    expect(w.handled).toEqual([1]);
  });

  it("a this.suspend() from handle() during a drain-all stop is honoured: no further business is taken", async () => {
    const { r, dyn, w, blocker } = await busyDynamicWorker();
    await r.runtime.send("w", { op: "suspend", reason: "approve seq 2", seq: 2 });
    await r.runtime.send("w", { seq: 3 });
    await r.runtime.send("w", { seq: 4 });
    const stopping = dyn.stop("w", { drain: "all" });
    await turns(5);
    blocker.open();
    await stopping;
    // seq 2 asked for a pause: 3 and 4 are business taken after it.
    expect(w.handled).toEqual([1, 2]);
  });
});

describe("a pause asked for from handle() and a graceful runtime.stop()", () => {
  it("is kept: the next runtime on the same store starts SUSPENDED and takes no business", async () => {
    const first = new SuspendThenBusy("a");
    const r1 = await startedRig([first]);
    const { store } = r1;
    await r1.runtime.send("a", { op: "suspend-then-busy", seq: 1 });
    await waitUntil(() => first.entered === 1, "handling");
    // The operator stops the runtime gracefully while that handler is finishing.
    const stopping = r1.runtime.stop();
    await turns(5);
    first.busy.open();
    await stopping;
    expect(first.handled).toEqual([1]);

    const { agent: second, ...r2 } = await pausableRig("a", { store });
    await r2.runtime.send("a", { seq: 9 });
    await turns(20);
    expect(second.status).toBe(S.SUSPENDED);
    expect(second.handled).toEqual([]);
    // the pause is announced where it is first entered: receipt, and a marker stored without the flag
    const receipts = r2.audit.ofType("agent.suspend", "a");
    expect(receipts).toHaveLength(1);
    expect(receipts[0]?.details.suspensionId).toBe(second.suspension?.suspensionId);
    expect(await store.marker("a")).not.toHaveProperty("announced");
  });
});
