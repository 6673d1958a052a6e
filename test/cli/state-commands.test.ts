import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SUSPENSION_KEY } from "../../src/state/suspension-marker.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { civitas, civitasJson, tempDir } from "./fixtures/run-cli.js";

const marker = { reason: "budget exceeded", since: "2030-01-02T03:04:05.678Z", approver: null, suspensionId: "susp-1" };

describe("civitas state", { timeout: 60_000 }, () => {
  let dir: string;
  let db: string;
  let store: string;
  let brokenStore: string;

  beforeAll(async () => {
    dir = tempDir();
    db = path.join(dir, "state.db");
    store = `sqlite:${db}`;
    const s = new SqliteStateStore(db);
    await s.set("alpha", { count: 1 });
    await s.set("beta", { count: 2, [SUSPENSION_KEY]: marker });
    await s.set("gamma", { items: ["x"] });
    await s.set("delta", { [SUSPENSION_KEY]: { ...marker, suspensionId: "susp-2", expiresAt: "2030-01-03T03:04:05.678Z" } });
    await s.close();

    const brokenDb = path.join(dir, "broken.db");
    brokenStore = `sqlite:${brokenDb}`;
    const b = new SqliteStateStore(brokenDb);
    await b.set("good", { [SUSPENSION_KEY]: marker });
    await b.close();
    const raw = new Database(brokenDb);
    raw.prepare("INSERT INTO civitas_state (name, version, state, updated_at) VALUES (?, ?, ?, ?)").run(
      "future",
      99,
      "{}",
      "2030-01-01T00:00:00.000Z",
    );
    raw.close();
  });

  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("list prints the names, one per line, and never modifies the store", async () => {
    const before = fs.readFileSync(db);
    const run = await civitas(["state", "list", "--store", store]);
    expect(run).toMatchObject({ code: 0, stdout: "alpha\nbeta\ndelta\ngamma\n" });
    expect(fs.readFileSync(db).equals(before)).toBe(true);
    expect(await civitasJson(["state", "list", "--store", store])).toEqual({
      code: 0,
      json: { ok: true, store, names: ["alpha", "beta", "delta", "gamma"], exitCode: 0 },
    });
  });

  it("show prints the state JSON", async () => {
    const run = await civitas(["state", "show", "beta", "--store", store]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ count: 2, [SUSPENSION_KEY]: marker });
    const { code, json } = await civitasJson(["state", "show", "alpha", "--store", store]);
    expect(code).toBe(0);
    expect(json).toMatchObject({ ok: true, name: "alpha", state: { count: 1 } });
  });

  it("show of an unknown name exits 4", async () => {
    const run = await civitas(["state", "show", "nobody", "--store", store]);
    expect(run.code).toBe(4);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("no state named 'nobody'");
    const { code, json } = await civitasJson(["state", "show", "nobody", "--store", store]);
    expect(code).toBe(4);
    expect(json).toMatchObject({ ok: false, exitCode: 4, error: { code: "NOT_FOUND" } });
  });

  it("suspended prints a table of the agents holding a marker, with each pause's deadline (- for none)", async () => {
    const run = await civitas(["state", "suspended", "--store", store]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+REASON\s+SINCE\s+EXPIRES\s+SUSPENSION$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^beta\s+budget exceeded\s+2030-01-02T03:04:05.678Z\s+-\s+susp-1$/);
    expect(lines[2]).toMatch(/^delta\s+budget exceeded\s+2030-01-02T03:04:05.678Z\s+2030-01-03T03:04:05.678Z\s+susp-2$/);
    const { code, json } = await civitasJson(["state", "suspended", "--store", store]);
    expect(code).toBe(0);
    expect(json).toEqual({
      ok: true,
      store,
      suspended: [
        { name: "beta", reason: marker.reason, since: marker.since, expiresAt: null, suspensionId: "susp-1" },
        { name: "delta", reason: marker.reason, since: marker.since, expiresAt: "2030-01-03T03:04:05.678Z", suspensionId: "susp-2" },
      ],
      errors: [],
      exitCode: 0,
    });
  });

  it("a record refused with STATE_SCHEMA exits 3", async () => {
    const show = await civitasJson(["state", "show", "future", "--store", brokenStore]);
    expect(show.code).toBe(3);
    expect(show.json).toMatchObject({ ok: false, error: { code: "STATE_SCHEMA" } });
    const run = await civitas(["state", "suspended", "--store", brokenStore]);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain("good");
    expect(run.stdout).toContain("future: STATE_SCHEMA");
    const { code, json } = await civitasJson(["state", "suspended", "--store", brokenStore]);
    expect(code).toBe(3);
    expect(json).toMatchObject({ ok: false, suspended: [{ name: "good" }], errors: [{ name: "future", code: "STATE_SCHEMA" }] });
  });

  it("a missing or non-SQLite store file exits 3 and creates nothing", async () => {
    const missing = path.join(dir, "missing.db");
    const run = await civitas(["state", "list", "--store", `sqlite:${missing}`]);
    expect(run.code).toBe(3);
    expect(fs.existsSync(missing)).toBe(false);
    const text = path.join(dir, "not-a-db.db");
    fs.writeFileSync(text, "hello, this is not a database file at all, just some text padding it out");
    const { code, json } = await civitasJson(["state", "list", "--store", `sqlite:${text}`]);
    expect(code).toBe(3);
    expect(json).toMatchObject({ ok: false, exitCode: 3 });
  });

  it("an unsupported store scheme or a missing --store is a usage error naming sqlite: and postgres://", async () => {
    const run = await civitas(["state", "list", "--store", "mysql://localhost/civitas"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("'mysql:' is not supported");
    expect(run.stderr).toContain("sqlite:<path>");
    expect(run.stderr).toContain("postgres://");
    const { code, json } = await civitasJson(["state", "list"]);
    expect(code).toBe(2);
    expect(json).toMatchObject({ ok: false, exitCode: 2, error: { code: "USAGE" } });
  });
});
