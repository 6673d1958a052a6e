/**
 * Held actions survive SIGKILL (issue 24 §2): real child processes on one
 * SQLite file, killed after the request's write (before anything else saw
 * it), between a state write and its receipts, between the last vote and the
 * handling, and during the handling. No held action is lost or created
 * twice; a released one is handled at most once; no receipt is lost (they
 * are written ahead with the state and re-emitted at restore), and an
 * identical re-emission counts once in verifyApproval.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { verifyApproval, verifyAuditLog } from "../../src/entries/audit.js";
import { runTsChild, type ChildRun } from "../support/child-process.js";
import { scratch } from "../support/scratch.js";

const child = path.join(import.meta.dirname, "fixtures", "approvals-crash-child.ts");
const { tempDir } = scratch("civitas-approvals-crash-");

/** A scratch directory's state database and audit log, removed after the test. */
function files(): { db: string; log: string } {
  const dir = tempDir();
  return { db: path.join(dir, "state.db"), log: path.join(dir, "audit.jsonl") };
}

/** Two restarts that report: nothing is pending, the approval is used up, and the payment is handled once (the second restart pays nothing more). */
async function expectPaidOnce(db: string, log: string, approvalId: string | undefined): Promise<void> {
  const first = await run("report", db, log);
  expect(line(first.lines, "start").pending).toEqual([]);
  const report = line(first.lines, "report");
  expect(report.records).toEqual([{ approvalId, status: "approved", consumed: true, votes: 2 }]);
  expect(report.paid).toHaveLength(1);
  const again = await run("report", db, log);
  expect(line(again.lines, "report").paid).toEqual(report.paid);
}

/** The log verifies, and so does the approval: approved by ben after ana's vote, and handled. */
async function expectApprovedByAnaAndBen(log: string, approvalId: string): Promise<void> {
  expect((await verifyAuditLog(log, { key: "approvals-crash-key" })).ok).toBe(true);
  const verified = await verifyApproval(log, approvalId, { key: "approvals-crash-key" });
  expect(verified.failures).toEqual([]);
  expect(verified).toMatchObject({ status: "verified", decision: "approved", decidedBy: "ben", handled: true });
  expect(verified.votes.map((v) => v.approver)).toEqual(["ana", "ben"]);
}

interface Line {
  ev: string;
  [key: string]: unknown;
}

/** Runs the child in `mode`; SIGKILLs it at the first line of kind `killAt`. */
async function run(mode: string, db: string, log: string, killAt?: string): Promise<{ run: ChildRun; lines: Line[] }> {
  const result = await runTsChild(child, [mode, db, log], {
    timeoutMs: 60_000,
    onLine: (line, kill) => {
      if (killAt !== undefined && (JSON.parse(line) as Line).ev === killAt) kill();
    },
  });
  const lines = result.lines.map((l) => JSON.parse(l) as Line);
  if (killAt !== undefined) expect(result.signal, result.stderr).toBe("SIGKILL");
  else expect(result.code, result.stderr).toBe(0);
  return { run: result, lines };
}

function line(lines: Line[], ev: string): Line {
  const found = lines.find((l) => l.ev === ev);
  expect(found, `no '${ev}' line in ${JSON.stringify(lines)}`).toBeDefined();
  return found!;
}

describe("held actions across SIGKILL", () => {
  it("killed after the request's write and receipt: the restart restores it once; killed after the last vote's write and receipts, before the release is stored as used: the restart handles it once; then never again", async () => {
    const { db, log } = files();
    const requested = await run("request", db, log, "written");
    const [approvalId] = line(requested.lines, "written").approvals as string[];
    expect(approvalId).toBeDefined();

    const voted = await run("last-vote", db, log, "approved-written");
    expect(line(voted.lines, "start").pending).toEqual([approvalId]);

    await expectPaidOnce(db, log, approvalId);
    await expectApprovedByAnaAndBen(log, approvalId!);
  }, 240_000);

  it("killed between a state write and its receipts (the request's, the last vote's) and after a receipt before the write that drops it: the restarts re-emit them, verifyApproval passes, the payment is handled once", async () => {
    const { db, log } = files();
    const rowsOf = (event: string, approver?: string): number =>
      fs
        .readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { event: string; details: { approver?: string } })
        .filter((row) => row.event === event && (approver === undefined || row.details.approver === approver)).length;

    const requested = await run("request-unreceipted", db, log, "written-unreceipted");
    const [approvalId] = line(requested.lines, "written-unreceipted").approvals as string[];
    expect(approvalId).toBeDefined();
    expect(fs.existsSync(log) ? rowsOf("approval.requested") : 0).toBe(0); // killed before the receipt was appended

    const ana = await run("vote-ana-receipted", db, log, "ana-receipted");
    expect(line(ana.lines, "start").pending).toEqual([approvalId]);
    expect(rowsOf("approval.requested")).toBe(1); // re-emitted at restore
    expect(rowsOf("approval.voted", "ana")).toBe(1);

    const ben = await run("vote-ben-unreceipted", db, log, "approved-unreceipted");
    expect(line(ben.lines, "approved-unreceipted").owed).toEqual(expect.arrayContaining(["approval.voted", "approval.decided"]));
    expect(rowsOf("approval.voted", "ana")).toBe(2); // her receipt was still owed in the record: appended again, identical
    expect(rowsOf("approval.voted", "ben")).toBe(0);
    expect(rowsOf("approval.decided")).toBe(0);

    await expectPaidOnce(db, log, approvalId);

    expect(rowsOf("approval.voted", "ben")).toBe(1);
    expect(rowsOf("approval.decided")).toBe(1);
    expect(rowsOf("approval.consumed")).toBe(1);
    await expectApprovedByAnaAndBen(log, approvalId!);
  }, 240_000);

  it("killed during the handling: the approval is used up and the action is not handled a second time", async () => {
    const { db, log } = files();
    const requested = await run("request", db, log, "written");
    const [approvalId] = line(requested.lines, "written").approvals as string[];
    const handling = await run("handle-stall", db, log, "handling");
    expect(line(handling.lines, "handling").approvalId).toBe(approvalId);
    const after = await run("report", db, log);
    const report = line(after.lines, "report");
    expect(report.records).toEqual([{ approvalId, status: "approved", consumed: true, votes: 2 }]);
    expect(report.paid).toEqual([]); // at most once: the run killed mid-handler was the only one
  }, 240_000);
});
