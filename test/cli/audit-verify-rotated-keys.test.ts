/**
 * civitas audit verify on a rotated log: several keys are either all used or refused
 * as a usage error, never silently reduced to the last one.
 * 
 * Each test pins a defect found by the review of the signed JSONL audit log,
 * its offline tools and the CLI (these tests were in test/review/audit-review.test.ts).
 */
import { describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { event, KEY, OTHER_KEY, tempLogPerTest } from "../support/audit-log.js";
import { civitas, civitasBoth } from "./fixtures/run-cli.js";

describe("civitas audit verify with the keys of a rotated log", () => {
  const log = tempLogPerTest();

  // docs/cli.md: exit 1 means "a verification ran and failed: a broken chain"; exit 2 is a usage error.
  // A user with a rotated (valid) log who passes one --key per keyId gets neither an answer nor a usage
  // error: parseArgs keeps only the last --key silently, and the untouched log is reported as tampered
  // ("mac-mismatch ... the row was re-signed with another key") with exit 1.
  it(
    "civitas audit verify with several --key values does not silently drop all but the last and call a valid rotated log broken",
    async () => {
      const a = new JsonlAuditSink(log.file, { key: KEY, keyId: "2030-01" });
      await a.emit(event("agent.start", "payer"));
      await a.close();
      const b = new JsonlAuditSink(log.file, { key: OTHER_KEY, keyId: "2030-02" });
      await b.emit(event("agent.stop", "payer"));
      await b.close();
      expect((await verifyAuditLog(log.file, { keys: { "2030-01": KEY, "2030-02": OTHER_KEY } })).ok).toBe(true);

      const [text, { code, json }] = await civitasBoth(["audit", "verify", log.file, "--key", KEY, "--key", OTHER_KEY]);
      // Either verify with both keys (exit 0) or refuse the command line (exit 2) — never "FAILED".
      expect([0, 2], `stdout: ${text.stdout}\nstderr: ${text.stderr}`).toContain(text.code);
      expect(text.stdout).not.toContain("FAILED");
      expect([0, 2]).toContain(code);
      expect(json.reason ?? "").not.toMatch(/^mac-mismatch/);
      // and --key-for verifies the rotated log, one key per keyId
      const rotated = await civitas(["audit", "verify", log.file, "--key-for", `2030-01=${KEY}`, "--key-for", `2030-02=${OTHER_KEY}`]);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toContain("2 rows verified");
    },
    60_000,
  );
});
