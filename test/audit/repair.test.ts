import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditCorruptError } from "../../src/audit/audit-errors.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { repairAuditLog } from "../../src/audit/repair-audit-log.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { event, KEY, lines, sampleEvents, tempDir, writeLines, writeLog } from "../support/audit-log.js";

describe("torn tails and repairAuditLog", () => {
  let dir: string;
  let cleanup: () => void;
  let file: string;
  let before: Buffer;

  beforeEach(async () => {
    ({ dir, cleanup } = tempDir());
    file = path.join(dir, "audit.jsonl");
    await writeLog(file, sampleEvents());
    before = fs.readFileSync(file);
  });
  afterEach(() => cleanup());

  /** What a crash mid-append leaves: the log before it plus the first `n` bytes of the next row. */
  async function crashMidAppend(n: number): Promise<void> {
    const scratch = path.join(dir, "scratch.jsonl");
    fs.copyFileSync(file, scratch);
    const sink = new JsonlAuditSink(scratch, { key: KEY });
    await sink.emit(event("agent.stop", "payer", { reason: "the row that was being written" }));
    await sink.close();
    const full = fs.readFileSync(scratch);
    fs.writeFileSync(file, full.subarray(0, before.length + n));
  }

  for (const n of [1, 10, 57, -1]) {
    it(`a torn tail of ${n === -1 ? "a whole row without its newline" : `${n} bytes`} verifies, and repair restores the log byte for byte`, async () => {
      await crashMidAppend(n === -1 ? 0 : n);
      if (n === -1) {
        // every byte of the row except its newline
        const scratch = fs.readFileSync(path.join(dir, "scratch.jsonl"));
        fs.writeFileSync(file, scratch.subarray(0, scratch.length - 1));
      }
      const torn = fs.readFileSync(file);
      expect(torn.length).toBeGreaterThan(before.length);
      expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 5, tornTail: true });
      const result = await repairAuditLog(file);
      expect(result).toEqual({ repaired: true, removedBytes: torn.length - before.length });
      expect(fs.readFileSync(file).equals(before)).toBe(true);
      expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 5, tornTail: false });
      // and the sink can continue it afterwards
      const sink = new JsonlAuditSink(file, { key: KEY });
      await sink.emit(event("agent.start", "payer"));
      await sink.close();
      expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 6, tornTail: false });
    });
  }

  it("is a no-op on an intact log, and on an empty one", async () => {
    expect(await repairAuditLog(file)).toEqual({ repaired: false, removedBytes: 0 });
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    fs.writeFileSync(file, "");
    expect(await repairAuditLog(file)).toEqual({ repaired: false, removedBytes: 0 });
  });

  it("refuses a hole in the middle (a row cut short with rows after it) and changes nothing", async () => {
    const all = lines(file);
    const damaged = [...all.slice(0, 2), (all[2] ?? "").slice(0, 30), ...all.slice(3)];
    writeLines(file, damaged);
    const bytes = fs.readFileSync(file);
    await expect(repairAuditLog(file)).rejects.toBeInstanceOf(AuditCorruptError);
    await expect(repairAuditLog(file)).rejects.toMatchObject({ code: "AUDIT_CORRUPT", index: 2, name: "AuditCorruptError" });
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
  });

  it("refuses a missing row in the middle even with a torn tail after it", async () => {
    const all = lines(file);
    fs.writeFileSync(file, `${[...all.slice(0, 1), ...all.slice(2)].join("\n")}\n{"agent":"pa`);
    const bytes = fs.readFileSync(file);
    await expect(repairAuditLog(file)).rejects.toMatchObject({ code: "AUDIT_CORRUPT", index: 1 });
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
  });

  it("refuses garbage at the end that is not a torn row", async () => {
    fs.appendFileSync(file, "hello");
    await expect(repairAuditLog(file)).rejects.toMatchObject({ code: "AUDIT_CORRUPT" });
    expect(fs.readFileSync(file).length).toBe(before.length + 5);
  });

  it("rejects when the file does not exist", async () => {
    await expect(repairAuditLog(path.join(dir, "nope.jsonl"))).rejects.toMatchObject({ name: "AuditUnreadableError", code: "AUDIT_UNREADABLE", cause: { code: "ENOENT" } });
  });
});
