/**
 * Issue 21 (d): a reading sink answers `recordedSettlement` from an index it
 * grows as the log grows, reading only what was appended since its last
 * lookup, so restoring many parked agents reads the log once. The index must
 * answer exactly what a whole read of the log answers (effectiveSettlement),
 * whatever the order of appends and lookups; it must not take a decision
 * from a forged row or from anything after a break in the chain.
 */
import fs from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/audit-event.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { keyBytes } from "../../src/audit/audit-row.js";
import { effectiveSettlement } from "../../src/audit/owner-fence.js";
import { JsonlSettlements } from "../../src/audit/recorded-settlement.js";
import { SettlementIndex } from "../../src/audit/settlement-index.js";
import { walkAuditLog } from "../../src/audit/verify-audit-log.js";
import { event, KEY, OTHER_KEY, tempDir, tempLogPerTest } from "../support/audit-log.js";

const log = tempLogPerTest();
const AGENTS = ["a", "b"];
const PAUSES = ["s-1", "s-2"];

/** One step: append an event, or look a pause up. */
type Step = { kind: "append"; event: AuditEvent } | { kind: "lookup"; agent: string; suspensionId: string };

const agentArb = fc.constantFrom(...AGENTS);
const pauseArb = fc.constantFrom(...PAUSES);
const fenceArb = fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined });
const withFence = (details: Record<string, string | number | boolean>, fence: number | undefined): Record<string, string | number | boolean> =>
  fence === undefined ? details : { ...details, fence };
const eventArb: fc.Arbitrary<AuditEvent> = fc.oneof(
  fc.tuple(agentArb, pauseArb, fenceArb).map(([agent, id, fence]) => event("agent.suspend", agent, withFence({ reason: "r", suspensionId: id, since: "2030-01-01T00:00:00.000Z", durable: true }, fence))),
  fc.tuple(agentArb, pauseArb, fc.constantFrom("alice", "mallory"), fenceArb).map(([agent, id, approver, fence]) => event("agent.resume", agent, withFence({ approver, suspensionId: id, reason: "r" }, fence))),
  fc.tuple(agentArb, pauseArb, fc.constantFrom("bob", "expiry"), fenceArb).map(([agent, id, decider, fence]) => event("agent.deny", agent, withFence({ decider, suspensionId: id, reason: "no", expired: decider === "expiry" }, fence))),
  fc.tuple(agentArb, pauseArb, fenceArb).map(([agent, id, fence]) => event("agent.suspend.cancelled", agent, withFence({ suspensionId: id, cause: "halt", by: "ops" }, fence))),
  fc.tuple(agentArb, pauseArb, fc.constantFrom("agent.resume", "agent.deny"), fc.constantFrom("alice", "mallory", "bob"), fenceArb).map(([agent, id, refused, decider, fence]) =>
    event("agent.settlement.refused", agent, withFence({ suspensionId: id, event: refused, decider }, fence)),
  ),
  fc.tuple(agentArb, fc.integer({ min: 1, max: 4 })).map(([agent, fence]) => event("agent.claimed", agent, { fence })),
);
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: eventArb.map((e) => ({ kind: "append" as const, event: e })) },
  { weight: 1, arbitrary: fc.tuple(agentArb, pauseArb).map(([agent, suspensionId]) => ({ kind: "lookup" as const, agent, suspensionId })) },
);

describe("JsonlAuditSink.recordedSettlement, read as the log grows", () => {
  it("answers, at every point, what a whole read of the log answers (property over appends and lookups)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
        const { dir, cleanup } = tempDir();
        const sink = new JsonlAuditSink(`${dir}/audit.jsonl`, { key: KEY });
        const appended: AuditEvent[] = [];
        try {
          for (const step of steps) {
            if (step.kind === "append") {
              await sink.emit(step.event);
              appended.push(step.event);
            } else {
              const found = await sink.recordedSettlement(step.agent, step.suspensionId);
              const expected = effectiveSettlement(appended, step.agent, step.suspensionId);
              expect(found === undefined ? undefined : { event: found.event, details: found.details }).toEqual(expected === undefined ? undefined : { event: expected.event, details: expected.details });
            }
          }
        } finally {
          await sink.close();
          cleanup();
        }
      }),
      { numRuns: 60 },
    );
  });

  it("a row under the sink's key whose mac is not under its key decides nothing; nothing after a break in the chain decides", async () => {
    const writer = new JsonlAuditSink(log.file, { key: OTHER_KEY });
    await writer.emit(event("agent.suspend", "payer", { reason: "r", suspensionId: "s-1", since: "2030-01-01T00:00:00.000Z", durable: true }));
    await writer.emit(event("agent.resume", "payer", { approver: "mallory", suspensionId: "s-1", reason: "r" }));
    await writer.close();
    const rows = walkAuditLog(fs.readFileSync(log.file), null).rows;
    const indexOf = (key: string): SettlementIndex => {
      const index = new SettlementIndex("default", keyBytes(key) as Uint8Array);
      for (const row of rows) index.take(row);
      return index;
    };
    expect(indexOf(OTHER_KEY).decision("payer", "s-1")).toMatchObject({ event: "agent.resume" }); // the control: signed under that key
    expect(indexOf(KEY).decision("payer", "s-1")).toBeUndefined();

    const edited = rows.map((row, i) => (i === 0 ? { ...row, details: { ...row.details, reason: "x" } } : row));
    const index = new SettlementIndex("default", keyBytes(OTHER_KEY) as Uint8Array);
    expect(edited.map((row) => index.take(row))).toEqual([false, false]);
    expect(index.decision("payer", "s-1")).toBeUndefined();
  });

  it("a line still being written (or torn by a crash) is read once it is complete, never half", async () => {
    const writer = new JsonlAuditSink(log.file, { key: KEY });
    await writer.emit(event("agent.suspend", "payer", { reason: "r", suspensionId: "s-1", since: "2030-01-01T00:00:00.000Z", durable: true }));
    await writer.emit(event("agent.resume", "payer", { approver: "alice", suspensionId: "s-1", reason: "r" }));
    await writer.close();
    const whole = fs.readFileSync(log.file);
    fs.writeFileSync(log.file, whole.subarray(0, whole.length - 20));
    const settlements = new JsonlSettlements(log.file, "default", keyBytes(KEY) as Uint8Array);
    expect(await settlements.lookup("payer", "s-1", whole.length - 20)).toBeUndefined();
    fs.writeFileSync(log.file, whole);
    expect(await settlements.lookup("payer", "s-1", whole.length)).toMatchObject({ event: "agent.resume", details: { approver: "alice" } });
  });
});
