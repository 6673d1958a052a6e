import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { Runtime } from "../../src/index.js";
import { silentLogger } from "../../src/index.js";
import { Echo } from "../runtime/fixtures.js";
import { KEY, lines, tempDir } from "./fixtures/log.js";

describe("JsonlAuditSink as a Runtime's auditSink", () => {
  let dir: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
  });
  afterEach(() => cleanup());

  it("records suspend and resume receipts that verifySuspension proves, offline", async () => {
    const file = path.join(dir, "audit", "audit.jsonl");
    const audit = new JsonlAuditSink(file, { key: KEY });
    const runtime = new Runtime({ root: new Echo("payer"), auditSink: audit, logger: silentLogger });
    await runtime.start();
    await runtime.suspend("payer", "large payment");
    // The suspend receipt is on disk before suspend resolves.
    expect(lines(file).some((l) => l.includes('"event":"agent.suspend"'))).toBe(true);
    expect((await verifySuspension(file, "payer", { key: KEY })).status).toBe("pending");
    await runtime.resume("payer", "alice");
    await runtime.suspend("payer", "second look");
    await runtime.resume("payer", "bob");
    await runtime.stop();
    await audit.close();

    expect((await verifyAuditLog(file, { key: KEY })).ok).toBe(true);
    const result = await verifySuspension(file, "payer", { key: KEY });
    expect(result.failures).toEqual([]);
    expect(result.status).toBe("verified");
    expect(result.suspensions.map((s) => [s.reason, s.approver, s.status])).toEqual([
      ["large payment", "alice", "verified"],
      ["second look", "bob", "verified"],
    ]);
  });
});
