/**
 * Backpressure: a send waits for room in a full lane, and what counts as room.
 *
 * Each test pins a defect found by the review of the message bus,
 * request/reply, TTL and the mailbox (these tests were in test/review/bus-
 * review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, ErrorAction, type Message } from "../../src/index.js";
import { eventually, turns } from "../runtime/fixtures.js";
import { track } from "../support/outcome.js";
import { whenStarted, supervisedRuntimes } from "../support/runtimes.js";

const supervised = supervisedRuntimes();

describe("backpressure next to a retried message", () => {
  it("a send waiting for room stays waiting while the lane is full with a retried message", async () => {
    let releaseFirst!: () => void;
    const first = new Promise<void>((r) => (releaseFirst = r));
    let releaseSecond!: () => void;
    const second = new Promise<void>((r) => (releaseSecond = r));
    let failed = false;
    class Flaky extends AgentProcess {
      override async handle(message: Message): Promise<void> {
        if (message.payload.n === 1 && !failed) {
          await first;
          failed = true;
          throw new Error("try again");
        }
        if (message.payload.n === 2) await second;
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const agent = new Flaky("flaky", { mailboxSize: 1 });
    const rt = await whenStarted(supervised([agent]));
    await rt.send("flaky", { n: 1 }); // being handled
    await turns();
    await rt.send("flaky", { n: 2 }); // fills the lane
    const third = track(rt.send("flaky", { n: 3 })); // waits for room
    releaseFirst(); // n=1 fails and is retried: the retry is queued past the capacity, behind n=2
    await eventually(() => failed);
    await turns(10); // the loop takes n=2 (blocked on `second`): the lane still holds the retry, so it is full
    const size = agent.mailbox.size;
    const state = third.state;
    releaseSecond();
    await eventually(() => third.state === "resolved");
    expect(size).toBe(1);
    expect(state).toBe("pending");
  });
});
