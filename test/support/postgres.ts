import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";

/** The test server: the machine's PostgreSQL (trust auth), or CIVITAS_TEST_POSTGRES. */
export const PG_URL = process.env.CIVITAS_TEST_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";

/** A connection string to a port nothing listens on (the "server unreachable" case; the shared server is never stopped). */
export const UNREACHABLE_URL = "postgres://postgres@127.0.0.1:1/test";

/** A schema of its own for one test file, dropped (with everything in it) by `drop()`. */
export interface TestSchema {
  /** The schema's name. */
  readonly name: string;
  /** A pool on the test server, ended by `drop()`. */
  readonly pool: pg.Pool;
  /** `schema.table` for a fresh table name in this schema. */
  table(prefix?: string): string;
  drop(): Promise<void>;
}

/** Creates a uniquely named schema on the test server, so tests of several engineers and files never share tables. */
export async function createTestSchema(label: string): Promise<TestSchema> {
  const name = `civitas_test_${label}_${randomBytes(4).toString("hex")}`;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 5000 });
  pool.on("error", () => undefined);
  await pool.query(`CREATE SCHEMA "${name}"`);
  let n = 0;
  return {
    name,
    pool,
    table: (prefix = "t") => `${name}.${prefix}_${++n}`,
    drop: async () => {
      try {
        await pool.query(`DROP SCHEMA "${name}" CASCADE`);
      } finally {
        await pool.end();
      }
    },
  };
}

/**
 * A {@link TestSchema} for the whole test file: created before its first
 * test and dropped after its last (registers `beforeAll` and `afterAll`, so
 * call it at the top level). Its members may be read inside hooks and tests.
 */
export function testSchemaPerFile(label: string): TestSchema {
  let schema: TestSchema | undefined;
  beforeAll(async () => {
    schema = await createTestSchema(label);
  });
  afterAll(async () => {
    await schema?.drop();
  });
  const current = (): TestSchema => {
    if (schema === undefined) throw new Error(`the test schema '${label}' is made in beforeAll: read it inside a hook or a test`);
    return schema;
  };
  // Every member is read from the schema of the moment (its functions are closures: no `this`).
  return new Proxy({} as TestSchema, { get: (_target, key) => Reflect.get(current(), key) as unknown });
}
