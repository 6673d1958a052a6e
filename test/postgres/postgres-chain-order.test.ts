import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { civitas, civitasJson } from "../cli/fixtures/run-cli.js";
import { appendFromProcesses } from "./support/audit-appenders.js";
import { PG_URL, testSchemaPerFile } from "../support/postgres.js";
import { event, KEY, resume, suspend, tempDir } from "../support/audit-log.js";

// Issue 21, item 1: the chain is read back in numeric seq order (a text sort gave 0, 1, 10, 100, …
// and paging by seq then skipped and repeated rows), through every reader.

const schema = testSchemaPerFile("order");

describe("the PostgreSQL audit chain read in seq order", () => {
  it("a 2,100-row chain from two processes at once reads back whole and in order: rows(), the settlement lookup, verifySuspension, civitas audit export + verify", async () => {
    const table = schema.table("chain");
    const sink = new PostgresAuditSink({ connectionString: PG_URL, key: KEY, table });
    // The decision sits at seq 1, far before the rows the other processes add (the lookup missed it past ~2,000 rows).
    await sink.emit(suspend("payer", "s-1"));
    await sink.emit(resume("payer", "s-1", "alice"));
    const perWriter = 1049;
    const acked = await appendFromProcesses(table, ["w1", "w2"], perWriter, 120_000);
    const rows = await sink.rows();
    expect(rows.length).toBe(2 + 2 * perWriter);
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, i) => i));
    for (const [id, seq] of acked) expect(`${rows[seq]?.signerId}:${(rows[seq]?.details as { n: number }).n}`).toBe(id);
    expect(await verifyAuditLog(rows, { key: KEY })).toEqual({ ok: true, rows: rows.length, tornTail: false });
    expect(await sink.recordedSettlement("payer", "s-1")).toMatchObject({ event: "agent.resume", details: { approver: "alice" } });
    expect(await verifySuspension(rows, "payer", { key: KEY })).toMatchObject({ status: "verified" });
    await sink.close();

    const { dir, cleanup } = tempDir();
    try {
      const out = path.join(dir, "export.jsonl");
      expect(await civitasJson(["audit", "export", "--store", PG_URL, "--table", table, "--out", out])).toMatchObject({ code: 0, json: { rows: rows.length } });
      const lines = fs.readFileSync(out, "utf8").split("\n").slice(0, -1);
      expect(lines.map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual(rows.map((_, i) => i));
      const verified = await civitas(["audit", "verify", out, "--key", KEY]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    } finally {
      cleanup();
    }
  }, 180_000);

  it("a lookup reads only what was appended since the last one, and finds a decision another writer appended meanwhile", async () => {
    const table = schema.table("lookups");
    const reader = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    const other = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    await reader.emit(suspend("payer", "s-1"));
    await reader.emit(suspend("payee", "s-2"));
    expect(await reader.recordedSettlement("payer", "s-1")).toBeUndefined();
    await other.emit(resume("payer", "s-1", "alice"));
    for (let i = 0; i < 1_500; i++) await other.emit(event("agent.checkpoint", "payee", { n: i }));
    await other.emit(resume("payee", "s-2", "carol"));
    expect(await reader.recordedSettlement("payer", "s-1")).toMatchObject({ event: "agent.resume", details: { approver: "alice" } });
    expect(await reader.recordedSettlement("payee", "s-2")).toMatchObject({ event: "agent.resume", details: { approver: "carol" } });
    // Settled twice by a later writer: the first settlement stays the decision.
    await other.emit(resume("payer", "s-1", "mallory"));
    expect(await reader.recordedSettlement("payer", "s-1")).toMatchObject({ details: { approver: "alice" } });
    await Promise.all([reader.close(), other.close()]);
  }, 60_000);

  it("property: what two sinks append, interleaved, reads back equal to what was appended, in seq order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.boolean(), fc.string({ maxLength: 6 })), { minLength: 1, maxLength: 40, size: "max" }), async (appends) => {
        const table = schema.table("prop");
        const sinks = [new PostgresAuditSink({ pool: schema.pool, key: KEY, table }), new PostgresAuditSink({ pool: schema.pool, key: KEY, table })];
        try {
          const written = await Promise.all(
            appends.map(async ([second, text], n) => {
              const e = event("note", `agent-${n % 3}`, { n, text });
              return { anchor: await sinks[second ? 1 : 0]!.emit(e), e };
            }),
          );
          written.sort((a, b) => a.anchor.seq - b.anchor.seq);
          const rows = await sinks[0]!.rows();
          expect(rows.map((row) => row.seq)).toEqual(written.map((w) => w.anchor.seq));
          expect(rows.map((row) => row.seq)).toEqual(rows.map((_, i) => i));
          expect(rows.map((row) => ({ event: row.event, agent: row.agent, details: row.details, hash: row.hash }))).toEqual(
            written.map((w) => ({ event: w.e.event, agent: w.e.agent, details: w.e.details, hash: w.anchor.hash })),
          );
          expect((await verifyAuditLog(rows, { key: KEY })).ok).toBe(true);
        } finally {
          await Promise.all(sinks.map((sink) => sink.close()));
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
