import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { JsonlAuditSink } from "../../src/entries/audit.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

describe("the built civitas binary (package.json bin)", () => {
  it("is dist/cli/main.js with a node shebang, and verifies a real log (npm test builds before it runs)", async () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ civitas: "./dist/cli/main.js" });
    const bin = join(root, pkg.bin.civitas!);
    expect(readFileSync(bin, "utf8").split("\n")[0]).toBe("#!/usr/bin/env node");

    const dir = mkdtempSync(join(tmpdir(), "civitas-bin-"));
    try {
      const log = join(dir, "audit.jsonl");
      const sink = new JsonlAuditSink(log, { key: "k" });
      await sink.emit({ event: "agent.start", ts: new Date(0).toISOString(), agent: "a", signerId: "test", details: {} });
      await sink.close();
      const ok = spawnSync(process.execPath, [bin, "audit", "verify", log, "--key", "k", "--json"], { encoding: "utf8" });
      expect(ok.status).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, rows: 1 });
      const wrongKey = spawnSync(process.execPath, [bin, "audit", "verify", log, "--key", "other"], { encoding: "utf8" });
      expect(wrongKey.status).toBe(1);
      expect(() => execFileSync(process.execPath, [bin, "nonsense"], { stdio: "pipe" })).toThrow();
      // the built binary finds the package's own package.json two levels up, as the source does
      const version = spawnSync(process.execPath, [bin, "--version"], { encoding: "utf8" });
      expect(version.status).toBe(0);
      expect(version.stdout).toBe(`${(JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
