/**
 * runtime.stop(): bounded by shutdownTimeoutMs, and never held by what a
 * stopped agent can no longer do.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess } from "civitas-ts";
import { codeOf, outcome, sleep, supervisedRuntimes } from "../support/review-kit.js";

const supervised = supervisedRuntimes();

describe("shutdown with senders blocked on backpressure", () => {
  it("runtime.stop() does not wait out shutdownTimeoutMs for a handler blocked on a put to an agent that has already stopped", async () => {
    let releaseB!: () => void;
    const gate = new Promise<void>((r) => (releaseB = r));
    let sendOutcome: string | undefined;
    class Busy extends AgentProcess {
      override async handle(): Promise<void> {
        await gate;
      }
    }
    class Sender extends AgentProcess {
      override async handle(): Promise<void> {
        // b's lane (capacity 1) is full: this put waits for room
        sendOutcome = await this.send("b", { n: 3 }).then(() => "sent", (e: unknown) => codeOf(e));
      }
    }
    const a = new Sender("a", { shutdownTimeoutMs: 5000 });
    const b = new Busy("b", { mailboxSize: 1, shutdownTimeoutMs: 5000 });
    const rt = supervised([a, b]); // stopped in reverse order: b first, then a
    await rt.start();
    await rt.send("b", { n: 1 }); // b handles it, blocked on the gate
    await rt.send("b", { n: 2 }); // fills b's one slot
    await rt.send("a", {});
    await sleep(20);
    const stopping = rt.stop();
    setTimeout(() => releaseB(), 20);
    const started = Date.now();
    expect(await outcome(stopping, 2000)).toEqual({ ok: true, value: undefined });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(sendOutcome).toBe("MAILBOX_CLOSED");
  });
});
