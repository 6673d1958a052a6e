import { createRequire } from "node:module";
import type pg from "pg";
import { CivitasError, describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { StoreSchemaMissingError } from "../state/store-schema-missing-error.js";
import { StoreUnavailableError } from "../state/store-unavailable-error.js";

/**
 * Where a PostgreSQL-backed component connects: a connection string (it then
 * makes, owns and ends its own pool), or a `pg.Pool` you made (it never ends
 * that one).
 */
export type PostgresConnection = { connectionString: string; pool?: never } | { pool: pg.Pool; connectionString?: never };

/** Pool settings used when a component makes its own pool from a connection string. */
export interface PostgresPoolOptions {
  /**
   * How long to wait for a new connection before the call rejects with
   * `STORE_UNAVAILABLE`: a stopped or unreachable server is an error within
   * this time, never a hang. A whole number of milliseconds, at least 1.
   * @defaultValue 5000
   */
  connectionTimeoutMs?: number;
  /**
   * How long one statement may take, measured by the client, before it is
   * abandoned with `STORE_UNAVAILABLE` (a connection that went silent). A
   * whole number of milliseconds, at least 1.
   * @defaultValue 30000
   */
  queryTimeoutMs?: number;
  /**
   * The most connections the pool opens.
   * @defaultValue 10
   */
  maxConnections?: number;
}

const DEFAULT_CONNECTION_TIMEOUT_MS = 5000;
const DEFAULT_QUERY_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A table name split into its optional schema and its name, both validated. @internal */
export interface TableName {
  readonly schema: string | undefined;
  readonly name: string;
  /** `"schema"."name"` or `"name"`, ready for SQL. */
  readonly sql: string;
  /** As given: `schema.name` or `name`. */
  readonly text: string;
}

/**
 * Validates a table option: a plain identifier (letters, digits and `_`, not
 * starting with a digit, at most 63 characters), optionally qualified by a
 * schema (`app.civitas_state`). Quoted, so case is kept.
 * @throws {@link InvalidArgumentError} for anything else.
 * @internal
 */
export function tableName(option: string, value: unknown, component: string): TableName {
  const parts = typeof value === "string" ? value.split(".") : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new InvalidArgumentError(
      option,
      `${component} option ${option} must be a plain SQL identifier (letters, digits and _, not starting with a digit, at most 63 characters), optionally schema-qualified as schema.table, got ${describeValue(value)}`,
    );
  }
  const [first, second] = parts as [string, string | undefined];
  const schema = second === undefined ? undefined : first;
  const name = second ?? first;
  return { schema, name, sql: schema === undefined ? `"${name}"` : `"${schema}"."${name}"`, text: value as string };
}

/** A sibling object of `table` (an index, a sequence) in the same schema, quoted. @internal */
export function sibling(table: TableName, name: string): string {
  return table.schema === undefined ? `"${name}"` : `"${table.schema}"."${name}"`;
}

let driver: typeof pg | undefined;

/**
 * `pg`, loaded on first use: it is an optional peer dependency, and a missing
 * one should say how to install it, not fail the import of
 * `civitas-ts/postgres` with a module-resolution error.
 * @internal
 */
export function loadPg(component: string): typeof pg {
  if (driver !== undefined) return driver;
  try {
    driver = createRequire(import.meta.url)("pg") as typeof pg;
    return driver;
  } catch (err) {
    throw new StoreUnavailableError(
      "STORE_UNAVAILABLE",
      component,
      `${component} needs the optional dependency pg, which could not be loaded (${err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err)}); install it with: npm install pg@8`,
      { cause: err },
    );
  }
}

function timeout(option: string, value: unknown, fallback: number, component: string): number {
  const ms = value ?? fallback;
  if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError(option, `${component} option ${option} must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${describeValue(value)}`);
  }
  return ms;
}

/** A pool and whether the component owns it (made it, so ends it). @internal */
export interface OpenedPool {
  readonly pool: pg.Pool;
  readonly owned: boolean;
  /** How errors name the server: the connection string without its password, or `a given pg.Pool`. */
  readonly where: string;
}

/**
 * Makes the pool for `connection` (finite connection and query timeouts, an
 * `error` listener on the pool and on every client, so a connection the
 * server drops never becomes an uncaught exception), or takes the given one.
 * Connects nothing yet: the first query does.
 * @throws {@link InvalidArgumentError} for a bad connection or option;
 *   `STORE_UNAVAILABLE` when `pg` cannot be loaded.
 * @internal
 */
export function openPool(connection: unknown, options: PostgresPoolOptions, component: string, onError: (error: Error) => void): OpenedPool {
  const given = connection as { connectionString?: unknown; pool?: unknown } | null;
  if (typeof given !== "object" || given === null || (given.pool === undefined) === (given.connectionString === undefined)) {
    throw new InvalidArgumentError("connection", `${component} needs { connectionString } or { pool } (exactly one), got ${describeValue(connection)}`);
  }
  if (given.pool !== undefined) {
    const pool = given.pool as pg.Pool;
    if (typeof pool !== "object" || pool === null || typeof pool.query !== "function" || typeof pool.connect !== "function") {
      throw new InvalidArgumentError("pool", `${component} option pool must be a pg.Pool, got ${describeValue(given.pool)}`);
    }
    return { pool, owned: false, where: "a given pg.Pool" };
  }
  const connectionString = given.connectionString;
  if (typeof connectionString !== "string" || !/^postgres(ql)?:\/\//.test(connectionString)) {
    throw new InvalidArgumentError("connectionString", `${component} needs a connectionString like postgres://user@host:5432/db, got ${describeValue(connectionString)}`);
  }
  const connectionTimeoutMillis = timeout("connectionTimeoutMs", options.connectionTimeoutMs, DEFAULT_CONNECTION_TIMEOUT_MS, component);
  const queryTimeout = timeout("queryTimeoutMs", options.queryTimeoutMs, DEFAULT_QUERY_TIMEOUT_MS, component);
  const max = options.maxConnections ?? 10;
  if (!Number.isInteger(max) || max < 1) {
    throw new InvalidArgumentError("maxConnections", `${component} option maxConnections must be a whole number of at least 1, got ${describeValue(options.maxConnections)}`);
  }
  const { Pool } = loadPg(component);
  const pool = new Pool({ connectionString, connectionTimeoutMillis, query_timeout: queryTimeout, max, allowExitOnIdle: true });
  // Never the error itself in a log line: pg attaches the client, whose parameters include the password.
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
  return { pool, owned: true, where: redact(connectionString) };
}

/** The connection string without its password. @internal */
export function redact(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password !== "") url.password = "***";
    return url.toString();
  } catch {
    return "postgres://…";
  }
}

/**
 * Runs `body` on one checked-out client, with an `error` listener for the
 * time it is checked out (pg-pool removes its own then), and releases it;
 * a client that failed is destroyed, not reused.
 * @internal
 */
export async function withClient<T>(pool: pg.Pool, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let failure: unknown;
  const listener = (error: Error): void => {
    failure = error;
  };
  client.on("error", listener);
  try {
    return await body(client);
  } catch (error) {
    failure ??= error;
    throw error;
  } finally {
    client.off("error", listener);
    // A failed statement inside a rolled-back transaction leaves a usable client; a broken connection does not.
    client.release(failure !== undefined && !isSqlError(failure) ? (failure as Error) : undefined);
  }
}

/** Whether `error` came from the server as an SQL error (it has a 5-character SQLSTATE), rather than from the connection. @internal */
export function isSqlError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !(error instanceof CivitasError);
}

/** SQLSTATEs of a missing schema (`invalid_schema_name`) and a missing table (`undefined_table`). */
const MISSING_OBJECT: Record<string, string> = { "3F000": "a schema it needs does not exist", "42P01": "a table it needs does not exist" };

/**
 * The error for a failed call: names what was being done, where, and what to
 * check. A missing schema or table (SQLSTATE 3F000, 42P01) is
 * `STORE_SCHEMA_MISSING` naming it, with `setup` (how this component's
 * tables are created) as the fix; anything else is `STORE_UNAVAILABLE`. A
 * {@link CivitasError} is passed through.
 * @internal
 */
export function unavailable(component: string, where: string, doing: string, error: unknown, setup?: string): CivitasError {
  if (error instanceof CivitasError) return error;
  const why = error instanceof Error ? error.message : describeValue(error);
  const sqlstate = (error as { code?: unknown } | null)?.code;
  const missing = typeof sqlstate === "string" ? MISSING_OBJECT[sqlstate] : undefined;
  if (missing !== undefined) {
    // pg's message names the object: 'relation "app.t" does not exist', 'schema "app" does not exist'.
    const named = /^(?:relation|schema) "([^"]+)"/.exec(why)?.[1];
    const what = sqlstate === "3F000" ? `schema "${named ?? "?"}"` : `table ${named ?? "?"}`;
    return new StoreSchemaMissingError(
      component,
      what,
      `${component}: ${doing} failed on ${where}: ${why} (SQLSTATE ${sqlstate as string}: ${missing}, the server is up). ${setup ?? "Create it, or check the table options"}`,
      { cause: error },
    );
  }
  return new StoreUnavailableError(
    "STORE_UNAVAILABLE",
    component,
    `${component}: ${doing} failed on ${where}: ${why}; check that the PostgreSQL server is running and reachable, and that the connection string, user and database are right`,
    { cause: error },
  );
}

/** Reads a `bigint` column (pg returns int8 as a string) as a safe integer. @internal */
export function int8(value: unknown): number {
  const n = typeof value === "string" ? Number(value) : (value as number);
  return n;
}
