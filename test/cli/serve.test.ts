/**
 * `civitas serve <topology> --module <file>` run as the real program: a
 * payer paused by an earlier runtime in a SQLite store is restored by the
 * served runtime, listed by the inbox (401 without an identity), resumed
 * through it, and SIGTERM stops the inbox and the runtime (exit 0, the
 * decision stored). Without `--module`, or with a module that exports no
 * `authenticate`, the command refuses to start (exit 2).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ProcessStatus, Runtime, silentLogger } from "../../src/index.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { call, signIn, USER_HEADER } from "../http/support.js";
import { whenStarted, until } from "../support/runtimes.js";
import { ServedPayer } from "./fixtures/serve-app.js";
import { civitas, civitasJson, tempDir } from "./fixtures/run-cli.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TOPOLOGY = "test/cli/fixtures/serve-topology.yaml";
const MODULE = "test/cli/fixtures/serve-app.ts";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

/** Leaves `payer` paused on INV-9 in a fresh SQLite store, as an earlier runtime would; returns the store's path. */
async function pausedInStore(): Promise<string> {
  const db = path.join(tempDir(), "state.db");
  const store = new SqliteStateStore(db);
  const runtime = await whenStarted(Runtime.fromTopology(fs.readFileSync(path.join(ROOT, TOPOLOGY), "utf8"), { agents: { ServedPayer }, store, logger: silentLogger, keepAlive: false }));
  await runtime.send("payer", { invoice: "INV-9" });
  await until(() => runtime.getAgent("payer")?.status === ProcessStatus.SUSPENDED);
  await runtime.stop();
  await store.close();
  return db;
}

/** Starts `civitas serve … --json` and resolves with its first stdout line (the JSON result) once it listens. */
function startServe(args: readonly string[], env: Record<string, string>): Promise<{ child: ChildProcess; result: { ok: boolean; url: string; exitCode: number } }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "serve", ...args, "--json"], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const line = out.split("\n")[0];
      if (out.includes("\n") && line !== undefined) resolve({ child, result: JSON.parse(line) as never });
    });
    child.once("exit", (code) => reject(new Error(`civitas serve exited (${code}) before it listened:\n${out}\n${err}`)));
  });
}

describe("civitas serve", { timeout: 60_000 }, () => {
  it("serves the inbox of a runtime built from the topology: lists the restored pause, takes a resume, and stops on SIGTERM", async () => {
    const db = await pausedInStore();
    const { child, result } = await startServe([TOPOLOGY, "--module", MODULE, "--port", "0"], { CIVITAS_SERVE_TEST_DB: db });
    expect(result).toMatchObject({ ok: true, exitCode: 0 });
    expect(result.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);

    const anonymous = await call(result.url, "GET", "/api/v1/agents/suspended");
    expect([anonymous.status, anonymous.json.error?.code]).toEqual([401, "UNAUTHENTICATED"]);
    const page = await call(result.url, "GET", "/", { [USER_HEADER]: "alice" });
    expect([page.status, page.headers["content-type"]]).toEqual([200, "text/html; charset=utf-8"]);
    const alice = await signIn(result.url, "alice");
    const list = await alice.get("/api/v1/agents/suspended");
    expect(list.json).toMatchObject({ scope: "local", total: 1, items: [{ name: "payer", reason: "approve payment INV-9" }] });
    const [pause] = list.json.items as { suspensionId: string }[];
    const resumed = await alice.post("/api/v1/agents/payer/resume", { suspensionId: pause?.suspensionId });
    expect(resumed.status).toBe(200);
    expect((await alice.get("/api/v1/agents/suspended")).json).toMatchObject({ total: 0, items: [] });

    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const store = new SqliteStateStore(db);
    try {
      expect(await store.get("payer")).toMatchObject({ pending: null, paidBy: "alice" });
    } finally {
      await store.close();
    }
  });

  it("refuses to start without --module, or with a module that exports no authenticate (exit 2, nothing served)", async () => {
    const missing = await civitasJson(["serve", TOPOLOGY, "--port", "0"]);
    expect(missing.code).toBe(2);
    expect((missing.json.error as { code: string }).code).toBe("USAGE");
    expect((missing.json.error as { message: string }).message).toContain("needs --module <file>");
    const noAuth = await civitasJson(["serve", TOPOLOGY, "--module", "test/cli/fixtures/serve-no-auth.ts", "--port", "0"]);
    expect(noAuth.code).toBe(2);
    expect((noAuth.json.error as { code: string }).code).toBe("USAGE");
    expect((noAuth.json.error as { message: string }).message).toContain("must export authenticate(request)");
    const unreadable = await civitasJson(["serve", "test/cli/fixtures/no-such-topology.yaml", "--module", MODULE]);
    expect([unreadable.code, (unreadable.json.error as { code: string }).code]).toEqual([3, "UNREADABLE"]);
    const help = await civitas(["serve", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: civitas serve <topology> --module <file>");
  });
});
