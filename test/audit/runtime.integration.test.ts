import path from "node:path";
import { describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { DynamicSupervisor, Runtime, Supervisor } from "../../src/index.js";
import { TestClock } from "../../src/testing/test-clock.js";
import { waitUntil } from "../support/agents.js";
import { silentLogger } from "../../src/index.js";
import { Echo } from "../runtime/fixtures.js";
import { KEY, lines, tempLogPerTest } from "../support/audit-log.js";
import { whenStarted } from "../support/runtimes.js";

/** The log verifies, and so do payer's suspensions, with no failure: what verifySuspension says of them. */
async function verifiedPayer(file: string): Promise<Awaited<ReturnType<typeof verifySuspension>>> {
  expect((await verifyAuditLog(file, { key: KEY })).ok).toBe(true);
  const payer = await verifySuspension(file, "payer", { key: KEY });
  expect(payer.failures).toEqual([]);
  expect(payer.status).toBe("verified");
  return payer;
}

describe("JsonlAuditSink as a Runtime's auditSink", () => {
  const tmp = tempLogPerTest();

  it("records suspend and resume receipts that verifySuspension proves, offline", async () => {
    const file = path.join(tmp.dir, "audit", "audit.jsonl");
    const audit = new JsonlAuditSink(file, { key: KEY });
    const runtime = await whenStarted(new Runtime({ root: new Echo("payer"), auditSink: audit, logger: silentLogger }));
    await runtime.suspend("payer", "large payment");
    // The suspend receipt is on disk before suspend resolves.
    expect(lines(file).some((l) => l.includes('"event":"agent.suspend"'))).toBe(true);
    expect((await verifySuspension(file, "payer", { key: KEY })).status).toBe("pending");
    await runtime.resume("payer", "alice");
    await runtime.suspend("payer", "second look");
    await runtime.resume("payer", "bob");
    await runtime.stop();
    await audit.close();

    const result = await verifiedPayer(file);
    expect(result.suspensions.map((s) => [s.reason, s.approver, s.status])).toEqual([
      ["large payment", "alice", "verified"],
      ["second look", "bob", "verified"],
    ]);
  });

  it("records every kind of decision — approved, denied, expired, cancelled — and verifySuspension tells them apart", async () => {
    const file = path.join(tmp.dir, "audit.jsonl");
    const audit = new JsonlAuditSink(file, { key: KEY });
    const clock = new TestClock();
    const workers = new DynamicSupervisor("workers");
    const runtime = await whenStarted(new Runtime({ root: new Supervisor("root", { children: [new Echo("payer"), workers] }), auditSink: audit, logger: silentLogger, clock }));
    await runtime.suspend("payer", "approve me");
    await runtime.resume("payer", "alice");
    await runtime.suspend("payer", "deny me");
    await runtime.deny("payer", "bob", { reason: "no" });
    await runtime.suspend("payer", "let me lapse", { expiresInMs: 1_000 });
    await clock.advance(1_000);
    await waitUntil(() => lines(file).some((l) => l.includes('"event":"agent.deny"') && l.includes('"expired":true')), "the expiry's receipt on disk");
    await runtime.suspend("payer", "halt me");
    await runtime.send("payer", {}, { type: "civitas.eval.halt" });
    const worker = await workers.spawn(Echo, "worker");
    await runtime.suspend("worker", "despawn me");
    await workers.despawn("worker");
    await waitUntil(() => lines(file).filter((l) => l.includes('"event":"agent.suspend.cancelled"')).length === 2, "both cancellations on disk");
    expect(worker.status).toBe("STOPPED");
    await runtime.stop();
    await audit.close();

    const payer = await verifiedPayer(file);
    expect(payer.suspensions.map((s) => [s.reason, s.status, s.decision, s.decidedBy, s.cause])).toEqual([
      ["approve me", "verified", "approved", "alice", undefined],
      ["deny me", "verified", "denied", "bob", undefined],
      ["let me lapse", "verified", "expired", "expiry", undefined],
      ["halt me", "verified", "cancelled", "_runtime", "halt"],
    ]);
    const despawned = await verifySuspension(file, "worker", { key: KEY });
    expect(despawned.suspensions.map((s) => [s.status, s.decision, s.decidedBy, s.cause])).toEqual([["verified", "cancelled", "workers", "despawned"]]);
  });
});
