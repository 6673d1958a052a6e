/**
 * An ask queued for an agent that then stops for good fails at once
 * (MAILBOX_CLOSED), instead of waiting out its timeoutMs.
 *
 * Each test pins a defect found by the review of e18d1d6..HEAD
 * (stopWhileStarting, announcementOwed, startedAfter) (these tests were in
 * test/review/fixes-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, DynamicSupervisor } from "../../src/index.js";
import { gate, outcome, runtimes, until } from "../support/review-kit.js";

const runtime = runtimes();

describe("a queued ask on the priority lane when the mailbox closes", () => {
  it("fails a queued ask on the priority lane (civitas.eval.halt) with MAILBOX_CLOSED, as before d26c756, instead of leaving it to time out", async () => {
    const busy = gate();
    let entered = false;
    class Busy extends AgentProcess {
      override async handle(): Promise<void> {
        entered = true;
        await busy.promise;
      }
    }
    const dyn = new DynamicSupervisor("dyn");
    const rt = runtime([dyn]);
    await rt.start();
    await dyn.spawn(Busy, "b");
    void rt.send("b", {});
    await until(() => entered, "the handler entered", 1000, 2);
    const halt = rt.ask("b", {}, { type: "civitas.eval.halt", timeoutMs: 5000 });
    const despawn = dyn.despawn("b");
    busy.open();
    await despawn;
    const result = await outcome(halt, 300);
    expect(result, "the ask is silently dropped when the mailbox closes").not.toBe("pending");
    expect(result !== "pending" && !result.ok && (result.error as { code?: string }).code).toBe("MAILBOX_CLOSED");
  });
});
