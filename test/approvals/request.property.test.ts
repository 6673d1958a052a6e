/**
 * The request state machine against a model: votes, denies, escalations and
 * expiries in any order. Nothing approves without every stage's distinct
 * approvers, any deny ends it, expiry denies, and a request is decided once.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { castVote, escalateIfDue, expireIfDue, newRecord, type ApprovalRecord } from "../../src/approvals/approval-request.js";
import { checkApprovalRule } from "../../src/approvals/approval-rule.js";
import type { ApprovalStatus } from "../../src/index.js";

const T0 = Date.parse("2026-12-04T10:00:00.000Z");
const RULE = checkApprovalRule("test", {
  stages: [
    { approvers: ["ana", "ben", "cy"], min: 2 },
    { approvers: ["dan", "eve"], min: 1 },
  ],
  escalateAfterMs: 1_000,
  escalateTo: ["maya"],
  expiresInMs: 3_000,
});
const PEOPLE = ["ana", "ben", "cy", "dan", "eve", "maya", "mallory"];

type Action = { kind: "vote"; who: string; vote: "approve" | "deny" } | { kind: "wait"; ms: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("vote" as const), who: fc.constantFrom(...PEOPLE), vote: fc.constantFrom("approve" as const, "approve" as const, "deny" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 1_500 }) }) },
);

/** The model: what the rule says should happen, written independently of the implementation. */
interface Model {
  status: ApprovalStatus;
  stage: number;
  approvals: Set<string>[];
  escalatedIn: number | undefined;
}

describe("an approval request, against its model", () => {
  it("agrees with the model on every step of any sequence of votes and waits", () => {
    fc.assert(
      fc.property(fc.array(action, { maxLength: 30 }), (actions) => {
        let now = T0;
        let record: ApprovalRecord = newRecord("a1", "payments", { id: "m1", type: "pay", sender: "s", payload: {}, correlation_id: null }, "0".repeat(64), RULE, "r", now);
        const model: Model = { status: "pending", stage: 0, approvals: [new Set(), new Set()], escalatedIn: undefined };
        let decisions = 0;
        const due = (): void => {
          // What the tick does: escalation, then expiry.
          const escalated = escalateIfDue(record, now);
          const next = expireIfDue(escalated ?? record, now) ?? escalated;
          if (next !== undefined) {
            if (next.status !== "pending") decisions++;
            record = next;
          }
          if (model.status === "pending") {
            if (model.escalatedIn === undefined && now >= T0 + 1_000) model.escalatedIn = model.stage;
            if (now >= T0 + 3_000) model.status = "expired";
          }
        };
        for (const step of actions) {
          if (step.kind === "wait") {
            now += step.ms;
            due();
            continue;
          }
          const accepted = [...(RULE.stages[model.stage]?.approvers ?? []), ...(model.escalatedIn === model.stage ? ["maya"] : [])];
          let code: string | undefined;
          try {
            const outcome = castVote(record, step.who, step.vote, now);
            if (outcome.kind === "counted") {
              if (outcome.decided !== undefined) decisions++;
              record = outcome.record;
            }
          } catch (error) {
            code = (error as { code?: string }).code;
          }
          if (model.status !== "pending") expect(code).toBe("STALE_APPROVAL");
          else if (!accepted.includes(step.who)) expect(code).toBe("APPROVER_NOT_ALLOWED");
          else {
            expect(code).toBeUndefined();
            if (step.vote === "deny") model.status = "denied";
            else {
              const set = model.approvals[model.stage]!;
              set.add(step.who);
              if (set.size >= RULE.stages[model.stage]!.min) model.stage++;
              if (model.stage === RULE.stages.length) model.status = "approved";
            }
          }
          expect(record.status).toBe(model.status);
          expect(record.stage).toBe(model.stage);
        }
        expect(record.status).toBe(model.status);
        expect(decisions).toBe(model.status === "pending" ? 0 : 1);
        if (record.status === "approved") {
          // Every stage had its distinct, accepted approvers, and no deny was counted.
          for (const [i, stage] of RULE.stages.entries()) {
            const voters = new Set(record.votes.filter((v) => v.stage === i && v.vote === "approve").map((v) => v.approver));
            expect(voters.size).toBeGreaterThanOrEqual(stage.min);
          }
          expect(record.votes.some((v) => v.vote === "deny")).toBe(false);
          expect(Date.parse(record.decidedAt!)).toBeLessThan(T0 + 3_000);
        }
        if (record.status === "expired") expect(record.decidedBy).toBe("expiry");
      }),
      { numRuns: 500 },
    );
  });
});
