/**
 * A JsonlAuditSink acknowledges only rows its log keeps and its verifier accepts:
 * a second writer on the same file and a non-string signerId are refused.
 * 
 * Each test pins a defect found by the review of the signed JSONL audit log,
 * its offline tools and the CLI (these tests were in test/review/audit-review.test.ts).
 */
import { describe, expect, it } from "vitest";
import type { AuditRow } from "../../src/audit/audit-row.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { event, KEY, lines, suspend, tempLogPerTest } from "../support/audit-log.js";

describe("a JsonlAuditSink acknowledges only rows its log keeps", () => {
  const log = tempLogPerTest();

  // docs/audit.md: "emit resolves only after the row has been written and fsync'ed" and "Two sinks
  // (or two processes) appending to the same file will fork the chain" — i.e. the damage is visible to
  // verifyAuditLog. The sink writes at its own remembered offset (not O_APPEND, no size check), so a
  // second writer overwrites rows the first one already acknowledged and the shorter log still verifies.
  it("a second sink on the same file is refused (AUDIT_CORRUPT, nothing written) instead of overwriting an acknowledged row", async () => {
    const first = new JsonlAuditSink(log.file, { key: KEY });
    const second = new JsonlAuditSink(log.file, { key: KEY });
    let refused: unknown;
    try {
      await first.emit(suspend("payer", "s-1", "payment over 10k")); // acknowledged: durable receipt of a pause
      await second.emit(event("agent.start", "fetcher", { note: "a row from a second writer, somewhat longer than the first one".repeat(3) })).catch((error: unknown) => {
        refused = error;
      });
    } finally {
      await first.close();
      await second.close();
    }
    expect(refused).toMatchObject({ code: "AUDIT_CORRUPT" });
    expect((refused as Error).message).toContain("another writer");
    const events = lines(log.file).map((l) => (JSON.parse(l) as AuditRow).event);
    expect(events).toEqual(["agent.suspend"]);
    expect(await verifyAuditLog(log.file, { key: KEY })).toMatchObject({ ok: true, rows: 1 });
  });

  // The sink validates keyId but not signerId; a non-string signerId (e.g. from an untyped config) is
  // written as-is, the emit resolves, and the row is one its own verifier calls malformed — after which
  // the sink refuses to reopen the file. docs/audit.md: the row's signerId is a string (SPEC §11.13).
  it("never acknowledges a row that verifyAuditLog rejects: a non-string signerId is refused up front", async () => {
    let constructed: JsonlAuditSink | undefined;
    let refused: unknown;
    try {
      constructed = new JsonlAuditSink(log.file, { key: KEY, signerId: 42 as unknown as string });
      await constructed.emit(event("agent.start", "payer"));
    } catch (error) {
      refused = error;
    } finally {
      await constructed?.close();
    }
    if (refused === undefined) {
      const result = await verifyAuditLog(log.file, { key: KEY });
      expect(result, "the sink acknowledged a row its own verifier rejects").toMatchObject({ ok: true, rows: 1 });
    } else {
      expect(refused).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
  });
});
