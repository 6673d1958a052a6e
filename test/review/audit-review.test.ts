// Review of the signed, hash-chained JSONL audit log, its offline tools and the `civitas audit` CLI.
// Every test here asserts behaviour that docs/audit.md, docs/cli.md or SPEC §9/§11.13 promise, and
// failed on the code as reviewed.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AuditRow } from "../../src/audit/audit-row.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { verifyAuditLog } from "../../src/audit/verify-audit-log.js";
import { event, KEY, lines, OTHER_KEY, suspend, tempDir } from "../audit/fixtures/log.js";
import { civitas, civitasJson } from "../cli/fixtures/run-cli.js";

describe("audit review", () => {
  let dir: string;
  let cleanup: () => void;
  let file: string;

  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    file = path.join(dir, "audit.jsonl");
  });
  afterEach(() => cleanup());

  // docs/audit.md: "emit resolves only after the row has been written and fsync'ed" and "Two sinks
  // (or two processes) appending to the same file will fork the chain" — i.e. the damage is visible to
  // verifyAuditLog. The sink writes at its own remembered offset (not O_APPEND, no size check), so a
  // second writer overwrites rows the first one already acknowledged and the shorter log still verifies.
  it("a second sink on the same file is refused (AUDIT_CORRUPT, nothing written) instead of overwriting an acknowledged row", async () => {
    const first = new JsonlAuditSink(file, { key: KEY });
    const second = new JsonlAuditSink(file, { key: KEY });
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
    const events = lines(file).map((l) => (JSON.parse(l) as AuditRow).event);
    expect(events).toEqual(["agent.suspend"]);
    expect(await verifyAuditLog(file, { key: KEY })).toMatchObject({ ok: true, rows: 1 });
  });

  // The sink validates keyId but not signerId; a non-string signerId (e.g. from an untyped config) is
  // written as-is, the emit resolves, and the row is one its own verifier calls malformed — after which
  // the sink refuses to reopen the file. docs/audit.md: the row's signerId is a string (SPEC §11.13).
  it("never acknowledges a row that verifyAuditLog rejects: a non-string signerId is refused up front", async () => {
    let constructed: JsonlAuditSink | undefined;
    let refused: unknown;
    try {
      constructed = new JsonlAuditSink(file, { key: KEY, signerId: 42 as unknown as string });
      await constructed.emit(event("agent.start", "payer"));
    } catch (error) {
      refused = error;
    } finally {
      await constructed?.close();
    }
    if (refused === undefined) {
      const result = await verifyAuditLog(file, { key: KEY });
      expect(result, "the sink acknowledged a row its own verifier rejects").toMatchObject({ ok: true, rows: 1 });
    } else {
      expect(refused).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
  });

  // docs/cli.md: exit 1 means "a verification ran and failed: a broken chain"; exit 2 is a usage error.
  // A user with a rotated (valid) log who passes one --key per keyId gets neither an answer nor a usage
  // error: parseArgs keeps only the last --key silently, and the untouched log is reported as tampered
  // ("mac-mismatch ... the row was re-signed with another key") with exit 1.
  it(
    "civitas audit verify with several --key values does not silently drop all but the last and call a valid rotated log broken",
    async () => {
      const a = new JsonlAuditSink(file, { key: KEY, keyId: "2030-01" });
      await a.emit(event("agent.start", "payer"));
      await a.close();
      const b = new JsonlAuditSink(file, { key: OTHER_KEY, keyId: "2030-02" });
      await b.emit(event("agent.stop", "payer"));
      await b.close();
      expect((await verifyAuditLog(file, { keys: { "2030-01": KEY, "2030-02": OTHER_KEY } })).ok).toBe(true);

      const [text, { code, json }] = await Promise.all([
        civitas(["audit", "verify", file, "--key", KEY, "--key", OTHER_KEY]),
        civitasJson(["audit", "verify", file, "--key", KEY, "--key", OTHER_KEY]),
      ]);
      // Either verify with both keys (exit 0) or refuse the command line (exit 2) — never "FAILED".
      expect([0, 2], `stdout: ${text.stdout}\nstderr: ${text.stderr}`).toContain(text.code);
      expect(text.stdout).not.toContain("FAILED");
      expect([0, 2]).toContain(code);
      expect(json.reason ?? "").not.toMatch(/^mac-mismatch/);
      // and --key-for verifies the rotated log, one key per keyId
      const rotated = await civitas(["audit", "verify", file, "--key-for", `2030-01=${KEY}`, "--key-for", `2030-02=${OTHER_KEY}`]);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toContain("2 rows verified");
    },
    60_000,
  );
});
