import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { AUDIT_ANCHOR_KEY } from "../../src/audit/audit-anchor.js";
import { SUSPENSION_KEY } from "../../src/state/suspension-marker.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { createTestSchema, PG_URL, UNREACHABLE_URL, type TestSchema } from "../support/postgres.js";
import { civitas, civitasJson, tempDir } from "./fixtures/run-cli.js";

const KEY = "cli-test-key";
const marker = { reason: "budget exceeded", since: "2030-01-02T03:04:05.678Z", approver: null, suspensionId: "susp-1" };

describe("civitas with --store postgres://", { timeout: 60_000 }, () => {
  let schema: TestSchema;
  let dir: string;
  let stateTable: string;
  let auditTable: string;

  beforeAll(async () => {
    schema = await createTestSchema("cli");
    dir = tempDir();
    stateTable = `${schema.name}.state`;
    auditTable = `${schema.name}.audit`;
    const store = new PostgresStateStore({ pool: schema.pool }, { table: stateTable });
    await store.set("alpha", { count: 1 });
    await store.set("beta", { count: 2, [SUSPENSION_KEY]: marker });
    await store.set("gamma", { items: ["x"] });
    const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table: auditTable });
    const ts = "2030-01-02T03:04:05.678Z";
    await sink.emit({ event: "agent.start", ts, agent: "beta", signerId: "rt", details: {} });
    const anchor = await sink.emit({ event: "agent.suspend", ts, agent: "beta", signerId: "rt", details: { reason: marker.reason, suspensionId: "susp-1", since: ts, durable: true } });
    await store.set("beta", { count: 2, [SUSPENSION_KEY]: marker, [AUDIT_ANCHOR_KEY]: { seq: anchor.seq, hash: anchor.hash } });
    await sink.close();
    await store.close();
  });

  afterAll(async () => {
    await schema.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("state list, show and suspended read the table (suspended from the marker column), with --json", async () => {
    expect(await civitas(["state", "list", "--store", PG_URL, "--table", stateTable])).toMatchObject({ code: 0, stdout: "alpha\nbeta\ngamma\n" });
    const show = await civitasJson(["state", "show", "alpha", "--store", PG_URL, "--table", stateTable]);
    expect(show).toMatchObject({ code: 0, json: { ok: true, name: "alpha", state: { count: 1 } } });
    expect((await civitas(["state", "show", "nobody", "--store", PG_URL, "--table", stateTable])).code).toBe(4);
    const suspended = await civitasJson(["state", "suspended", "--store", PG_URL, "--table", stateTable]);
    expect(suspended).toMatchObject({ code: 0, json: { ok: true, suspended: [{ name: "beta", reason: "budget exceeded", suspensionId: "susp-1" }] } });
    // The listing is the marker column: a row whose column says paused is listed even if its state text disagrees.
    await schema.pool.query(`UPDATE "${schema.name}"."state" SET suspended = $1 WHERE name = $2`, [JSON.stringify({ ...marker, suspensionId: "col" }), Buffer.from("gamma")]);
    const fromColumn = await civitasJson(["state", "suspended", "--store", PG_URL, "--table", stateTable]);
    expect((fromColumn.json.suspended as { name: string; suspensionId: string }[]).map((s) => `${s.name}:${s.suspensionId}`)).toEqual(["beta:susp-1", "gamma:col"]);
    await schema.pool.query(`UPDATE "${schema.name}"."state" SET suspended = NULL WHERE name = $1`, [Buffer.from("gamma")]);
  });

  it("state commands never create a table: a missing one is exit 3; state migrate creates it, idempotently", async () => {
    const table = `${schema.name}.fresh`;
    const missing = await civitasJson(["state", "list", "--store", PG_URL, "--table", table]);
    expect(missing).toMatchObject({ code: 3, json: { ok: false, error: { code: "UNREADABLE" } } });
    expect(await civitasJson(["state", "migrate", "--store", PG_URL, "--table", table])).toMatchObject({ code: 0, json: { ok: true, migrated: true } });
    expect(await civitasJson(["state", "migrate", "--store", PG_URL, "--table", table])).toMatchObject({ code: 0 });
    expect(await civitas(["state", "list", "--store", PG_URL, "--table", table])).toMatchObject({ code: 0, stdout: "(no agent has stored state)\n" });
    await schema.pool.query(`CREATE TABLE "${schema.name}"."odd" (name text)`);
    const refused = await civitasJson(["state", "migrate", "--store", PG_URL, "--table", `${schema.name}.odd`]);
    expect(refused).toMatchObject({ code: 3, json: { error: { code: "STORE_UNAVAILABLE" } } });
  });

  it("an unreachable server is exit 3 with STORE_UNAVAILABLE, within the connection timeout", async () => {
    const started = Date.now();
    expect(await civitasJson(["state", "list", "--store", UNREACHABLE_URL])).toMatchObject({ code: 3, json: { error: { code: "STORE_UNAVAILABLE" } } });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("audit export writes a JSONL log that audit verify reads unchanged, to --out or to stdout", async () => {
    const out = path.join(dir, "audit.jsonl");
    expect(await civitasJson(["audit", "export", "--store", PG_URL, "--table", auditTable, "--out", out])).toMatchObject({ code: 0, json: { ok: true, rows: 2 } });
    expect(await civitas(["audit", "verify", out, "--key", KEY])).toMatchObject({ code: 0 });
    const piped = await civitas(["audit", "export", "--store", PG_URL, "--table", auditTable]);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe(fs.readFileSync(out, "utf8"));
    expect(piped.stderr).toMatch(/exported 2 rows/);
    expect((await civitasJson(["audit", "export", "--store", PG_URL, "--table", auditTable])).code).toBe(2); // --json needs --out
  });

  it("audit verify-suspension --store cross-checks the anchor: a log cut before it fails as truncated", async () => {
    const out = path.join(dir, "whole.jsonl");
    await civitas(["audit", "export", "--store", PG_URL, "--table", auditTable, "--out", out]);
    const whole = await civitasJson(["audit", "verify-suspension", out, "beta", "--key", KEY, "--store", PG_URL, "--table", stateTable]);
    expect(whole).toMatchObject({ code: 0, json: { status: "pending" } });
    const cut = path.join(dir, "cut.jsonl");
    fs.writeFileSync(cut, `${fs.readFileSync(out, "utf8").split("\n")[0]}\n`);
    expect(await civitasJson(["audit", "verify-suspension", cut, "beta", "--key", KEY])).toMatchObject({ code: 0, json: { status: "verified" } });
    const checked = await civitasJson(["audit", "verify-suspension", cut, "beta", "--key", KEY, "--store", PG_URL, "--table", stateTable]);
    expect(checked).toMatchObject({ code: 1, json: { status: "failed", reason: "truncated" } });
  });
});
