/**
 * Bad arguments to a Mailbox are refused with a CivitasError, never a raw
 * TypeError.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/loop-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { Mailbox, type Message } from "civitas-ts";
import { codeOf, outcome } from "../support/outcome.js";

describe("Mailbox with bad input", () => {
  it("new Mailbox(null) throws INVALID_ARGUMENT, not a TypeError", () => {
    let thrown: unknown;
    try {
      new Mailbox(null as unknown as undefined);
    } catch (error) {
      thrown = error;
    }
    expect(codeOf(thrown)).toBe("INVALID_ARGUMENT");
  });

  it("put() of something that is not a message rejects with a CivitasError, not a TypeError", async () => {
    const mailbox = new Mailbox();
    const result = await outcome(mailbox.put(undefined as unknown as Message), 200);
    expect(result !== "pending" && !result.ok && codeOf(result.error)).toBe("INVALID_ARGUMENT");
  });
});

describe("Mailbox options", () => {
  it("an onExpired that is not a function is refused when the mailbox is made, not by a TypeError at dequeue", async () => {
    let code = "no throw";
    try {
      new Mailbox({ onExpired: 5 as unknown as () => void });
    } catch (e) {
      code = codeOf(e);
    }
    expect(code).toBe("INVALID_ARGUMENT");
  });
});
