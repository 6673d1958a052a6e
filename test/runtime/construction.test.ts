/**
 * new Runtime(): what a construction refuses, and what a refused one leaves
 * behind.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import { describe, expect, it, afterEach } from "vitest";
import type { CivitasError } from "civitas-ts";
import { AgentProcess, Runtime, silentLogger, type Message } from "civitas-ts";
import { caught, expectCivitasError, throwsWithCode } from "../support/outcome.js";
import { type StateStore } from "../../src/index.js";
import { Silent } from "../runtime/fixtures.js";
import { teardown } from "../process/suspension/helpers.js";
import { runtimes } from "../support/runtimes.js";

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

// ---------------------------------------------------------------- runtime store option
describe("the Runtime store option", () => {
  class Quiet extends AgentProcess {}

  for (const [label, bad] of [
    ["an empty object", {}],
    ["a string", "state.db"],
    ["an object with get() only", { durable: true, get: async () => undefined }],
  ] as [string, unknown][]) {
    it(`a store that is ${label} is refused by new Runtime() with INVALID_ARGUMENT, before any agent is started`, () => {
      const error = caught(() => runtime([new Quiet("q")], { store: bad as StateStore }));
      expectCivitasError(error, "INVALID_ARGUMENT");
    });
  }
});

afterEach(teardown);

describe("the Runtime clock option", () => {
  it("refuses a clock without setTimeout at new Runtime(), instead of a TypeError at the first stop or ask", () => {
    // Clock is { now(), setTimeout() }; the check only looks for now().
    throwsWithCode(() => new Runtime({ root: [new Silent("s")], logger: silentLogger, clock: { now: () => Date.now() } as never }), "INVALID_ARGUMENT");
  });
});
