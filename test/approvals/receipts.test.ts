/**
 * Approval receipts are written ahead (issue 24 §7): stored with the record
 * they describe, appended after the write, re-emitted at restore when still
 * owed. verifyApproval counts an identical re-emission once, and never lets a
 * reused receipt id stand for another vote or decision.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { APPROVALS_KEY, InMemoryStateStore, MemoryAuditSink, type JsonObject } from "../../src/index.js";
import { JsonlAuditSink, verifyApproval } from "../../src/entries/audit.js";
import { runtimes } from "../support/runtimes.js";
import { waitUntil } from "../support/agents.js";
import { Payments, paymentsPolicy, payLarge, startedPayments } from "./fixtures.js";
import { scratch } from "../support/scratch.js";

const runtime = runtimes();
const KEY = "receipts-key";
const { tempDir } = scratch("civitas-receipts-");

interface Row {
  event: string;
  agent: string;
  details: JsonObject;
}

/** A payment held, approved by ana and ben, and handled, on a signed log; returns the log and the sink (still open). */
async function approvedAndHandled(): Promise<{ log: string; sink: JsonlAuditSink; approvalId: string; rows: () => Row[] }> {
  const dir = tempDir();
  const log = path.join(dir, "audit.jsonl");
  const sink = new JsonlAuditSink(log, { key: KEY });
  const payments = new Payments("payments");
  const rt = runtime(payments, { auditSink: sink, approvalPolicy: paymentsPolicy });
  // The request is shown once its receipt is appended (fsync'ed): waited for by event, not by turns of the loop.
  const requested = new Promise<string>((resolve) => rt.on("approval.changed", (view) => view.status === "pending" && resolve(view.approvalId)));
  await rt.start();
  const paying = payLarge(rt, 30_000);
  const approvalId = await requested;
  await rt.approvals.approve(approvalId, "ana");
  await rt.approvals.approve(approvalId, "ben");
  await paying;
  await rt.stop();
  const rows = (): Row[] =>
    fs
      .readFileSync(log, "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Row)
      .filter((row) => row.details.approvalId === approvalId);
  return { log, sink, approvalId, rows };
}

function reemit(sink: JsonlAuditSink, row: Row, details: JsonObject = row.details): Promise<unknown> {
  return sink.emit({ event: row.event, ts: new Date().toISOString(), agent: row.agent, signerId: "civitas-runtime", details });
}

describe("write-ahead approval receipts", () => {
  it("every receipt carries a receiptId and the time of its change, and none is left owed in the stored record once appended", async () => {
    const store = new InMemoryStateStore();
    const audit = new MemoryAuditSink();
    const { rt, payments } = await startedPayments(runtime, { store, auditSink: audit });
    const paying = payLarge(rt, 30_000);
    await waitUntil(() => audit.ofType("approval.requested").length === 1, "the request's receipt");
    const approvalId = audit.ofType("approval.requested")[0]!.details.approvalId as string;
    await rt.approvals.approve(approvalId, "ana");
    await rt.approvals.approve(approvalId, "ben");
    await paying;
    const receipts = audit.events.filter((e) => e.event.startsWith("approval."));
    expect(receipts.map((e) => e.event)).toEqual(["approval.requested", "approval.voted", "approval.voted", "approval.decided", "approval.consumed"]);
    for (const e of receipts) {
      expect(e.details.receiptId).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(e.details.at as string)).toBeLessThanOrEqual(Date.parse(e.ts));
    }
    expect(new Set(receipts.map((e) => e.details.receiptId)).size).toBe(receipts.length);
    await payments.checkpoint();
    const stored = (await store.get("payments"))![APPROVALS_KEY] as JsonObject[];
    expect(stored).toHaveLength(1);
    expect(stored[0]!.receipts).toBeUndefined();
  });

  it("verifyApproval counts an identical re-emission of every receipt once", async () => {
    const { log, sink, approvalId, rows } = await approvedAndHandled();
    for (const row of rows()) await reemit(sink, row);
    await sink.close();
    expect(rows()).toHaveLength(10);
    const verified = await verifyApproval(log, approvalId, { key: KEY });
    expect(verified.failures).toEqual([]);
    expect(verified).toMatchObject({ status: "verified", decision: "approved", decidedBy: "ben", handled: true });
    expect(verified.votes.map((v) => v.approver)).toEqual(["ana", "ben"]);
  });

  it("a row reusing a vote's receiptId with another vote is a failure, not a second vote nor an ignored one", async () => {
    const { log, sink, approvalId, rows } = await approvedAndHandled();
    const ana = rows().find((r) => r.event === "approval.voted" && r.details.approver === "ana")!;
    await reemit(sink, ana, { ...ana.details, vote: "deny" });
    await sink.close();
    const verified = await verifyApproval(log, approvalId, { key: KEY });
    expect(verified.status).toBe("failed");
    expect(verified.failures.join("\n")).toMatch(/reuses receipt id .* with other content/);
  });

  it.each([
    { name: "a row reusing the decision's receiptId with another decider is a failure", change: { decidedBy: "mallory" }, failure: /approval\.decided reuses receipt id/ },
    { name: "a second decision under a fresh receiptId is still a second decision", change: { receiptId: "01900000-0000-7000-8000-000000000000" }, failure: /decided a second time/ },
  ])("$name", async ({ change, failure }) => {
    const { log, sink, approvalId, rows } = await approvedAndHandled();
    const decided = rows().find((r) => r.event === "approval.decided")!;
    await reemit(sink, decided, { ...decided.details, ...change });
    await sink.close();
    const verified = await verifyApproval(log, approvalId, { key: KEY });
    expect(verified.status).toBe("failed");
    expect(verified.failures.join("\n")).toMatch(failure);
  });

  it("a vote whose recorded time is later than its row is a failure", async () => {
    const { log, sink, approvalId, rows } = await approvedAndHandled();
    const before = rows().length;
    await sink.close();
    // Rewrite nothing (rows are signed); append a fresh vote row claiming a future time instead.
    const again = new JsonlAuditSink(log, { key: KEY });
    const ana = rows().find((r) => r.event === "approval.voted" && r.details.approver === "ana")!;
    await reemit(again, ana, { ...ana.details, receiptId: "01900000-0000-7000-8000-000000000001", approver: "cy", at: "2999-01-01T00:00:00.000Z" });
    await again.close();
    expect(rows()).toHaveLength(before + 1);
    const verified = await verifyApproval(log, approvalId, { key: KEY });
    expect(verified.status).toBe("failed");
    expect(verified.failures.join("\n")).toMatch(/is not a time before it was recorded/);
  });
});
