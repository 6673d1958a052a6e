/**
 * A stop with drain "all" handles what was queued when it began, through the
 * usual onError and RETRY path, and no more.
 *
 * Each test pins a defect found by the third review of the mailbox, the
 * message loop and the scheduler (these tests were in
 * test/review/loop3-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, createMessage, DynamicSupervisor, ProcessStatus, type Message } from "../../src/index.js";
import { gate, runtimes, until } from "../support/review-kit.js";

const runtime = runtimes();

describe("a stop with drain \"all\"", () => {
  it("handles what was queued when the stop began, not every message that keeps arriving during the drain", async () => {
    const seen: number[] = [];
    const entered = gate();
    const proceed = gate();
    class Chain extends AgentProcess {
      override async handle(message: Message): Promise<Message | void> {
        const n = message.payload.n as number;
        seen.push(n);
        if (n === 0) {
          entered.open();
          await proceed.promise;
        }
        // a follow-up to itself, as a crawler paging through results would
        return createMessage({ sender: this.name, recipient: this.name, payload: { n: n + 1 } });
      }
    }
    const pool = new DynamicSupervisor("pool");
    const rt = runtime(pool);
    await rt.start();
    const chain = await pool.spawn(Chain, "chain", { shutdownTimeoutMs: 5000 });
    await rt.send("chain", { n: 0 });
    await entered.promise;
    await rt.send("chain", { n: 100 }); // queued when the stop begins
    const stopping = pool.stop("chain", { drain: "all", timeoutMs: 400 });
    await until(() => chain.status === ProcessStatus.STOPPING, "stopping");
    proceed.open();
    const started = Date.now();
    await stopping;
    // "all" first handles every business message already queued: 0 (in flight) and 100, plus at most
    // the follow-up of the one in flight. It must not keep going until timeoutMs gives up on it.
    expect(seen.length).toBeLessThanOrEqual(4);
    expect(Date.now() - started).toBeLessThan(300);
  });
});
