import { describe, expect, it } from "vitest";
import * as audit from "civitas-ts/audit";
import { CivitasError } from "../../src/errors/civitas-error.js";

describe("civitas-ts/audit entry", () => {
  it("exports exactly the public API", () => {
    expect(Object.keys(audit).sort()).toEqual([
      "AUDIT_ANCHOR_KEY",
      "AuditCorruptError",
      "AuditKeyMissingError",
      "AuditSinkClosedError",
      "AuditUnreadableError",
      "JsonlAuditSink",
      "repairAuditLog",
      "verifyApproval",
      "verifyAuditLog",
      "verifySuspension",
    ]);
  });

  it("each audit error is a CivitasError with its class name and a stable code", () => {
    const cases: [Error & { code: string }, string, string][] = [
      [new audit.AuditKeyMissingError("a.jsonl"), "AuditKeyMissingError", "AUDIT_KEY_MISSING"],
      [new audit.AuditCorruptError("a.jsonl", "the audit log 'a.jsonl' is broken", { index: 3 }), "AuditCorruptError", "AUDIT_CORRUPT"],
      [new audit.AuditSinkClosedError("a.jsonl"), "AuditSinkClosedError", "AUDIT_SINK_CLOSED"],
      [new audit.AuditUnreadableError("a.jsonl", "read", Object.assign(new Error("EISDIR: illegal operation"), { code: "EISDIR" })), "AuditUnreadableError", "AUDIT_UNREADABLE"],
    ];
    for (const [error, name, code] of cases) {
      expect(error).toBeInstanceOf(CivitasError);
      expect(error.name).toBe(name);
      expect(error.code).toBe(code);
      expect(error.message).toContain("a.jsonl");
    }
  });
});
