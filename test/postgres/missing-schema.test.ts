import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { PostgresLeases } from "../../src/postgres/postgres-leases.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { StoreSchemaMissingError } from "../../src/state/store-schema-missing-error.js";
import { StoreUnavailableError } from "../../src/state/store-unavailable-error.js";
import { KEY, resume, suspend } from "../support/audit-log.js";
import { PG_URL } from "../support/postgres.js";
import { civitasJson } from "../cli/fixtures/run-cli.js";

/**
 * PostgreSQL first steps: a schema the store needs is created when the user
 * may, and a missing schema, table or privilege is a STORE_SCHEMA_MISSING
 * that names it and the statement that provides it, never "check that the
 * server is running". Every test uses schema names of its own.
 */

let admin: pg.Pool;
/** A login role without the CREATE privilege on the database (trust auth). */
let role: string;
const schemas: string[] = [];

const fresh = (label: string): string => {
  const name = `civitas_test_first_${label}_${randomBytes(4).toString("hex")}`;
  schemas.push(name);
  return name;
};
const asRole = (): string => PG_URL.replace(/\/\/[^@/]*@/, `//${role}@`);
const relation = async (qualified: string): Promise<string | null> => (await admin.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [qualified])).rows[0]?.t ?? null;
const schemaExists = async (name: string): Promise<boolean> => (await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [name])).rows.length === 1;

beforeAll(async () => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
  admin.on("error", () => undefined);
  role = `civitas_test_role_${randomBytes(4).toString("hex")}`;
  await admin.query(`CREATE ROLE "${role}" LOGIN`);
});
afterEach(async () => {
  for (const name of schemas.splice(0)) await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
});
afterAll(async () => {
  await admin.query(`DROP OWNED BY "${role}"`);
  await admin.query(`DROP ROLE "${role}"`);
  await admin.end();
});

describe("a schema-qualified table whose schema does not exist", () => {
  it("PostgresStateStore creates the schema on first use, then the table, and works", async () => {
    const name = fresh("store");
    const store = new PostgresStateStore({ connectionString: PG_URL }, { table: `${name}.state` });
    try {
      expect(await schemaExists(name)).toBe(false);
      await store.set("payer", { n: 1 });
      expect(await store.get("payer")).toEqual({ n: 1 });
      expect(await schemaExists(name)).toBe(true);
      expect(await relation(`"${name}"."civitas_fence"`)).toBe(`${name}.civitas_fence`);
    } finally {
      await store.close();
    }
  });

  it("store.migrate() creates the schema, the table and a fence sequence in another missing schema", async () => {
    const name = fresh("migrate");
    const fences = fresh("fences");
    const store = new PostgresStateStore({ connectionString: PG_URL }, { table: `${name}.state`, fenceSequence: `${fences}.seq` });
    try {
      await store.migrate();
      expect(await schemaExists(name)).toBe(true);
      expect(await relation(`"${fences}"."seq"`)).toBe(`${fences}.seq`);
      expect(await store.nextFence()).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it("PostgresAuditSink and PostgresLeases create theirs on first use too", async () => {
    const audit = fresh("audit");
    const leases = fresh("leases");
    const sink = new PostgresAuditSink({ connectionString: PG_URL, key: KEY, table: `${audit}.chain` });
    const lease = new PostgresLeases({ connectionString: PG_URL }, { table: `${leases}.leases` });
    try {
      expect((await sink.emit(suspend("payer", "s1"))).seq).toBe(0);
      expect(await lease.acquire("payments", "host-a", 10_000)).toBeGreaterThan(0);
      expect(await schemaExists(audit)).toBe(true);
      expect(await schemaExists(leases)).toBe(true);
    } finally {
      await sink.close();
      await lease.close();
    }
  });

  it("a user who may not create the schema gets STORE_SCHEMA_MISSING naming it and the statement to run; nothing is created", async () => {
    const name = fresh("denied");
    const store = new PostgresStateStore({ connectionString: asRole() }, { table: `${name}.state` });
    try {
      const error = await store.get("payer").then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(StoreSchemaMissingError);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      const missing = error as StoreSchemaMissingError;
      expect(missing.code).toBe("STORE_SCHEMA_MISSING");
      expect(missing.name).toBe("StoreSchemaMissingError");
      expect(missing.missing).toBe(`schema "${name}"`);
      expect(missing.message).toContain(`CREATE SCHEMA "${name}" AUTHORIZATION "${role}"`);
      expect(missing.message).toContain(`GRANT CREATE ON DATABASE "test" TO "${role}"`);
      expect(missing.message).not.toContain("check that the PostgreSQL server is running");
      expect(await schemaExists(name)).toBe(false);
      // migrate() says the same
      await expect(store.migrate()).rejects.toMatchObject({ code: "STORE_SCHEMA_MISSING", missing: `schema "${name}"` });
    } finally {
      await store.close();
    }
  });

  it("a user who may use the schema but not create in it is told which privilege to grant", async () => {
    const name = fresh("usage");
    await admin.query(`CREATE SCHEMA "${name}"`);
    await admin.query(`GRANT USAGE ON SCHEMA "${name}" TO "${role}"`);
    const sink = new PostgresAuditSink({ connectionString: asRole(), key: KEY, table: `${name}.chain` });
    try {
      const error = (await sink.emit(suspend("payer", "s1")).catch((err: unknown) => err)) as StoreSchemaMissingError;
      expect(error.code).toBe("STORE_SCHEMA_MISSING");
      expect(error.missing).toBe(`the CREATE privilege on schema "${name}"`);
      expect(error.message).toContain(`GRANT CREATE ON SCHEMA "${name}" TO "${role}"`);
      expect(await relation(`"${name}"."chain"`)).toBeNull();
    } finally {
      await sink.close();
    }
  });

  it("a user without the CREATE privilege uses tables made for it: nothing is created when nothing is missing", async () => {
    const name = fresh("granted");
    const made = new PostgresStateStore({ connectionString: PG_URL }, { table: `${name}.state` });
    await made.migrate();
    await made.close();
    await admin.query(`GRANT USAGE ON SCHEMA "${name}" TO "${role}"`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON "${name}"."state" TO "${role}"`);
    await admin.query(`GRANT USAGE ON SEQUENCE "${name}"."civitas_fence" TO "${role}"`);
    const store = new PostgresStateStore({ connectionString: asRole() }, { table: `${name}.state` });
    try {
      await store.set("payer", { ok: true });
      expect(await store.get("payer")).toEqual({ ok: true });
      expect(await store.nextFence()).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});

describe("a table or schema that disappears after first use", () => {
  it("a dropped table is STORE_SCHEMA_MISSING naming it (not 'check that the server is running'); the next call creates it again", async () => {
    const name = fresh("dropped");
    const store = new PostgresStateStore({ connectionString: PG_URL }, { table: `${name}.state` });
    try {
      await store.set("payer", { n: 1 });
      await admin.query(`DROP TABLE "${name}"."state"`);
      const error = (await store.get("payer").catch((err: unknown) => err)) as StoreSchemaMissingError;
      expect(error).toBeInstanceOf(StoreSchemaMissingError);
      expect(error.missing).toBe(`table ${name}.state`);
      expect(error.message).toContain("SQLSTATE 42P01");
      expect(error.message).toContain(`civitas state migrate --store postgres://… --table ${name}.state`);
      expect(error.message).not.toContain("check that the PostgreSQL server is running");
      expect(await store.get("payer")).toBeUndefined();
      await store.set("payer", { n: 2 });
      expect(await store.get("payer")).toEqual({ n: 2 });
    } finally {
      await store.close();
    }
  });

  it("a dropped schema is STORE_SCHEMA_MISSING naming the schema (SQLSTATE 3F000)", async () => {
    const name = fresh("gone");
    const lease = new PostgresLeases({ connectionString: PG_URL }, { table: `${name}.leases` });
    try {
      expect(await lease.acquire("payments", "host-a", 10_000)).toBeGreaterThan(0);
      await admin.query(`DROP SCHEMA "${name}" CASCADE`);
      // nextval() on a sequence of a schema that is gone: invalid_schema_name
      const error = (await lease.acquire("other", "host-a", 10_000).catch((err: unknown) => err)) as StoreSchemaMissingError;
      expect(error.code).toBe("STORE_SCHEMA_MISSING");
      expect(error.message).toMatch(/SQLSTATE (3F000|42P01)/);
      expect(error.message).toContain(name);
      expect(await lease.acquire("other", "host-a", 10_000)).toBeGreaterThan(0);
    } finally {
      await lease.close();
    }
  });

  it("PostgresAuditSink with a stateTable that does not exist refuses a decision with STORE_SCHEMA_MISSING naming that table", async () => {
    const name = fresh("statetable");
    const sink = new PostgresAuditSink({ connectionString: PG_URL, key: KEY, table: `${name}.chain`, stateTable: `${name}.nosuch` });
    try {
      await sink.emit(suspend("payer", "s1"));
      const error = (await sink.emit(resume("payer", "s1")).catch((err: unknown) => err)) as StoreSchemaMissingError;
      expect(error.code).toBe("STORE_SCHEMA_MISSING");
      expect(error.missing).toBe(`table ${name}.nosuch`);
      expect(error.message).toContain(`stateTable ${name}.nosuch must name an existing PostgresStateStore table`);
      expect((await sink.rows()).map((r) => r.event)).toEqual(["agent.suspend"]);
    } finally {
      await sink.close();
    }
  });
});

describe("civitas state migrate", { timeout: 60_000 }, () => {
  it("creates a missing schema with the table; a user who may not gets exit 3 with STORE_SCHEMA_MISSING naming the schema", async () => {
    const name = fresh("cli");
    const denied = await civitasJson(["state", "migrate", "--store", asRole(), "--table", `${name}.state`]);
    expect(denied.code).toBe(3);
    expect(denied.json).toMatchObject({ ok: false, error: { code: "STORE_SCHEMA_MISSING" } });
    expect((denied.json.error as { message: string }).message).toContain(`CREATE SCHEMA "${name}" AUTHORIZATION "${role}"`);
    expect(await schemaExists(name)).toBe(false);
    const made = await civitasJson(["state", "migrate", "--store", PG_URL, "--table", `${name}.state`]);
    expect(made).toMatchObject({ code: 0, json: { ok: true, migrated: true } });
    expect(await relation(`"${name}"."state"`)).toBe(`${name}.state`);
  });
});
