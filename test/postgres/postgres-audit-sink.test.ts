import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { encodeRow } from "../../src/audit/audit-row.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { PG_URL, testSchemaPerFile, UNREACHABLE_URL } from "../support/postgres.js";
import { event, KEY, OTHER_KEY, resume, sampleEvents, suspend, tempDir } from "../support/audit-log.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { appendFromProcesses } from "./support/audit-appenders.js";

const schema = testSchemaPerFile("audit");

/** The chain as `civitas audit export` writes it: each stored line and a newline. */
async function exported(table: string): Promise<Buffer> {
  const [s, t] = table.split(".");
  const result = await schema.pool.query<{ line: string }>(`SELECT line FROM "${s}"."${t}" ORDER BY seq`);
  return Buffer.from(result.rows.map((r) => `${r.line}\n`).join(""), "utf8");
}

describe("PostgresAuditSink", () => {
  it("writes byte for byte the rows a JsonlAuditSink writes for the same events", async () => {
    const table = schema.table("audit");
    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    const { dir, cleanup } = tempDir();
    const file = path.join(dir, "audit.jsonl");
    const jsonl = new JsonlAuditSink(file, { key: KEY });
    const anchors = [];
    for (const e of sampleEvents()) {
      anchors.push(await sink.emit(e));
      await jsonl.emit(e);
    }
    await jsonl.close();
    expect(await exported(table)).toEqual(fs.readFileSync(file));
    expect(anchors.map((a) => a.seq)).toEqual([0, 1, 2, 3, 4]);
    const rows = await sink.rows();
    expect(rows.map((r) => r.hash)).toEqual(anchors.map((a) => a.hash));
    expect(Buffer.concat(rows.map(encodeRow))).toEqual(fs.readFileSync(file));
    await sink.close();
    cleanup();
  });

  it("verifyAuditLog and verifySuspension take the sink's rows directly", async () => {
    const table = schema.table("audit");
    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    for (const e of [event("agent.start", "payer"), suspend("payer", "s-1"), resume("payer", "s-1"), suspend("payer", "s-2")]) await sink.emit(e);
    const rows = await sink.rows();
    expect(await verifyAuditLog(rows, { key: KEY })).toEqual({ ok: true, rows: 4, tornTail: false });
    const v = await verifySuspension(rows, "payer", { key: KEY });
    expect(v.status).toBe("pending");
    expect(v.suspensions.map((s) => [s.suspensionId, s.status])).toEqual([
      ["s-1", "verified"],
      ["s-2", "pending"],
    ]);
    const edited = rows.map((r, i) => (i === 1 ? { ...r, details: { ...r.details, reason: "other" } } : r));
    expect((await verifyAuditLog(edited, { key: KEY })).brokenAt).toBe(1);
    expect((await verifyAuditLog(rows.slice(0, 1).concat(rows.slice(2)), { key: KEY })).ok).toBe(false);
    await sink.close();
  });

  it("continues one chain across sinks, and refuses to continue one signed under its keyId with another key", async () => {
    const table = schema.table("audit");
    const first = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    await first.emit(event("a", "x"));
    const second = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    expect((await second.emit(event("b", "x"))).seq).toBe(1);
    const wrong = new PostgresAuditSink({ pool: schema.pool, key: OTHER_KEY, table });
    await expect(wrong.emit(event("c", "x"))).rejects.toMatchObject({ code: "AUDIT_CORRUPT" });
    const rotated = new PostgresAuditSink({ pool: schema.pool, key: OTHER_KEY, keyId: "2031", table });
    expect((await rotated.emit(event("d", "x"))).seq).toBe(2);
    expect(await verifyAuditLog(await first.rows(), { key: KEY, keys: { "2031": OTHER_KEY } })).toMatchObject({ ok: true, rows: 3 });
    for (const s of [first, second, wrong, rotated]) await s.close();
  });

  it("rejects an emit with STORE_UNAVAILABLE within the connection timeout when the server is unreachable, and after close with AUDIT_SINK_CLOSED", async () => {
    const sink = new PostgresAuditSink({ connectionString: UNREACHABLE_URL, key: KEY, connectionTimeoutMs: 1000 });
    const started = Date.now();
    await expect(sink.emit(event("a", "x"))).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
    expect(Date.now() - started).toBeLessThan(3000);
    await sink.close();
    await expect(sink.emit(event("a", "x"))).rejects.toMatchObject({ code: "AUDIT_SINK_CLOSED" });
  });

  it("refuses non-JSON details before writing anything, and needs a key", async () => {
    const table = schema.table("audit");
    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table });
    await expect(sink.emit({ ...event("a", "x"), details: { f: () => 1 } as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await sink.emit(event("a", "x"));
    expect((await sink.rows()).length).toBe(1);
    const saved = process.env.CIVITAS_AUDIT_KEY;
    delete process.env.CIVITAS_AUDIT_KEY;
    try {
      expect(() => new PostgresAuditSink({ pool: schema.pool, table })).toThrow(expect.objectContaining({ code: "AUDIT_KEY_MISSING" }) as Error);
    } finally {
      if (saved !== undefined) process.env.CIVITAS_AUDIT_KEY = saved;
    }
    await sink.close();
  });

  it("several processes appending at once make one chain: the export verifies, holds every resolved emit, and any single-byte change is detected", async () => {
    const table = schema.table("shared");
    const writers = ["w1", "w2", "w3", "w4"];
    const perWriter = 40;
    const acked = await appendFromProcesses(table, writers, perWriter, 60_000);
    expect(acked.size).toBe(writers.length * perWriter);
    const bytes = await exported(table);
    expect(await verifyAuditLog(bytes, { key: KEY })).toEqual({ ok: true, rows: writers.length * perWriter, tornTail: false });
    // Every resolved emit is in the log, at the seq its emit resolved with.
    const lines = bytes.toString("utf8").split("\n").slice(0, -1);
    for (const [id, seq] of acked) {
      const row = JSON.parse(lines[seq] ?? "null") as { signerId: string; details: { n: number } };
      expect(`${row.signerId}:${row.details.n}`).toBe(id);
    }
    // A single-byte change anywhere in any row is detected.
    const { dir, cleanup } = tempDir();
    try {
      const file = path.join(dir, "export.jsonl");
      let offset = 0;
      for (const [i, line] of lines.entries()) {
        const length = Buffer.byteLength(line, "utf8");
        for (const at of [0, (i * 131) % length, length - 1]) {
          const copy = Buffer.from(bytes);
          copy[offset + at] = (copy[offset + at] ?? 0) ^ 0x01;
          fs.writeFileSync(file, copy);
          expect((await verifyAuditLog(file, { key: KEY })).ok, `row ${i}, byte ${at}`).toBe(false);
        }
        offset += length + 1;
      }
    } finally {
      cleanup();
    }
  }, 90_000);

  it("never ends a pool it was given", async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const sink = new PostgresAuditSink({ pool, key: KEY, table: schema.table("audit") });
    await sink.emit(event("a", "x"));
    await sink.close();
    expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });
});
