/**
 * The CLI's side of reading PostgreSQL: the reader and the pool of
 * `src/postgres/`, with the CLI's exit codes for a bad `--table`, a missing
 * table and a missing pg driver.
 * @module
 */
import type pg from "pg";
import { InvalidArgumentError } from "../errors/errors.js";
import { StoreUnavailableError } from "../state/store-unavailable-error.js";
import { redact, tableName } from "../postgres/pg-connection.js";
import { openPostgresReader, readOnlyPool, type PostgresReader } from "../postgres/postgres-state-reader.js";
import { CliError, ExitCode, usageError } from "./output.js";

/** Opens the state table `table` (`civitas_state` unless given) on `uri`, read-only (30 s query timeout). */
export async function openPostgresStore(uri: string, table: string | undefined): Promise<PostgresReader> {
  let t;
  try {
    t = tableName("table", table ?? "civitas_state", "--table");
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw usageError(`--table must be a plain SQL identifier, optionally schema-qualified (schema.table), got '${String(table)}'`);
    throw err;
  }
  const reader = await openPostgresReader(cliPool(uri, 30_000), uri, t);
  if (reader === undefined) {
    throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `PostgreSQL store ${redact(uri)} has no table ${t.text}: it holds no civitas state (or pass --table <name>; 'civitas state migrate' creates it)`);
  }
  return reader;
}

/**
 * One connection for a CLI command on `uri` ({@link readOnlyPool}); a usage
 * error naming the install command when pg is missing.
 * @internal
 */
export function cliPool(uri: string, queryTimeoutMs: number): pg.Pool {
  try {
    return readOnlyPool(uri, queryTimeoutMs);
  } catch (err) {
    if (!(err instanceof StoreUnavailableError)) throw err;
    throw new CliError(ExitCode.USAGE, "USAGE", "the postgres:// store needs the optional dependency pg; install it with: npm install pg@8", { cause: err });
  }
}
