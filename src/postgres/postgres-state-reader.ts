/**
 * Read-only access to a `PostgresStateStore` table for the `civitas state`
 * commands: it never creates, migrates or writes anything (the store would
 * create its schema on first use; the CLI must not).
 * @module
 */
import type pg from "pg";
import type { JsonObject } from "../message/json.js";
import { decodeState } from "../state/state-record.js";
import { loadPg, redact, unavailable, type TableName } from "./pg-connection.js";

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

/**
 * Reads the state table `t` through `pool` (opened on `uri`), read-only;
 * `undefined`, with the pool ended, when the table does not exist.
 */
export async function openPostgresReader(pool: pg.Pool, uri: string, t: TableName): Promise<PostgresReader | undefined> {
  const label = `PostgreSQL store ${redact(uri)}`;
  pool.on("error", () => undefined); // an idle connection dropped: the next query fails (and says so) or reconnects
  const query = async <R extends pg.QueryResultRow>(doing: string, text: string, values: unknown[] = []): Promise<R[]> => {
    try {
      return (await pool.query<R>(text, values)).rows;
    } catch (err) {
      throw unavailable(label, redact(uri), doing, err, `'civitas state migrate --store <uri> --table ${t.text}' creates the table; or pass --table <name>`);
    }
  };
  try {
    const exists = await tableExists(pool, t).catch((err: unknown) => {
      throw unavailable(label, redact(uri), "opening the store", err, `'civitas state migrate --store <uri> --table ${t.text}' creates the table; or pass --table <name>`);
    });
    if (!exists) {
      await pool.end();
      return undefined;
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
 * Whether the table (or any relation) `t` exists on the server behind `pool`,
 * read-only; the query's error, unwrapped, when the server cannot answer.
 * @internal
 */
export async function tableExists(pool: pg.Pool, t: TableName): Promise<boolean> {
  const found = await pool.query<{ oid: string | null }>("SELECT to_regclass($1)::text AS oid", [t.sql]);
  return (found.rows[0]?.oid ?? null) !== null;
}

/**
 * One connection for a CLI command on `uri`, with finite connect and query
 * timeouts, that lets the process exit when idle. Its idle errors are left
 * to the queries, which report them.
 * @throws {@link StoreUnavailableError} when pg cannot be loaded
 */
export function readOnlyPool(uri: string, queryTimeoutMs: number): pg.Pool {
  const { Pool } = loadPg("civitas");
  return new Pool({ connectionString: uri, connectionTimeoutMillis: 5000, query_timeout: queryTimeoutMs, max: 1, allowExitOnIdle: true });
}
