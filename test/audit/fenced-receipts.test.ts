/**
 * Issue 21, item 2, for every sink: a settlement stamped with a fence older than one the log
 * already showed for its agent was written by an owner fenced out by then. Readers (the sinks'
 * recordedSettlement) ignore it; verifySuspension reports it as a failure, not as the decision.
 */
import { describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { MemoryAuditSink } from "../../src/audit/memory-audit-sink.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import type { AuditEvent } from "../../src/audit/audit-event.js";
import { event, KEY, tempLogPerTest } from "../support/audit-log.js";

const log = tempLogPerTest();

/** Owner at fence 3 pauses; fence 5 takes over (its start on record); the fence-3 owner approves after that; fence 5 denies. */
function takeover(successorFirst: "agent.start" | "agent.fenced"): AuditEvent[] {
  return [
    event("agent.start", "payer", { incarnation: 1, fence: 3 }),
    event("agent.suspend", "payer", { reason: "approve", suspensionId: "s-1", since: "2030-01-01T00:00:00.000Z", durable: true, fence: 3 }),
    successorFirst === "agent.start" ? event("agent.start", "payer", { incarnation: 1, suspensionId: "s-1", fence: 5 }) : event("agent.fenced", "payer", { fence: 3, currentFence: 5, status: "SUSPENDED" }),
    event("agent.resume", "payer", { approver: "mallory", suspensionId: "s-1", reason: "approve", fence: 3 }),
    event("agent.deny", "payer", { decider: "bob", suspensionId: "s-1", reason: "no", expired: false, fence: 5 }),
  ];
}

describe("a fenced-out owner's settlement", () => {
  it.each(["agent.start", "agent.fenced"] as const)("is not the decision (newer fence shown by %s): sinks skip it, verifySuspension fails naming it", async (shown) => {
    const events = takeover(shown);
    const sink = new JsonlAuditSink(log.file, { key: KEY });
    for (const e of events) await sink.emit(e);
    expect(await sink.recordedSettlement("payer", "s-1")).toMatchObject({ event: "agent.deny", details: { decider: "bob" } });
    await sink.close();
    const memory = new MemoryAuditSink();
    for (const e of events) memory.emit(e);
    expect(await memory.recordedSettlement("payer", "s-1")).toMatchObject({ event: "agent.deny" });

    const verified = await verifySuspension(log.file, "payer", { key: KEY });
    expect(verified.status).toBe("failed");
    expect(verified.failures).toEqual([
      "row 3: a resume of suspension 's-1' of 'payer' was written at fence 3 after fence 5 took 'payer' over; a fenced-out owner's receipt is not a decision",
    ]);
    expect(verified.suspensions).toEqual([expect.objectContaining({ suspensionId: "s-1", decision: "denied", decidedBy: "bob", status: "failed" })]);
  });

  it("a decision recorded before the takeover is the decision, and the successor's stamps do not void it", async () => {
    const events = [...takeover("agent.start")];
    // The fence-3 approval comes before anything of fence 5: the owner of record decided, then its process ended.
    const [start, suspend, successor, approval] = events as [AuditEvent, AuditEvent, AuditEvent, AuditEvent];
    const sink = new JsonlAuditSink(log.file, { key: KEY });
    for (const e of [start, suspend, approval, successor]) await sink.emit(e);
    expect(await sink.recordedSettlement("payer", "s-1")).toMatchObject({ event: "agent.resume", details: { approver: "mallory" } });
    await sink.close();
    expect(await verifySuspension(log.file, "payer", { key: KEY })).toMatchObject({ status: "verified", failures: [], suspensions: [expect.objectContaining({ decision: "approved" })] });
  });

  it("rows without fences (unfenced stores) are read as before", async () => {
    const sink = new JsonlAuditSink(log.file, { key: KEY });
    await sink.emit(event("agent.suspend", "payer", { reason: "r", suspensionId: "s-2", since: "2030-01-01T00:00:00.000Z", durable: true }));
    await sink.emit(event("agent.resume", "payer", { approver: "alice", suspensionId: "s-2", reason: "r" }));
    expect(await sink.recordedSettlement("payer", "s-2")).toMatchObject({ event: "agent.resume" });
    await sink.close();
    expect((await verifySuspension(log.file, "payer", { key: KEY })).status).toBe("verified");
  });
});

describe("a decision on record its owner refused to carry out (agent.settlement.refused)", () => {
  const suspend = event("agent.suspend", "payer", { reason: "approve", suspensionId: "s-1", since: "2030-01-01T00:00:00.000Z", durable: true, fence: 3 });
  const approval = event("agent.resume", "payer", { approver: "mallory", suspensionId: "s-1", reason: "approve", fence: 3 });
  const refusal = (decider: string, fence: number): AuditEvent => event("agent.settlement.refused", "payer", { suspensionId: "s-1", event: "agent.resume", decider, fence });
  const denial = event("agent.deny", "payer", { decider: "bob", suspensionId: "s-1", reason: "no", expired: false, fence: 5 });
  const claimed = event("agent.claimed", "payer", { fence: 5 });

  async function read(events: AuditEvent[]): Promise<{ recorded: AuditEvent | undefined; verified: Awaited<ReturnType<typeof verifySuspension>> }> {
    const sink = new JsonlAuditSink(log.file, { key: KEY });
    for (const e of events) await sink.emit(e);
    const recorded = await sink.recordedSettlement("payer", "s-1");
    await sink.close();
    const memory = new MemoryAuditSink();
    for (const e of events) memory.emit(e);
    expect(await memory.recordedSettlement("payer", "s-1")).toEqual(recorded);
    return { recorded, verified: await verifySuspension(log.file, "payer", { key: KEY }) };
  }

  it("is set aside: the pause is pending again, and the next settlement is its decision", async () => {
    const pending = await read([suspend, approval, claimed, refusal("mallory", 5)]);
    expect(pending.recorded).toBeUndefined();
    expect(pending.verified).toMatchObject({ status: "pending", failures: [], suspensions: [{ suspensionId: "s-1", status: "pending" }] });
    expect(pending.verified.suspensions[0]?.decision).toBeUndefined();
  });

  it("the settlement after the refusal is the only decision, and verifies", async () => {
    const { recorded, verified } = await read([suspend, approval, claimed, refusal("mallory", 5), denial]);
    expect(recorded).toMatchObject({ event: "agent.deny", details: { decider: "bob" } });
    expect(verified).toMatchObject({ status: "verified", failures: [], suspensions: [expect.objectContaining({ decision: "denied", decidedBy: "bob", status: "verified" })] });
  });

  it("a refusal naming another decider sets nothing aside and fails verification", async () => {
    const { recorded, verified } = await read([suspend, approval, claimed, refusal("alice", 5), denial]);
    expect(recorded).toMatchObject({ event: "agent.resume", details: { approver: "mallory" } });
    expect(verified.status).toBe("failed");
    expect(verified.failures[0]).toMatch(/row 3: a refusal names a decision of suspension 's-1' of 'payer' that the log does not hold before it/);
  });

  it("a refusal written by a fenced-out owner sets nothing aside", async () => {
    const { recorded, verified } = await read([suspend, approval, claimed, refusal("mallory", 3)]);
    expect(recorded).toMatchObject({ event: "agent.resume", details: { approver: "mallory" } });
    expect(verified.status).toBe("failed");
    expect(verified.failures[0]).toMatch(/row 3: a refusal to carry out the decision of suspension 's-1' of 'payer' was written at fence 3 after fence 5 took 'payer' over/);
  });
});
