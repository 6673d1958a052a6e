import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { civitas, civitasJson } from "./fixtures/run-cli.js";

describe("civitas usage", { timeout: 60_000 }, () => {
  it("--help lists every command and the exit codes (exit 0)", async () => {
    const [top, group, command] = await Promise.all([
      civitas(["--help"]),
      civitas(["state", "--help"]),
      civitas(["audit", "verify", "--help"]),
    ]);
    expect(top.code).toBe(0);
    for (const c of ["audit verify", "audit verify-suspension", "audit repair", "state list", "state show", "state suspended"]) {
      expect(top.stdout).toContain(`civitas ${c} `);
    }
    expect(top.stdout).toContain("4  not found");
    expect(group.code).toBe(0);
    expect(group.stdout).toContain("civitas state suspended");
    expect(group.stdout).not.toContain("civitas audit");
    expect(command.code).toBe(0);
    expect(command.stdout).toContain("usage: civitas audit verify <file>");
    expect(command.stdout).toContain("CIVITAS_AUDIT_KEY");
  });

  it("help speaks of decisions where any decision settles a pause, never of a resume alone", async () => {
    const [top, verify, suspended] = await Promise.all([civitas(["--help"]), civitas(["audit", "verify-suspension", "--help"]), civitas(["state", "suspended", "--help"])]);
    for (const run of [top, verify]) {
      expect(run.stdout).toContain("exactly one decision (approval, denial, expiry or cancellation)");
      expect(run.stdout).not.toMatch(/whether one resume/);
      expect(run.stdout).toContain("4 no row of <agent>");
    }
    expect(suspended.stdout).toContain("with each pause's deadline");
  });

  it("exits 2 with the usage on stderr for a missing command, group or argument", async () => {
    const runs = await Promise.all([
      civitas([]),
      civitas(["frobnicate"]),
      civitas(["audit"]),
      civitas(["audit", "explode", "x"]),
      civitas(["audit", "verify-suspension", "log.jsonl", "--key", "k"]),
      civitas(["state", "show", "a", "b", "--store", "sqlite:x.db"]),
      civitas(["state", "list", "--store"]),
      civitas(["audit", "repair", "log.jsonl", "--verbose"]),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(/^civitas: /);
      expect(run.stderr).toContain("usage: civitas");
    }
    expect(runs[1].stderr).toContain("unknown command group 'frobnicate'");
    expect(runs[4].stderr).toContain("takes <file> <agent>, got 1 argument");
    expect(runs[7].stderr).toContain("--verbose");
  });

  it("--version and -V print the package's version (exit 0), also as JSON; extra arguments are a usage error", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    const [long, short, json, extra] = await Promise.all([
      civitas(["--version"]),
      civitas(["-V"]),
      civitasJson(["--version"]),
      civitas(["--version", "audit"]),
    ]);
    expect(long).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
    expect(short).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
    expect(json).toEqual({ code: 0, json: { ok: true, version, exitCode: 0 } });
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain("unknown command group '--version'");
  });

  it("with --json, a usage error is one JSON object on stdout", async () => {
    const { code, json } = await civitasJson(["audit", "verify"]);
    expect(code).toBe(2);
    expect(json).toMatchObject({ ok: false, exitCode: 2, error: { code: "USAGE" } });
    expect((json.error as { message: string }).message).toContain("takes <file>");
  });
});
