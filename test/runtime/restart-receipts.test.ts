/**
 * A restart is audited in order: crash for the crashed child, then stop, start
 * and restart for every child it restarts.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import { describe, expect, it } from "vitest";
import { AgentProcess, MemoryAuditSink, Supervisor } from "civitas-ts";
import { runtimes, whenStarted, until } from "../support/runtimes.js";
import { Sink } from "../support/probe-agents.js";

const runtime = runtimes({ stop: "full" });

// ---------------------------------------------------------------- sampling
// ---------------------------------------------------------------- audit
describe("audit lifecycle events", () => {
  it("a ONE_FOR_ALL restart audits crash for the crashed child and stop/start/restart for every child, in that order", async () => {
    const audit = new MemoryAuditSink();
    class Crashy extends AgentProcess {
      override async handle(): Promise<void> {
        throw new Error("boom");
      }
    }
    const a = new Crashy("a");
    const b = new Sink("b");
    const rt = await whenStarted(runtime(new Supervisor("sup", { strategy: "ONE_FOR_ALL", children: [a, b], backoffBaseMs: 0 }), { auditSink: audit }));
    await rt.send("a", {});
    await until(() => audit.ofType("agent.restart").length === 2, "both restarts", 3_000, 2);
    await rt.stop();
    const seq = (agent: string): string[] => audit.events.filter((e) => e.agent === agent).map((e) => e.event);
    expect(seq("a")).toEqual(["agent.start", "agent.crash", "agent.start", "agent.restart", "agent.stop"]);
    expect(seq("b")).toEqual(["agent.start", "agent.stop", "agent.start", "agent.restart", "agent.stop"]);
    for (const e of audit.events) {
      expect(e.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(e.signerId).toBe("civitas-runtime");
    }
    expect(String(audit.ofType("agent.crash", "a")[0]?.details.error)).toContain("boom");
  });
});
