import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { InvalidArgumentError, StateSchemaError } from "../../src/errors/errors.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { STATE_RECORD_VERSION } from "../../src/state/state-record.js";
import { StoreUnavailableError } from "../../src/state/store-unavailable-error.js";
import { runTsChild } from "../support/child-process.js";
import { PG_URL, testSchemaPerFile, UNREACHABLE_URL } from "../support/postgres.js";
import { describeStateStoreContract } from "../state/store-contract.js";

const here = path.dirname(fileURLToPath(import.meta.url));

const schema = testSchemaPerFile("store");

describeStateStoreContract("PostgresStateStore", async () => {
  const store = new PostgresStateStore({ connectionString: PG_URL }, { table: schema.table("contract") });
  return { store, cleanup: () => store.close() };
});

describeStateStoreContract("PostgresStateStore on a given pool, through a fenced view", async () => {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
  const base = new PostgresStateStore({ pool }, { table: schema.table("view") });
  const store = base.fenced(await base.nextFence());
  return {
    store,
    cleanup: async () => {
      await store.close();
      await base.close();
      await pool.end();
    },
  };
});

interface RawRow {
  version: number;
  state: string | null;
  suspended: string | null;
  fence: string;
}

async function raw(table: string, name: string): Promise<RawRow | undefined> {
  const result = await schema.pool.query<RawRow>(`SELECT version, state, suspended, fence::text AS fence FROM ${quoted(table)} WHERE name = $1`, [Buffer.from(name)]);
  return result.rows[0];
}

function quoted(table: string): string {
  return table
    .split(".")
    .map((p) => `"${p}"`)
    .join(".");
}

describe("PostgresStateStore", () => {
  it("stores the state as the exact JSON text, keys in their order, \\u0000 and all", async () => {
    const table = schema.table();
    const store = new PostgresStateStore({ pool: schema.pool }, { table });
    const state = { z: 1, a: { y: "nul \u0000 here", b: [1.5, "😀"] }, "": null };
    await store.set("agent", state);
    expect((await raw(table, "agent"))?.state).toBe(JSON.stringify(state));
    expect((await raw(table, "agent"))?.version).toBe(STATE_RECORD_VERSION);
    expect(Object.keys((await store.get("agent")) ?? {})).toEqual(["z", "a", ""]);
    await store.close();
  });

  it("writes the suspension marker into its own column in the same statement, clears it with the state, and lists suspensions from it", async () => {
    const table = schema.table();
    const store = new PostgresStateStore({ pool: schema.pool }, { table });
    const marker = { reason: "needs approval", since: "2030-01-01T00:00:00.000Z", approver: null, suspensionId: "s-1" };
    await store.set("payer", { pending: 120, "_civitas.suspended": marker });
    await store.set("idle", { n: 1 });
    expect((await raw(table, "payer"))?.suspended).toBe(JSON.stringify(marker));
    expect((await raw(table, "idle"))?.suspended).toBeNull();
    expect(await store.listSuspended()).toEqual([{ name: "payer", marker }]);
    await store.set("payer", { pending: 120 });
    expect((await raw(table, "payer"))?.suspended).toBeNull();
    expect(await store.listSuspended()).toEqual([]);
    await store.close();
  });

  it("creates a partial index on the marker column, which the suspensions query uses", async () => {
    const table = schema.table("idx");
    const store = new PostgresStateStore({ pool: schema.pool }, { table });
    await store.list();
    const indexes = await schema.pool.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2", [schema.name, table.split(".")[1]]);
    expect(indexes.rows.map((r) => r.indexdef).some((d) => /WHERE \(suspended IS NOT NULL\)/.test(d))).toBe(true);
    const client = await schema.pool.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN SELECT name, suspended FROM ${quoted(table)} WHERE suspended IS NOT NULL`);
      expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(/_suspended_idx/);
    } finally {
      client.release();
    }
    await store.close();
  });

  describe("refuses a record tampered with behind its back", () => {
    const tamperings: [string, string, unknown][] = [
      ["an unknown version", "version = $2", STATE_RECORD_VERSION + 1],
      ["malformed JSON", "state = $2", '{"pending": '],
      ["a JSON array", "state = $2", "[1,2]"],
      ["a malformed marker", "state = $2", '{"_civitas.suspended": 7}'],
    ];
    for (const [label, assignment, value] of tamperings) {
      it(`${label}: STATE_SCHEMA, row left as it is`, async () => {
        const table = schema.table();
        const store = new PostgresStateStore({ pool: schema.pool }, { table });
        await store.set("payer", { pending: 1 });
        await schema.pool.query(`UPDATE ${quoted(table)} SET ${assignment} WHERE name = $1`, [Buffer.from("payer"), value]);
        const before = await raw(table, "payer");
        const err: unknown = await store.get("payer").then(
          () => undefined,
          (e: unknown) => e,
        );
        if (label === "a malformed marker") {
          // A record that is JSON but holds a bad marker is the runtime's to refuse (readMarker); the store returns it.
          expect(err).toBeUndefined();
        } else {
          expect(err).toBeInstanceOf(StateSchemaError);
          expect((err as StateSchemaError).code).toBe("STATE_SCHEMA");
        }
        expect(await raw(table, "payer")).toEqual(before);
        await store.close();
      });
    }
  });

  it("refuses a foreign table shape with STORE_UNAVAILABLE and leaves it unchanged", async () => {
    const table = schema.table("foreign");
    await schema.pool.query(`CREATE TABLE ${quoted(table)} (name text PRIMARY KEY, state jsonb)`);
    await schema.pool.query(`INSERT INTO ${quoted(table)} VALUES ('x', '{"a":1}')`);
    const store = new PostgresStateStore({ pool: schema.pool }, { table });
    const err: unknown = await store.get("x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).code).toBe("STORE_UNAVAILABLE");
    expect((err as Error).message).toMatch(/column 'name' is text, not bytea/);
    expect((err as Error).message).toMatch(/Nothing was changed/);
    const columns = await schema.pool.query("SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY column_name", [schema.name, table.split(".")[1]]);
    expect(columns.rows).toEqual([{ column_name: "name" }, { column_name: "state" }]);
    await expect(store.migrate()).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
    await store.close();
  });

  it("creates the schema once when many stores start together on the same table", async () => {
    const table = schema.table("race");
    const stores = Array.from({ length: 6 }, () => new PostgresStateStore({ connectionString: PG_URL }, { table }));
    await Promise.all(stores.map((s, i) => s.set(`a${i}`, { i })));
    expect(await stores[0]?.list()).toEqual(["a0", "a1", "a2", "a3", "a4", "a5"]);
    await Promise.all(stores.map((s) => s.close()));
  });

  it("rejects with STORE_UNAVAILABLE within the connection timeout when the server is unreachable", async () => {
    const store = new PostgresStateStore({ connectionString: UNREACHABLE_URL }, { connectionTimeoutMs: 1000 });
    const started = Date.now();
    const err: unknown = await store.set("a", { n: 1 }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).code).toBe("STORE_UNAVAILABLE");
    expect((err as Error).message).toMatch(/127\.0\.0\.1:1/);
    await store.close();
  });

  it("survives the server dropping its idle connections (error listener), and the next call reconnects", async () => {
    const table = schema.table();
    const app = `civitas_kill_${schema.name.slice(-8)}`;
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const store = new PostgresStateStore({ connectionString: `${PG_URL}?application_name=${app}` }, { table, logger });
    await store.set("a", { n: 1 });
    const killed = await schema.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [app]);
    expect(killed.rowCount).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(warnings.join("\n")).toMatch(/connection was lost/);
    expect(await store.get("a")).toEqual({ n: 1 });
    await store.close();
  });

  it("never ends a pool it was given", async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const store = new PostgresStateStore({ pool }, { table: schema.table() });
    await store.set("a", {});
    await store.close();
    expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });

  const badOptions: [string, () => unknown][] = [
    ["no connection", () => new PostgresStateStore(undefined as never)],
    ["both connection forms", () => new PostgresStateStore({ connectionString: PG_URL, pool: schema.pool } as never)],
    ["a non-postgres URL", () => new PostgresStateStore({ connectionString: "mysql://x" })],
    ["a bad table", () => new PostgresStateStore({ connectionString: PG_URL }, { table: 'x"; DROP TABLE y' })],
    ["a three-part table", () => new PostgresStateStore({ connectionString: PG_URL }, { table: "a.b.c" })],
    ["a zero connection timeout", () => new PostgresStateStore({ connectionString: PG_URL }, { connectionTimeoutMs: 0 })],
    ["a fence of 0", () => new PostgresStateStore({ pool: schema.pool }).fenced(0)],
  ];
  for (const [label, make] of badOptions) {
    it(`refuses ${label} with INVALID_ARGUMENT`, () => {
      expect(make).toThrow(InvalidArgumentError);
    });
  }
});

describe("PostgresStateStore without pg installed", () => {
  it("importing civitas-ts/postgres works, and making a store says how to install pg (STORE_UNAVAILABLE)", async () => {
    const run = await runTsChild(path.join(here, "fixtures", "without-pg.ts"), [], { timeoutMs: 15_000 });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.lines[0] ?? "{}") as { name?: string; code?: string; message?: string };
    expect(result.name).toBe("StoreUnavailableError");
    expect(result.code).toBe("STORE_UNAVAILABLE");
    expect(result.message).toContain("npm install pg@8");
  });
});
