// runtime.start() resolves only once the agent.start receipts are durable, so a
// process killed right after it (or right after a reply) leaves them verified in
// the log (issue 11, section 5). Crash tests kill a child process with SIGKILL.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { AuditRow } from "../../src/audit/audit-row.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { runTsChild } from "../support/child-process.js";
import { KEY, tempLogPerTest } from "../support/audit-log.js";

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "runtime-receipts-child.ts");

/** Runs the child in `mode` and SIGKILLs it on the line `killOn`; returns the verified rows of its log. */
async function killedAfter(file: string, mode: string, killOn: string): Promise<AuditRow[]> {
  const run = await runTsChild(child, [file, KEY, mode], {
    timeoutMs: 15_000,
    onLine: (line, kill) => {
      if (line === killOn) kill();
    },
  });
  expect(run.signal, `the child ended on its own (code ${String(run.code)}); stderr:\n${run.stderr}`).toBe("SIGKILL");
  expect(run.lines).toContain(killOn);
  const result = await verifyAuditLog(file, { key: KEY });
  expect(result.ok, result.reason).toBe(true);
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .slice(0, result.rows)
    .map((line) => JSON.parse(line) as AuditRow);
}

function events(rows: readonly AuditRow[], event: string): string[] {
  return rows.filter((r) => r.event === event).map((r) => r.agent);
}

describe("a runtime's lifecycle receipts survive a SIGKILL", () => {
  const tmp = tempLogPerTest();

  it("killed right after runtime.start() resolved, the log holds every agent.start row, verified", async () => {
    const file = path.join(tmp.dir, "audit.jsonl");
    const rows = await killedAfter(file, "started", "started");
    expect(events(rows, "agent.start")).toEqual(["payer", "auditor", "mailer"]);
  }, 30_000);

  it("killed right after a reply, the log holds every agent.start row, verified", async () => {
    const file = path.join(tmp.dir, "audit.jsonl");
    const rows = await killedAfter(file, "reply", "replied");
    expect(events(rows, "agent.start")).toEqual(["payer", "auditor", "mailer"]);
  }, 30_000);

  it("killed right after an ask that crashed its agent was refused, the log holds the crash row, verified", async () => {
    const file = path.join(tmp.dir, "audit.jsonl");
    const rows = await killedAfter(file, "crash", "failed");
    expect(events(rows, "agent.start").slice(0, 3)).toEqual(["payer", "auditor", "mailer"]);
    expect(events(rows, "agent.crash")).toEqual(["payer"]);
  }, 30_000);
});
