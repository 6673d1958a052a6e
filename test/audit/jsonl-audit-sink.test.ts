import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { canonicalJson, GENESIS_PREV, hashRow, macOf, type AuditRow } from "../../src/audit/audit-row.js";
import { AuditCorruptError, AuditKeyMissingError, AuditSinkClosedError } from "../../src/audit/audit-errors.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { event, KEY, lines, OTHER_KEY, sampleEvents, tempDir, writeLog } from "../support/audit-log.js";

describe("JsonlAuditSink", () => {
  let dir: string;
  let cleanup: () => void;
  let file: string;
  const savedEnv = process.env.CIVITAS_AUDIT_KEY;

  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    file = path.join(dir, "nested", "deeper", "audit.jsonl");
    delete process.env.CIVITAS_AUDIT_KEY;
  });
  afterEach(() => {
    cleanup();
    if (savedEnv === undefined) delete process.env.CIVITAS_AUDIT_KEY;
    else process.env.CIVITAS_AUDIT_KEY = savedEnv;
  });

  it("writes one canonical row per line: seq from 0, prev chained from 64 zeros, hash and HMAC", async () => {
    await writeLog(file, sampleEvents());
    const rows = lines(file).map((l) => JSON.parse(l) as AuditRow);
    expect(rows).toHaveLength(5);
    let prev = GENESIS_PREV;
    rows.forEach((row, i) => {
      expect(Object.keys(row).sort()).toEqual(["agent", "details", "event", "hash", "keyId", "mac", "prev", "seq", "signerId", "ts"]);
      expect(row.seq).toBe(i);
      expect(row.prev).toBe(prev);
      expect(row.keyId).toBe("default");
      expect(row.signerId).toBe("test-runtime");
      expect(row.hash).toBe(hashRow(row));
      expect(row.mac).toBe(macOf(row.hash, Buffer.from(KEY)));
      expect(lines(file)[i]).toBe(canonicalJson(row as never));
      prev = row.hash;
    });
    expect(rows[1]?.details).toMatchObject({ suspensionId: "s-1", durable: true });
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 5, tornTail: false });
  });

  it("hashes exactly the canonical JSON of the row without hash and mac", () => {
    const row = { seq: 0, ts: "t", event: "e", agent: "a", signerId: "s", keyId: "k", details: { b: 1, a: [true, null] }, prev: GENESIS_PREV };
    const expected = `{"agent":"a","details":{"a":[true,null],"b":1},"event":"e","keyId":"k","prev":"${GENESIS_PREV}","seq":0,"signerId":"s","ts":"t"}`;
    expect(canonicalJson(row)).toBe(expected);
    // sha256 of that string, computed independently
    expect(hashRow(row)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashRow({ ...row, prev: "1".repeat(64) })).not.toBe(hashRow(row));
  });

  it("takes the key from CIVITAS_AUDIT_KEY, and refuses to start without any key", async () => {
    expect(() => new JsonlAuditSink(file)).toThrow(AuditKeyMissingError);
    expect(() => new JsonlAuditSink(file, { key: "" })).toThrow(/CIVITAS_AUDIT_KEY/);
    try {
      new JsonlAuditSink(file);
    } catch (error) {
      expect(error).toMatchObject({ name: "AuditKeyMissingError", code: "AUDIT_KEY_MISSING" });
    }
    process.env.CIVITAS_AUDIT_KEY = OTHER_KEY;
    const sink = new JsonlAuditSink(file, { keyId: "2030-01", signerId: "node-7" });
    await sink.emit(event("agent.start", "a"));
    await sink.close();
    const row = JSON.parse(lines(file)[0] ?? "") as AuditRow;
    expect(row).toMatchObject({ keyId: "2030-01", signerId: "node-7" });
    expect((await verifyAuditLog(file, { key: OTHER_KEY })).ok).toBe(true);
    expect((await verifyAuditLog(file, { key: KEY })).ok).toBe(false);
  });

  it("continues an existing log: seq and prev pick up from its last row", async () => {
    await writeLog(file, sampleEvents().slice(0, 2));
    await writeLog(file, sampleEvents().slice(2));
    const rows = lines(file).map((l) => JSON.parse(l) as AuditRow);
    expect(rows.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(rows[2]?.prev).toBe(rows[1]?.hash);
    expect(await verifyAuditLog(file, { key: KEY })).toMatchObject({ ok: true, rows: 5 });
  });

  it("continues a log across a key rotation (new keyId), verifiable with keys by keyId", async () => {
    await writeLog(file, sampleEvents().slice(0, 2));
    const rotated = new JsonlAuditSink(file, { key: OTHER_KEY, keyId: "k2" });
    await rotated.emit(event("agent.start", "x"));
    await rotated.close();
    expect(await verifyAuditLog(file, { keys: { default: KEY, k2: OTHER_KEY } })).toMatchObject({ ok: true, rows: 3 });
    const onlyOld = await verifyAuditLog(file, { keys: { default: KEY } });
    expect(onlyOld).toMatchObject({ ok: false, brokenAt: 2 });
    expect(onlyOld.reason).toMatch(/^unknown-key:/);
  });

  it("refuses to continue a log under the same keyId with a different key", async () => {
    await writeLog(file, sampleEvents().slice(0, 2));
    expect(() => new JsonlAuditSink(file, { key: OTHER_KEY })).toThrow(/different key/);
  });

  it("refuses to open a log ending in a torn line, and says to run repairAuditLog", async () => {
    await writeLog(file, sampleEvents());
    fs.appendFileSync(file, '{"agent":"payer","det');
    let caught: unknown;
    try {
      new JsonlAuditSink(file, { key: KEY });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AuditCorruptError);
    expect(caught).toMatchObject({ name: "AuditCorruptError", code: "AUDIT_CORRUPT", tornTail: true });
    expect((caught as Error).message).toMatch(/repairAuditLog/);
  });

  it("refuses to open a log whose last row is damaged", async () => {
    await writeLog(file, sampleEvents());
    const text = fs.readFileSync(file, "utf8");
    fs.writeFileSync(file, text.replace(/"agent":"auditor","details":\{"reason":"done"\}/, '"agent":"auditor","details":{"reason":"dune"}'));
    expect(() => new JsonlAuditSink(file, { key: KEY })).toThrow(/does not match its hash/);
  });

  it("serializes concurrent emits: no interleaving, an unbroken chain, rows in call order", async () => {
    const sink = new JsonlAuditSink(file, { key: KEY });
    const events = Array.from({ length: 200 }, (_, i) => event("tick", `agent-${i % 7}`, { i, pad: "x".repeat(i * 13) }));
    await Promise.all(events.map((e) => sink.emit(e)));
    await sink.close();
    const rows = lines(file).map((l) => JSON.parse(l) as AuditRow);
    expect(rows.map((r) => r.details.i)).toEqual(events.map((_, i) => i));
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 200, tornTail: false });
  });

  it("close is idempotent; emits after close reject with AUDIT_SINK_CLOSED; pending emits finish first", async () => {
    const sink = new JsonlAuditSink(file, { key: KEY });
    const pending = sink.emit(event("agent.start", "a"));
    const first = sink.close();
    expect(sink.close()).toBe(first);
    await pending;
    await first;
    await expect(sink.emit(event("agent.stop", "a"))).rejects.toBeInstanceOf(AuditSinkClosedError);
    await expect(sink.emit(event("agent.stop", "a"))).rejects.toMatchObject({ name: "AuditSinkClosedError", code: "AUDIT_SINK_CLOSED" });
    expect(lines(file)).toHaveLength(1);
  });

  it("rejects details that are not plain JSON without breaking the chain", async () => {
    const sink = new JsonlAuditSink(file, { key: KEY });
    await sink.emit(event("a", "x"));
    await expect(sink.emit(event("b", "x", { bad: Number.NaN }))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await sink.emit(event("c", "x"));
    await sink.close();
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 2, tornTail: false });
  });

  it("rejects an emit whose write fails half-way and rolls it back, so later emits keep the chain intact", async () => {
    const sink = new JsonlAuditSink(file, { key: KEY });
    await sink.emit(event("a", "x"));
    const probe = await fs.promises.open(path.join(dir, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as { write: (...args: unknown[]) => Promise<{ bytesWritten: number }> };
    await probe.close();
    const original = proto.write;
    const spy = vi.spyOn(proto, "write").mockImplementationOnce(async function (this: unknown, ...args: unknown[]) {
      const [buffer, offset, length, position] = args as [Buffer, number, number, number];
      await original.call(this, buffer, offset, Math.floor(length / 2), position);
      throw new Error("EIO: simulated write failure");
    });
    try {
      await expect(sink.emit(event("b", "x"))).rejects.toThrow(/simulated write failure/);
    } finally {
      spy.mockRestore();
    }
    await sink.emit(event("c", "x"));
    await sink.close();
    expect(lines(file).map((l) => (JSON.parse(l) as AuditRow).event)).toEqual(["a", "c"]);
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 2, tornTail: false });
  });

  it("rejects malformed events (non-string fields, non-object details) without writing them", async () => {
    const sink = new JsonlAuditSink(file, { key: KEY });
    const good = event("a", "x");
    await expect(sink.emit({ ...good, agent: 42 } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "agent" });
    await expect(sink.emit({ ...good, details: 7 } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "details" });
    await expect(sink.emit({ ...good, details: [] } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "details" });
    await sink.emit(good);
    await sink.close();
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 1, tornTail: false });
  });

  it("recovers when the file cannot be opened at first (the next emit tries again)", async () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const sink = new JsonlAuditSink(file, { key: KEY });
    fs.mkdirSync(file); // a directory where the file should be: open fails
    await expect(sink.emit(event("a", "x"))).rejects.toMatchObject({ code: "AUDIT_UNREADABLE", reason: "EISDIR", cause: { code: "EISDIR" } });
    fs.rmdirSync(file);
    await sink.emit(event("b", "x"));
    await sink.close();
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 1, tornTail: false });
  });
});
