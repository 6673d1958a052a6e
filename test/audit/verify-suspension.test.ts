import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { cancel, deny, event, KEY, resume, suspend, tempLogPerTest, writeLog } from "../support/audit-log.js";

describe("verifySuspension", () => {
  const log = tempLogPerTest();

  it("verified: each suspension settled by exactly one resume naming it", async () => {
    await writeLog(log.file, [suspend("payer", "s-1", "big payment"), event("agent.start", "other"), resume("payer", "s-1", "alice"), suspend("payer", "s-2"), resume("payer", "s-2", "bob")]);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.status).toBe("verified");
    expect(result.failures).toEqual([]);
    expect(result.suspensions).toHaveLength(2);
    expect(result.suspensions[0]).toMatchObject({ suspensionId: "s-1", reason: "big payment", status: "verified", approver: "alice" });
    expect(result.suspensions[0]?.since).toMatch(/^2030-/);
    expect(result.suspensions[0]?.resumedAt).toMatch(/^2030-/);
    expect(result.suspensions[1]).toMatchObject({ suspensionId: "s-2", approver: "bob", status: "verified" });
  });

  it("pending, never failed, for a live suspension (parked twice, only the first settled)", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), resume("payer", "s-1"), suspend("payer", "s-2")]);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.status).toBe("pending");
    expect(result.failures).toEqual([]);
    expect(result.suspensions.map((s) => s.status)).toEqual(["verified", "pending"]);
    expect(result.suspensions[1]).not.toHaveProperty("approver");
  });

  it("verified with no suspensions at all; other agents' suspensions do not count", async () => {
    await writeLog(log.file, [suspend("other", "o-1"), event("agent.start", "payer")]);
    expect(await verifySuspension(log.file, "payer", { key: KEY })).toEqual({ status: "verified", suspensions: [], failures: [] });
  });

  it("not-found when no row of the log is of the agent (a misspelt name): nothing was verified", async () => {
    await writeLog(log.file, [suspend("payer", "p-1"), resume("payer", "p-1", "alice")]);
    expect(await verifySuspension(log.file, "payr", { key: KEY })).toEqual({ status: "not-found", suspensions: [], failures: [] });
  });

  it("counts a pause announced again before its resume once (a restart re-announced it after a kill)", async () => {
    await writeLog(log.file, [suspend("payer", "s-1", "big payment"), event("agent.start", "payer"), suspend("payer", "s-1", "big payment"), resume("payer", "s-1", "alice")]);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.failures).toEqual([]);
    expect(result.status).toBe("verified");
    expect(result.suspensions).toEqual([expect.objectContaining({ suspensionId: "s-1", status: "verified", approver: "alice" })]);
  });

  it("failed: a suspension id announced again after its resume", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), resume("payer", "s-1"), suspend("payer", "s-1")]);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.status).toBe("failed");
    expect(result.failures.join()).toMatch(/'s-1' of 'payer' reuses an id/);
  });

  it("failed: a suspension settled twice", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), resume("payer", "s-1"), resume("payer", "s-1", "mallory")]);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.status).toBe("failed");
    expect(result.suspensions[0]).toMatchObject({ status: "failed", approver: "alice" });
    expect(result.failures.join()).toMatch(/settled a second time/);
  });

  it("failed: a resume naming a suspension the log does not hold", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), resume("payer", "s-9")]);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.status).toBe("failed");
    expect(result.suspensions[0]?.status).toBe("pending");
    expect(result.failures.join()).toMatch(/'s-9', which the log does not hold/);
  });

  it("failed: a resume that comes before the suspension it names", async () => {
    await writeLog(log.file, [resume("payer", "s-1"), suspend("payer", "s-1")]);
    expect((await verifySuspension(log.file, "payer", { key: KEY })).status).toBe("failed");
  });

  it("failed: a resume naming a suspension of another agent (for both agents)", async () => {
    await writeLog(log.file, [suspend("other", "o-1"), suspend("payer", "s-1"), resume("payer", "o-1"), resume("other", "s-1")]);
    const payer = await verifySuspension(log.file, "payer", { key: KEY });
    expect(payer.status).toBe("failed");
    expect(payer.failures.join("\n")).toMatch(/'o-1' of another agent, 'other'/);
    expect(payer.failures.join("\n")).toMatch(/a resume of 'other' names suspension 's-1' of 'payer'/);
    expect(payer.suspensions[0]?.status).toBe("failed");
    const other = await verifySuspension(log.file, "other", { key: KEY });
    expect(other.status).toBe("failed");
  });

  it("failed: a broken chain, even when every suspension looks settled", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), resume("payer", "s-1"), event("agent.stop", "payer")]);
    const text = fs.readFileSync(log.file, "utf8").replace('"approver":"alice"', '"approver":"alicf"');
    fs.writeFileSync(log.file, text);
    const result = await verifySuspension(log.file, "payer", { key: KEY });
    expect(result.status).toBe("failed");
    expect(result.failures.join()).toMatch(/chain is broken at row 1: hash-mismatch/);
  });

  it("ignores a torn final line", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), resume("payer", "s-1")]);
    fs.appendFileSync(log.file, '{"agent":"payer","details":{"appr');
    expect((await verifySuspension(log.file, "payer", { key: KEY })).status).toBe("verified");
  });

  it("failed: a resume row without a suspensionId", async () => {
    await writeLog(log.file, [suspend("payer", "s-1"), event("agent.resume", "payer", { approver: "alice" })]);
    expect((await verifySuspension(log.file, "payer", { key: KEY })).status).toBe("failed");
  });

  describe("decisions: approved, denied, expired, cancelled", () => {
    it("reports how each suspension was settled, and a deny, expiry or cancellation settles it (verified)", async () => {
      await writeLog(log.file, [
        suspend("payer", "s-1"),
        resume("payer", "s-1", "alice"),
        suspend("payer", "s-2"),
        deny("payer", "s-2", "bob"),
        suspend("payer", "s-3"),
        deny("payer", "s-3", "expiry", true),
        suspend("payer", "s-4"),
        cancel("payer", "s-4", "despawned", "workers"),
      ]);
      const result = await verifySuspension(log.file, "payer", { key: KEY });
      expect(result.failures).toEqual([]);
      expect(result.status).toBe("verified");
      expect(result.suspensions.map((s) => [s.suspensionId, s.status, s.decision, s.decidedBy])).toEqual([
        ["s-1", "verified", "approved", "alice"],
        ["s-2", "verified", "denied", "bob"],
        ["s-3", "verified", "expired", "expiry"],
        ["s-4", "verified", "cancelled", "workers"],
      ]);
      expect(result.suspensions[3]?.cause).toBe("despawned");
      for (const s of result.suspensions) expect(s.settledAt).toMatch(/^2030-/);
      // approver and resumedAt stay an approval's
      expect(result.suspensions[1]).not.toHaveProperty("approver");
      expect(result.suspensions[1]).not.toHaveProperty("resumedAt");
    });

    it("a pending suspension has no decision", async () => {
      await writeLog(log.file, [suspend("payer", "s-1")]);
      const result = await verifySuspension(log.file, "payer", { key: KEY });
      expect(result.status).toBe("pending");
      expect(result.suspensions[0]).not.toHaveProperty("decision");
      expect(result.suspensions[0]).not.toHaveProperty("settledAt");
    });

    it.each([
      ["a deny after a resume", [resume("payer", "s-1"), deny("payer", "s-1")], "approved"],
      ["a resume after a deny", [deny("payer", "s-1"), resume("payer", "s-1")], "denied"],
      ["a cancellation after an expiry", [deny("payer", "s-1", "expiry", true), cancel("payer", "s-1")], "expired"],
      ["a second deny", [deny("payer", "s-1"), deny("payer", "s-1", "carol")], "denied"],
      ["a deny after a cancellation", [cancel("payer", "s-1"), deny("payer", "s-1")], "cancelled"],
    ])("failed: %s (settled a second time); the first decision is kept", async (_what, settlements, first) => {
      await writeLog(log.file, [suspend("payer", "s-1"), ...settlements]);
      const result = await verifySuspension(log.file, "payer", { key: KEY });
      expect(result.status).toBe("failed");
      expect(result.suspensions[0]).toMatchObject({ status: "failed", decision: first });
      expect(result.failures.join()).toMatch(/'s-1' of 'payer' is settled a second time/);
    });

    it("failed: a deny or cancellation naming a suspension the log does not hold, or one of another agent", async () => {
      await writeLog(log.file, [suspend("payer", "s-1"), deny("payer", "s-404")]);
      expect((await verifySuspension(log.file, "payer", { key: KEY })).failures.join()).toMatch(/a deny of 'payer' names suspension 's-404', which the log does not hold/);
      await writeLog(log.file, [suspend("other", "o-1"), suspend("payer", "s-1"), cancel("payer", "o-1")]);
      const crossed = await verifySuspension(log.file, "payer", { key: KEY });
      expect(crossed.status).toBe("failed");
      expect(crossed.failures.join()).toMatch(/a cancellation of 'payer' names suspension 'o-1' of another agent, 'other'/);
      await writeLog(log.file, [suspend("payer", "s-1"), deny("other", "s-1")]);
      const foreign = await verifySuspension(log.file, "payer", { key: KEY });
      expect(foreign.status).toBe("failed");
      expect(foreign.suspensions[0]?.status).toBe("failed");
    });

    it("failed: a deny row without a suspensionId", async () => {
      await writeLog(log.file, [suspend("payer", "s-1"), event("agent.deny", "payer", { decider: "bob", reason: "", expired: false })]);
      const result = await verifySuspension(log.file, "payer", { key: KEY });
      expect(result.status).toBe("failed");
      expect(result.failures.join()).toMatch(/agent.deny of 'payer' names no suspensionId/);
    });
  });

  it("rejects with AUDIT_KEY_MISSING when no key is given", async () => {
    await writeLog(log.file, [suspend("payer", "s-1")]);
    const saved = process.env.CIVITAS_AUDIT_KEY;
    delete process.env.CIVITAS_AUDIT_KEY;
    try {
      await expect(verifySuspension(log.file, "payer", {})).rejects.toMatchObject({ name: "AuditKeyMissingError", code: "AUDIT_KEY_MISSING" });
    } finally {
      if (saved !== undefined) process.env.CIVITAS_AUDIT_KEY = saved;
    }
  });
});
