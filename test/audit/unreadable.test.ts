// The audit functions on a directory, a missing file or a path through a file
// reject with AUDIT_UNREADABLE, the file-system error as cause (issue 11, section 5).
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditUnreadableError } from "../../src/audit/audit-errors.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { repairAuditLog } from "../../src/audit/repair-audit-log.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { CivitasError } from "../../src/index.js";
import { event, KEY, tempDir, writeLog } from "../support/audit-log.js";

function expectUnreadable(error: unknown, file: string, reason: string): void {
  expect(error).toBeInstanceOf(AuditUnreadableError);
  expect(error).toBeInstanceOf(CivitasError);
  const e = error as AuditUnreadableError;
  expect(e.name).toBe("AuditUnreadableError");
  expect(e.code).toBe("AUDIT_UNREADABLE");
  expect(e.path).toBe(file);
  expect(e.reason).toBe(reason);
  expect(e.message).toContain(file);
  expect((e.cause as NodeJS.ErrnoException).code).toBe(reason);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

describe("audit functions on a path they cannot read", () => {
  let dir: string;
  let cleanup: () => void;
  let notAFile: string;
  let missing: string;
  let throughAFile: string;

  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    notAFile = path.join(dir, "logs");
    fs.mkdirSync(notAFile);
    missing = path.join(dir, "missing.jsonl");
    const plain = path.join(dir, "plain.txt");
    fs.writeFileSync(plain, "not a directory");
    throughAFile = path.join(plain, "audit.jsonl");
  });
  afterEach(() => cleanup());

  const readers: [string, (file: string) => Promise<unknown>][] = [
    ["verifyAuditLog", (file) => verifyAuditLog(file, { key: KEY })],
    ["verifySuspension", (file) => verifySuspension(file, "payer", { key: KEY })],
    ["repairAuditLog", (file) => repairAuditLog(file)],
  ];

  it.each(readers)("%s rejects AUDIT_UNREADABLE for a directory, a missing file and a path through a file", async (_name, read) => {
    expectUnreadable(await rejection(read(notAFile)), notAFile, "EISDIR");
    expectUnreadable(await rejection(read(missing)), missing, "ENOENT");
    expectUnreadable(await rejection(read(throughAFile)), throughAFile, "ENOTDIR");
  });

  it("new JsonlAuditSink throws AUDIT_UNREADABLE for a directory, and for a path through a file", () => {
    let caught: unknown;
    try {
      new JsonlAuditSink(notAFile, { key: KEY });
    } catch (error) {
      caught = error;
    }
    expectUnreadable(caught, notAFile, "EISDIR");
    caught = undefined;
    try {
      new JsonlAuditSink(throughAFile, { key: KEY });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AuditUnreadableError);
    expect((caught as AuditUnreadableError).code).toBe("AUDIT_UNREADABLE");
    expect(["ENOTDIR", "EEXIST"]).toContain((caught as AuditUnreadableError).reason);
  });

  it("a sink's emit rejects AUDIT_UNREADABLE when its file cannot be opened, and appends once it can", async () => {
    const file = path.join(dir, "audit.jsonl");
    const sink = new JsonlAuditSink(file, { key: KEY });
    fs.mkdirSync(file); // the path became a directory after the sink was opened
    expectUnreadable(await rejection(sink.emit(event("agent.start", "payer"))), file, "EISDIR");
    fs.rmdirSync(file);
    await sink.emit(event("agent.start", "payer"));
    await sink.close();
    expect(await verifyAuditLog(file, { key: KEY })).toEqual({ ok: true, rows: 1, tornTail: false });
  });

  it("a readable log is unaffected: verify and repair still answer", async () => {
    const file = path.join(dir, "ok.jsonl");
    await writeLog(file, [event("agent.start", "payer")]);
    expect((await verifyAuditLog(file, { key: KEY })).ok).toBe(true);
    expect(await repairAuditLog(file)).toEqual({ repaired: false, removedBytes: 0 });
  });
});
