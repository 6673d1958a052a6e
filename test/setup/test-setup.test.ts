/**
 * scripts/test-setup.ts, run as `npm test` runs it, against a NATS port and a
 * state folder of the test's own (the shared servers are never stopped).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";

import { PG_URL } from "../support/postgres.js";
import { testPython } from "../support/test-python.js";
import { answers, freePort } from "../support/ports.js";

const SCRIPT = "scripts/test-setup.ts";

interface Run {
  readonly code: number | null;
  readonly stderr: string;
  readonly ms: number;
}

function runSetup(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", SCRIPT, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("close", (code) => resolve({ code, stderr, ms: Date.now() - started }));
  });
}

/** The one line a failed set-up prints (the tool's own progress lines start with "test setup:"). */
function failureLines(run: Run): string[] {
  return run.stderr.trim().split("\n").filter((line) => !line.startsWith("test setup:"));
}

const dirs: string[] = [];
function stateDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "civitas-setup-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A PATH holding node alone: no nats-server, no python3, no pg_ctlcluster. */
const NODE_ONLY_PATH = stateDir();
symlinkSync(process.execPath, path.join(NODE_ONLY_PATH, "node"));

describe("npm test's set-up (scripts/test-setup.ts)", () => {
  it("starts nats-server with JetStream when nothing answers on the port, and leaves a running one alone", async () => {
    const dir = stateDir();
    const port = await freePort();
    expect(await answers(port)).toBe(false);
    const first = await runSetup(["--only", "nats", "--nats-port", String(port), "--state-dir", dir]);
    const pid = Number(readFileSync(path.join(dir, `nats-${port}.pid`), "utf8"));
    try {
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain(`starting nats-server with JetStream on 127.0.0.1:${port}`);
      const connection = await natsConnect({ servers: `127.0.0.1:${port}` });
      const info = await (await jetstreamManager(connection)).getAccountInfo();
      expect(info.streams).toBe(0);
      await connection.close();
      const second = await runSetup(["--only", "nats", "--nats-port", String(port), "--state-dir", dir]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).not.toContain("starting nats-server");
    } finally {
      process.kill(pid, "SIGKILL");
    }
  }, 60_000);

  it("without nats-server on PATH fails at once with one line naming it and how to install it", async () => {
    const run = await runSetup(["--only", "nats", "--nats-port", String(await freePort()), "--state-dir", stateDir()], { PATH: NODE_ONLY_PATH });
    expect(run.code).toBe(1);
    expect(failureLines(run)).toEqual([expect.stringMatching(/^npm test cannot run: nats-server is not on PATH: install it \(apt-get install nats-server/)]);
    expect(run.ms).toBeLessThan(20_000);
  });

  it("fills a project-local virtual environment with nats-py and msgpack, from local wheels when the machine has them", async () => {
    const dir = stateDir();
    const run = await runSetup(["--only", "python", "--state-dir", dir]);
    expect(run.code, run.stderr).toBe(0);
    const imported = spawnSync(testPython(dir), ["-c", "import nats, msgpack; print(msgpack.version[0])"], { encoding: "utf8" });
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stdout.trim()).toBe("1");
    const again = await runSetup(["--only", "python", "--state-dir", dir]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("preparing");
  }, 120_000);

  it("without python3 fails at once with one line naming it", async () => {
    const run = await runSetup(["--only", "python", "--state-dir", stateDir()], { PATH: NODE_ONLY_PATH });
    expect(run.code).toBe(1);
    expect(failureLines(run)).toEqual([expect.stringMatching(/^npm test cannot run: python3 is not on PATH: install Python 3/)]);
  });

  it("without Chromium fails at once with one line naming it and how to install it; finds it on PATH or through CHROMIUM_PATH", async () => {
    const run = await runSetup(["--only", "chromium", "--state-dir", stateDir()], { PATH: NODE_ONLY_PATH, CHROMIUM_PATH: "" });
    expect(run.code).toBe(1);
    expect(failureLines(run)).toEqual([expect.stringMatching(/^npm test cannot run: no Chromium for the inbox page's browser tests: apt-get install -y chromium/)]);
    const missing = await runSetup(["--only", "chromium", "--state-dir", stateDir()], { CHROMIUM_PATH: path.join(stateDir(), "no-such-chromium") });
    expect(failureLines(missing)).toEqual([expect.stringMatching(/^npm test cannot run: CHROMIUM_PATH=.* does not exist/)]);
    const found = await runSetup(["--only", "chromium", "--state-dir", stateDir()], { CHROMIUM_PATH: process.execPath });
    expect(found.code, found.stderr).toBe(0);
  });

  it("creates the tests' database when the server answers but the database does not exist yet", async () => {
    const url = new URL(PG_URL);
    const database = `civitas_setup_${process.pid}_${Date.now()}`;
    url.pathname = `/${database}`;
    const run = await runSetup(["--only", "postgres"], { CIVITAS_TEST_POSTGRES: url.href });
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`creating database ${database}`);
      const found = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
      expect(found.rowCount).toBe(1);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${database}"`);
      await admin.end();
    }
  });

  it("when PostgreSQL does not answer and cannot be started here, fails at once with one line saying so", async () => {
    const run = await runSetup(["--only", "postgres"], { CIVITAS_TEST_POSTGRES: "postgres://postgres@127.0.0.1:1/test", PATH: NODE_ONLY_PATH });
    expect(run.code).toBe(1);
    expect(failureLines(run)).toEqual([expect.stringMatching(/^npm test cannot run: PostgreSQL does not answer on 127\.0\.0\.1:1: install and start it/)]);
  });
});
