/**
 * Mailbox waits and an AbortSignal: an aborted wait takes or enqueues nothing,
 * and aborted waiters are let go at once.
 *
 * Each test pins a defect found by the third review of the mailbox, the
 * message loop and the scheduler (these tests were in
 * test/review/loop3-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { createMessage, Mailbox } from "../../src/index.js";
import { outcome } from "../support/review-kit.js";

describe("Mailbox waits with an already aborted signal", () => {
  it("get() with an already aborted signal takes nothing, as put() with one enqueues nothing", async () => {
    const mailbox = new Mailbox({ capacity: 4 });
    const controller = new AbortController();
    controller.abort(new Error("gave up"));
    // put: rejected although there is room, nothing enqueued
    await expect(mailbox.put(createMessage({ sender: "a", recipient: "b", payload: { n: 1 } }), { signal: controller.signal })).rejects.toThrow("gave up");
    expect(mailbox.size).toBe(0);
    await mailbox.put(createMessage({ sender: "a", recipient: "b", payload: { n: 2 } }));
    // get: "Aborting rejects the pending call with signal.reason; nothing is enqueued or taken"
    const got = await outcome(mailbox.get({ signal: controller.signal }), 100);
    expect(got !== "pending" && !got.ok).toBe(true);
    expect(mailbox.size).toBe(1); // the message is still there for a caller that did not give up
  });
});
