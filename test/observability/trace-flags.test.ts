/**
 * Trace flags of a message: null counts as absent, and such a message still
 * gets a sampled root handle span.
 *
 * Each test pins a defect found by the review of d33f573..HEAD (these tests
 * were in test/review/diff-review.test.ts).
 */

import { afterEach, describe, expect, it } from "vitest";
import { createMessage, Runtime, silentLogger, type Message } from "../../src/index.js";
import { testTracing } from "../support/tracing.js";
import { Silent } from "../runtime/fixtures.js";
import { teardown } from "../process/suspension/helpers.js";
import { waitUntil } from "../support/agents.js";

afterEach(teardown);

describe("trace flags: null counts as absent", () => {
  it("a hand-built message with traceFlags: null (accepted by envelopeProblem as absent) still gets a sampled root handle span", async () => {
    const tracing = testTracing(); // ParentBased(AlwaysOn)
    const agent = new Silent("s");
    const runtime = new Runtime({ root: [agent], logger: silentLogger, tracerProvider: tracing.provider });
    try {
      await runtime.start();
      const message = { ...createMessage({ sender: "x", recipient: "s", payload: { n: 1 } }), traceFlags: null } as unknown as Message;
      await agent.mailbox.put(message);
      await waitUntil(() => agent.handled.length === 1, "handled");
      await runtime.stop();
      // absent flags: a new trace, sampled as a root; null must not read as "parent not sampled"
      expect(tracing.named("civitas.agent.handle")).toHaveLength(1);
    } finally {
      await runtime.stop();
      await tracing.close();
    }
  });
});
