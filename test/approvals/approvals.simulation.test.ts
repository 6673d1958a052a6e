/**
 * Approvals under `simulate` (issue 24 §8): gate decisions, votes in any
 * order, racing approve/deny, kills between the last vote and the handling,
 * escalation and expiry on virtual time, over many seeds. Every held action
 * is handled at most once, only after its rule was satisfied, never after a
 * deny or an expiry, and every request ends in exactly one recorded decision
 * (a receipt re-emitted after a kill, same receiptId and content, is that one).
 */
import { describe, expect, it } from "vitest";
import { APPROVALS_KEY, type JsonObject } from "../../src/index.js";
import { simulate } from "../../src/entries/testing.js";
import { Payments, paymentsPolicy } from "./fixtures.js";
import { whenStarted } from "../support/runtimes.js";

const SEEDS = 60;

/** A small seeded PRNG for the test's own choices (the simulation has its own). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The events with each receiptId once; a re-emission must be identical to the first (but for the owner's fence, which the restarted owner stamps: verifyApproval ignores it too). */
function onceEach<E extends { details: JsonObject }>(events: E[]): E[] {
  const seen = new Map<unknown, string>();
  return events.filter((e) => {
    const { fence: _fence, ...unfenced } = e.details;
    const content = JSON.stringify(unfenced);
    const first = seen.get(e.details.receiptId);
    if (first !== undefined) expect(content, "a re-emitted receipt is identical").toBe(first);
    seen.set(e.details.receiptId, content);
    return first === undefined;
  });
}

const VOTES: [string, "approve" | "deny"][] = [
  ["ana", "approve"],
  ["ben", "approve"],
  ["cy", "deny"],
  ["maya", "approve"],
  ["ana", "approve"],
];

describe("approvals under simulation", () => {
  it(`hold at most once, only when approved, never after deny or expiry; one decision each (${SEEDS} seeds)`, async () => {
    const outcomes = new Map<string, number>();
    for (let seed = 0; seed < SEEDS; seed++) {
      const random = prng(seed);
      const sim = await whenStarted(simulate({ root: () => new Payments("payments"), seed, runtime: { approvalPolicy: paymentsPolicy } }));
      void sim.ask("payments", "pay", { amountCents: 250_000, to: "ACME" }, { timeoutMs: 1_000_000 }).catch(() => undefined);
      await sim.idle();
      const stored = (): JsonObject[] => (sim.view.stored("payments")?.[APPROVALS_KEY] as JsonObject[] | undefined) ?? [];
      const [request] = stored();
      expect(request, `seed ${seed}: the request is stored`).toBeDefined();
      const id = request!.approvalId as string;
      const votes = [...VOTES].sort(() => random() - 0.5).slice(0, 1 + Math.floor(random() * VOTES.length));
      for (const [who, vote] of votes) {
        const voting = vote === "deny" ? sim.denyApproval(id, who, { reason: "no" }) : sim.approve(id, who);
        voting.catch(() => undefined);
        if (random() < 0.25) await sim.kill();
        else await sim.idle();
      }
      await sim.run(); // lets virtual time run: escalation and expiry of whatever is still pending
      const [final] = stored();
      const paid = (sim.view.stored("payments")?.paid as string[] | undefined) ?? [];
      // A receipt re-emitted after a kill (written ahead, still in the stored record) is the same receipt: counted once, as verifyApproval does.
      const decided = onceEach(sim.view.audit.filter((e) => e.event === "approval.decided" && e.details.approvalId === id));
      const handled = onceEach(sim.view.audit.filter((e) => e.event === "approval.consumed" && e.details.approvalId === id));
      expect(paid.length, `seed ${seed}: handled at most once`).toBeLessThanOrEqual(1);
      expect(final!.status, `seed ${seed}`).not.toBe("pending");
      expect(decided.length, `seed ${seed}: one recorded decision`).toBe(1);
      expect(decided[0]!.details.decision).toBe(final!.status);
      if (final!.status !== "approved") {
        expect(paid, `seed ${seed}: nothing handled after ${String(final!.status)}`).toEqual([]);
        expect(handled).toEqual([]);
      } else {
        const counted = (final!.votes as { approver: string; vote: string }[]).filter((v) => v.vote === "approve").map((v) => v.approver);
        expect(new Set(counted).size, `seed ${seed}: two distinct approvers`).toBeGreaterThanOrEqual(2);
        expect(handled.length, `seed ${seed}: consumed once`).toBe(1);
        expect(paid.length).toBe(1);
      }
      outcomes.set(String(final!.status), (outcomes.get(String(final!.status)) ?? 0) + 1);
      await sim.stop();
    }
    // The seeds reach every ending: approved (and handled), denied, expired.
    expect([...outcomes.keys()].sort()).toEqual(["approved", "denied", "expired"]);
  }, 300_000);
});
