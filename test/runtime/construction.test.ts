/**
 * new Runtime(): what a construction refuses, and what a refused one leaves
 * behind.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import type { CivitasError} from "civitas-ts";
import { AgentProcess, Runtime, silentLogger, type Message } from "civitas-ts";
import { caught } from "../support/outcome.js";
import { runtimes } from "../support/review-kit.js";

const runtime = runtimes({ stop: "full" });

class Echo extends AgentProcess {
  override async handle(message: Message): Promise<Message> {
    return this.reply({ ...message.payload, from: this.name });
  }
}

// ---------------------------------------------------------------- construction side effects
describe("Runtime construction", () => {
  it("a construction refused with DUPLICATE_NAME leaves the agents free to be used in another runtime", () => {
    const first = new Echo("dup");
    const second = new Echo("dup");
    const error = caught(() => new Runtime({ root: [first, second], logger: silentLogger, keepAlive: false }));
    expect((error as CivitasError).code).toBe("DUPLICATE_NAME");
    // nothing happened: the first agent can still join a valid runtime
    expect(() => runtime([first])).not.toThrow();
  });
});
