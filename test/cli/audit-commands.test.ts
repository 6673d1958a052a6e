import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/audit-event.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { civitas, civitasBoth, civitasJson, tempDir } from "./fixtures/run-cli.js";

const KEY = "k";
const TORN = '{"agent":"payer","details":{"reas';

function suspend(agent: string, suspensionId: string, reason = "budget"): AuditEvent {
  const since = "2030-01-02T03:04:05.678Z";
  return { event: "agent.suspend", ts: since, agent, signerId: "test", details: { reason, suspensionId, since, durable: true } };
}

function resume(agent: string, suspensionId: string, approver = "alice"): AuditEvent {
  return {
    event: "agent.resume",
    ts: "2030-01-02T04:00:00.000Z",
    agent,
    signerId: "test",
    details: { approver, suspensionId, reason: "budget" },
  };
}

function deny(agent: string, suspensionId: string, decider: string, expired = false): AuditEvent {
  return { event: "agent.deny", ts: "2030-01-02T05:00:00.000Z", agent, signerId: "test", details: { decider, suspensionId, reason: "no", expired } };
}

function cancelled(agent: string, suspensionId: string, cause: string, by: string): AuditEvent {
  return { event: "agent.suspend.cancelled", ts: "2030-01-02T06:00:00.000Z", agent, signerId: "test", details: { suspensionId, cause, by } };
}

async function writeLog(file: string, events: AuditEvent[]): Promise<void> {
  const sink = new JsonlAuditSink(file, { key: KEY });
  for (const e of events) await sink.emit(e);
  await sink.close();
}

describe("civitas audit", { timeout: 60_000 }, () => {
  let dir: string;
  let log: string;
  let tornLog: string;
  let tamperedLog: string;
  let holedLog: string;
  let badLog: string;
  let decidedLog: string;

  beforeAll(async () => {
    dir = tempDir();
    log = path.join(dir, "audit.jsonl");
    // payer: one settled suspension and one live one; fetcher: one settled.
    await writeLog(log, [suspend("payer", "s-1"), suspend("fetcher", "f-1"), resume("payer", "s-1"), resume("fetcher", "f-1", "bob"), suspend("payer", "s-2", "review")]);
    tornLog = path.join(dir, "torn.jsonl");
    fs.copyFileSync(log, tornLog);
    fs.appendFileSync(tornLog, TORN);
    tamperedLog = path.join(dir, "tampered.jsonl");
    const lines = fs.readFileSync(log, "utf8").split("\n");
    lines[1] = lines[1]!.replace("f-1", "f-9");
    fs.writeFileSync(tamperedLog, lines.join("\n"));
    holedLog = path.join(dir, "holed.jsonl");
    fs.writeFileSync(holedLog, [lines[0], "garbage", ...lines.slice(1)].join("\n"));
    badLog = path.join(dir, "bad.jsonl");
    // a resume of payer naming a suspension the log does not hold
    await writeLog(badLog, [suspend("payer", "s-1"), resume("payer", "s-1"), resume("payer", "s-404")]);
    decidedLog = path.join(dir, "decided.jsonl");
    // payer: approved, denied, expired, cancelled by a halt
    await writeLog(decidedLog, [
      suspend("payer", "d-1"),
      resume("payer", "d-1"),
      suspend("payer", "d-2"),
      deny("payer", "d-2", "bob"),
      suspend("payer", "d-3"),
      deny("payer", "d-3", "expiry", true),
      suspend("payer", "d-4"),
      cancelled("payer", "d-4", "halt", "_runtime"),
    ]);
  });

  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe("verify", () => {
    it("says OK with the row count (exit 0), with the key from --key or CIVITAS_AUDIT_KEY", async () => {
      const [flag, env, json] = await Promise.all([
        civitas(["audit", "verify", log, "--key", KEY]),
        civitas(["audit", "verify", log], { CIVITAS_AUDIT_KEY: KEY }),
        civitasJson(["audit", "verify", log, "--key", KEY]),
      ]);
      expect(flag.code).toBe(0);
      expect(flag.stdout).toMatch(/^OK: .*5 rows verified/);
      expect(env.code).toBe(0);
      expect(json).toEqual({ code: 0, json: { ok: true, file: log, rows: 5, tornTail: false, exitCode: 0 } });
    });

    it("notes a torn tail and still exits 0", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify", tornLog, "--key", KEY]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("5 rows verified");
      expect(run.stdout).toContain("torn final line");
      expect(code).toBe(0);
      expect(json).toMatchObject({ ok: true, rows: 5, tornTail: true });
    });

    it("reports the broken row index and reason (exit 1) for a tampered log or a wrong key", async () => {
      const [run, { code, json }, wrongKey] = await Promise.all([
        civitas(["audit", "verify", tamperedLog, "--key", KEY]),
        civitasJson(["audit", "verify", tamperedLog, "--key", KEY]),
        civitasJson(["audit", "verify", log, "--key", "not-k"]),
      ]);
      expect(code).toBe(1);
      expect(json).toMatchObject({ ok: false, brokenAt: 1, rows: 1, exitCode: 1 });
      expect(typeof json.reason).toBe("string");
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("FAILED");
      expect(run.stdout).toContain("broken at row 1");
      expect(run.stdout).toContain(String(json.reason));
      expect(wrongKey.code).toBe(1);
      expect(wrongKey.json).toMatchObject({ ok: false, brokenAt: 0 });
    });

    it("exits 3 for an unreadable file (AUDIT_UNREADABLE: missing, or a directory) and 2 without a key", async () => {
      const [missing, directory, noKey] = await Promise.all([
        civitasJson(["audit", "verify", path.join(dir, "missing.jsonl"), "--key", KEY]),
        civitasJson(["audit", "verify", dir, "--key", KEY]),
        civitas(["audit", "verify", log]),
      ]);
      expect(missing.code).toBe(3);
      expect(missing.json).toMatchObject({ ok: false, exitCode: 3, error: { code: "AUDIT_UNREADABLE" } });
      expect(directory.code).toBe(3);
      expect(directory.json).toMatchObject({ ok: false, exitCode: 3, error: { code: "AUDIT_UNREADABLE" } });
      expect((directory.json.error as { message: string }).message).toContain("is a directory");
      expect(noKey.code).toBe(2);
      expect(noKey.stderr).toContain("CIVITAS_AUDIT_KEY");
    });
  });

  describe("verify-suspension", () => {
    it("prints a table and VERIFIED for a settled agent (exit 0)", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify-suspension", log, "fetcher", "--key", KEY]);
      expect(run.code).toBe(0);
      const lines = run.stdout.split("\n");
      expect(lines[0]).toMatch(/^SUSPENSION\s+REASON\s+SINCE\s+STATUS\s+DECISION\s+BY\s+SETTLED AT$/);
      expect(lines[1]).toMatch(/^f-1\s+budget\s+2030-01-02T03:04:05.678Z\s+verified\s+approved\s+bob\s+2030-01-02T04:00:00.000Z$/);
      expect(run.stdout).toContain("VERIFIED");
      expect(code).toBe(0);
      expect(json).toMatchObject({
        ok: true,
        agent: "fetcher",
        status: "verified",
        failures: [],
        suspensions: [{ suspensionId: "f-1", status: "verified", decision: "approved", approver: "bob" }],
      });
    });

    it("says NOT FOUND and exits 4 for an agent the log holds no row of (a misspelt name)", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify-suspension", log, "fetchr", "--key", KEY]);
      expect(run.code).toBe(4);
      expect(run.stdout).toContain("NOT FOUND");
      expect(run.stdout).toContain("did you mean 'fetcher'?");
      expect(run.stdout).not.toContain("VERIFIED");
      expect(code).toBe(4);
      expect(json).toMatchObject({ ok: false, agent: "fetchr", status: "not-found", suspensions: [], didYouMean: "fetcher" });
    });

    it("suggests nothing when no agent of the log has a similar name (still NOT FOUND, exit 4)", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify-suspension", log, "zzzzzzzz", "--key", KEY]);
      expect(run.code).toBe(4);
      expect(run.stdout).toContain("NOT FOUND");
      expect(run.stdout).not.toContain("did you mean");
      expect(code).toBe(4);
      expect(json).toMatchObject({ status: "not-found" });
      expect(json).not.toHaveProperty("didYouMean");
    });

    it("shows how each suspension was decided: approved, denied, expired, cancelled (table and --json)", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify-suspension", decidedLog, "payer", "--key", KEY]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^d-1\s+budget\s+\S+\s+verified\s+approved\s+alice\s+2030-01-02T04:00:00.000Z$/m);
      expect(run.stdout).toMatch(/^d-2\s+budget\s+\S+\s+verified\s+denied\s+bob\s+2030-01-02T05:00:00.000Z$/m);
      expect(run.stdout).toMatch(/^d-3\s+budget\s+\S+\s+verified\s+expired\s+expiry\s+2030-01-02T05:00:00.000Z$/m);
      expect(run.stdout).toMatch(/^d-4\s+budget\s+\S+\s+verified\s+cancelled\s+_runtime\s+2030-01-02T06:00:00.000Z$/m);
      expect(run.stdout).toContain("VERIFIED: every suspension of 'payer' was settled by exactly one decision");
      expect(code).toBe(0);
      expect(json).toMatchObject({
        status: "verified",
        suspensions: [
          { suspensionId: "d-1", decision: "approved", decidedBy: "alice" },
          { suspensionId: "d-2", decision: "denied", decidedBy: "bob" },
          { suspensionId: "d-3", decision: "expired", decidedBy: "expiry" },
          { suspensionId: "d-4", decision: "cancelled", decidedBy: "_runtime", cause: "halt" },
        ],
      });
    });

    it("says PENDING clearly for a live suspension, and exits 0", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify-suspension", log, "payer", "--key", KEY]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^s-2\s+review\s+\S+\s+pending\s+-\s+-\s+-$/m);
      expect(run.stdout).toContain("PENDING: 1 suspension of 'payer' is still live");
      expect(code).toBe(0);
      expect(json).toMatchObject({ status: "pending", suspensions: [{ status: "verified" }, { status: "pending" }] });
    });

    it("exits 1 with the failures for a resume naming an unknown suspension", async () => {
      const [run, { code, json }] = await civitasBoth(["audit", "verify-suspension", badLog, "payer", "--key", KEY]);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("failures:");
      expect(run.stdout).toContain("FAILED");
      expect(code).toBe(1);
      expect(json).toMatchObject({ ok: false, status: "failed", exitCode: 1 });
      expect((json.failures as string[]).length).toBeGreaterThan(0);
    });

    it("exits 1 for a broken chain and 3 for an unreadable file", async () => {
      const [broken, missing] = await Promise.all([
        civitasJson(["audit", "verify-suspension", tamperedLog, "payer", "--key", KEY]),
        civitasJson(["audit", "verify-suspension", path.join(dir, "missing.jsonl"), "payer", "--key", KEY]),
      ]);
      expect(broken).toMatchObject({ code: 1, json: { status: "failed" } });
      expect(missing).toMatchObject({ code: 3, json: { ok: false } });
    });
  });

  describe("repair", () => {
    it("removes exactly a torn tail, making the log byte-identical to before the crash", async () => {
      const file = path.join(dir, "repair-me.jsonl");
      fs.copyFileSync(tornLog, file);
      const run = await civitas(["audit", "repair", file]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`removed a torn final line of ${Buffer.byteLength(TORN)} bytes`);
      expect(fs.readFileSync(file).equals(fs.readFileSync(log))).toBe(true);

      fs.appendFileSync(file, TORN);
      const { code, json } = await civitasJson(["audit", "repair", file]);
      expect(code).toBe(0);
      expect(json).toEqual({ ok: true, file, repaired: true, removedBytes: Buffer.byteLength(TORN), exitCode: 0 });
    });

    it("says nothing needed repair for an intact log (exit 0)", async () => {
      const before = fs.readFileSync(log);
      const [run, { code, json }] = await civitasBoth(["audit", "repair", log]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("nothing to repair");
      expect(code).toBe(0);
      expect(json).toMatchObject({ repaired: false, removedBytes: 0 });
      expect(fs.readFileSync(log).equals(before)).toBe(true);
    });

    it("refuses (exit 3) and leaves the file untouched when the damage is not at the tail", async () => {
      const before = fs.readFileSync(holedLog);
      const run = await civitas(["audit", "repair", holedLog]);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain("REFUSED");
      const { code, json } = await civitasJson(["audit", "repair", holedLog]);
      expect(code).toBe(3);
      expect(json).toMatchObject({ ok: false, repaired: false, refused: true, error: { code: "AUDIT_CORRUPT" } });
      expect(fs.readFileSync(holedLog).equals(before)).toBe(true);
    });
  });
});
