/**
 * An audit sink that never settles does not hang the runtime (docs: a failing
 * sink is logged and the runtime carries on).
 *
 * Each test pins a defect found by the review of spans, audit events and
 * runtime events (these tests were in test/review/observability-
 * review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, type AuditSink } from "../../src/index.js";
import { tracedRuntimes } from "../support/tracing.js";
import { settlement } from "../support/outcome.js";

const { runtime: tracedRuntime } = tracedRuntimes();

class Idle extends AgentProcess {
  override async handle(): Promise<void> {}
}

describe("a never-settling audit sink", () => {
  const hanging: AuditSink = { emit: () => new Promise<void>(() => undefined) };

  it("does not hang runtime.suspend (docs: a failing sink is logged and the runtime carries on)", async () => {
    const rt = tracedRuntime([new Idle("a", { shutdownTimeoutMs: 200 })], { auditSink: hanging }); // the receipt waits at most this long
    await rt.start();
    expect(await settlement(rt.suspend("a", "review"), 1_000)).toBe("resolved");
  });
});
