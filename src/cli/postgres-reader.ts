/**
 * Read-only access to a `PostgresStateStore` table for the `civitas state`
 * commands: it never creates, migrates or writes anything (the store would
 * create its schema on first use; the CLI must not).
 * @module
 */
import type pg from "pg";
import { InvalidArgumentError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import { loadPg, redact, tableName, unavailable } from "../postgres/pg-connection.js";
import { decodeState } from "../state/state-record.js";
import { CliError, ExitCode, usageError } from "./output.js";

/** A stored marker column, as read: the agent and the marker's JSON text. */
export interface MarkerRow {
  name: string;
  marker: string;
}

/** What the state commands read from a PostgreSQL store. */
export interface PostgresReader {
  list(): Promise<string[]>;
  get(name: string): Promise<JsonObject | undefined>;
  /** The rows whose marker column is set: one query on the partial index. */
  suspended(): Promise<MarkerRow[]>;
  close(): Promise<void>;
}

/** Opens a pool on `uri` (5 s connection timeout) and checks that `table` exists, read-only. */
export async function openPostgresReader(uri: string, table: string | undefined): Promise<PostgresReader> {
  let t;
  try {
    t = tableName("table", table ?? "civitas_state", "--table");
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw usageError(`--table must be a plain SQL identifier, optionally schema-qualified (schema.table), got '${String(table)}'`);
    throw err;
  }
  const label = `PostgreSQL store ${redact(uri)}`;
  const pool = cliPool(uri, 30_000);
  pool.on("error", () => undefined); // an idle connection dropped: the next query fails (and says so) or reconnects
  const query = async <R extends pg.QueryResultRow>(doing: string, text: string, values: unknown[] = []): Promise<R[]> => {
    try {
      return (await pool.query<R>(text, values)).rows;
    } catch (err) {
      throw unavailable(label, redact(uri), doing, err);
    }
  };
  try {
    const found = await query<{ oid: string | null }>("opening the store", "SELECT to_regclass($1)::text AS oid", [t.sql]);
    if ((found[0]?.oid ?? null) === null) {
      throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `${label} has no table ${t.text}: it holds no civitas state (or pass --table <name>; 'civitas state migrate' creates it)`);
    }
  } catch (err) {
    await pool.end();
    throw err;
  }
  return {
    list: async () => (await query<{ name: Buffer }>("listing", `SELECT name FROM ${t.sql} WHERE state IS NOT NULL`)).map((r) => r.name.toString("utf8")).sort(),
    get: async (name) => {
      const rows = await query<{ version: unknown; state: string | null }>("reading", `SELECT version, state FROM ${t.sql} WHERE name = $1`, [Buffer.from(name, "utf8")]);
      const row = rows[0];
      return row === undefined || row.state === null ? undefined : decodeState(name, row.version, row.state);
    },
    suspended: async () =>
      (await query<{ name: Buffer; suspended: string }>("listing suspensions", `SELECT name, suspended FROM ${t.sql} WHERE suspended IS NOT NULL`))
        .map((r) => ({ name: r.name.toString("utf8"), marker: r.suspended }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    close: () => pool.end(),
  };
}

/**
 * One connection for a CLI command on `uri`, with finite connect and query
 * timeouts, that lets the process exit when idle; a usage error naming the
 * install command when pg is missing. Its idle errors are left to the
 * queries, which report them.
 * @internal
 */
export function cliPool(uri: string, queryTimeoutMs: number): pg.Pool {
  let Pool: typeof pg.Pool;
  try {
    Pool = loadPg("civitas").Pool;
  } catch (err) {
    throw new CliError(ExitCode.USAGE, "USAGE", "the postgres:// store needs the optional dependency pg; install it with: npm install pg@8", { cause: err });
  }
  return new Pool({ connectionString: uri, connectionTimeoutMillis: 5000, query_timeout: queryTimeoutMs, max: 1, allowExitOnIdle: true });
}
