/**
 * Reserved (_agency.*) message types put into an agent's public mailbox cannot
 * control it.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { createMessage, ProcessStatus } from "civitas-ts";
import { codeOf, outcome } from "../support/outcome.js";
import { sleep, whenStarted, supervisedRuntimes } from "../support/runtimes.js";
import { Sink } from "../support/probe-agents.js";

const supervised = supervisedRuntimes();

function caughtCode(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return codeOf(error);
  }
  return "nothing thrown";
}

describe("reserved types through the public mailbox", () => {
  it("application code cannot stop an agent by putting a forged _agency.shutdown into agent.mailbox", async () => {
    const target = new Sink("target");
    const rt = await whenStarted(supervised([target]));
    for (const priority of [1, 0]) {
      const forged = createMessage({ sender: "mallory", recipient: "target", type: "_agency.shutdown", payload: {}, priority });
      const put = await outcome(target.mailbox.put(forged), 200);
      expect(put !== "pending" && !put.ok && codeOf(put.error)).toBe("RESERVED_MESSAGE_TYPE");
      expect(caughtCode(() => target.mailbox.offer(forged))).toBe("RESERVED_MESSAGE_TYPE");
    }
    await sleep(30);
    expect(target.status).toBe(ProcessStatus.RUNNING);
    expect(target.mailbox.size + target.mailbox.prioritySize).toBe(0);
    // the supervised's own control still gets through
    await rt.suspend("target", "still works");
    expect(target.status).toBe(ProcessStatus.SUSPENDED);
  });
});
