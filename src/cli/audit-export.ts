/**
 * `civitas audit export --store postgres://… [--table T] [--out file]`: writes
 * the chain of a `PostgresAuditSink` as a JSONL log, byte for byte the lines
 * a `JsonlAuditSink` would have written, which `civitas audit verify`,
 * `verifyAuditLog` and `verifySuspension` read unchanged. Read-only.
 * @module
 */
import { open } from "node:fs/promises";
import { auditTables, readAuditLines } from "../postgres/postgres-audit-sink.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { redact, unavailable } from "../postgres/pg-connection.js";
import { tableExists } from "../postgres/postgres-state-reader.js";
import { cliPool } from "./open-postgres.js";
import { CliError, ExitCode, usageError, type CommandResult } from "./output.js";

/** What `civitas audit export` was told. */
export interface ExportOptions {
  store: string | undefined;
  table: string | undefined;
  /** The file to write; stdout when absent. */
  out: string | undefined;
  /** Whether `--json` was given (stdout then carries the JSON result, so `--out` is needed). */
  json: boolean;
}

const BATCH_BYTES = 1 << 20;

/**
 * Exports the chain. Exit 0 when written (the row count goes to stderr when
 * the log goes to stdout), 2 for a bad command line, 3 when the server or the
 * table cannot be read.
 */
export async function auditExport(options: ExportOptions): Promise<CommandResult> {
  const uri = options.store;
  if (uri === undefined || !(uri.startsWith("postgres://") || uri.startsWith("postgresql://"))) {
    throw usageError(`audit export needs --store postgres://user@host:port/database (the database of a PostgresAuditSink), got '${String(uri)}'`);
  }
  if (options.json && options.out === undefined) throw usageError("--json prints the result on stdout, so the log needs --out <file>");
  let tables;
  try {
    tables = auditTables(options.table, "--table");
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw usageError(err.message);
    throw err;
  }
  const where = redact(uri);
  const label = `audit chain ${tables.rows.text} on ${where}`;
  const pool = cliPool(uri, 60_000);
  pool.on("error", () => undefined);
  const file = options.out === undefined ? undefined : await open(options.out, "w");
  let rows = 0;
  try {
    const exists = await tableExists(pool, tables.rows).catch((err: unknown) => {
      throw unavailable(label, where, "opening the chain", err);
    });
    if (!exists) throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `${where} has no table ${tables.rows.text}: no PostgresAuditSink wrote there (or pass --table <name>)`);
    let chunk = "";
    const flush = async (): Promise<void> => {
      if (chunk === "") return;
      if (file !== undefined) await file.write(chunk);
      else if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once("drain", resolve));
      chunk = "";
    };
    for await (const line of readAuditLines(pool, tables.rows, label, where)) {
      chunk += `${line}\n`;
      rows++;
      if (chunk.length >= BATCH_BYTES) await flush();
    }
    await flush();
    await file?.sync();
  } finally {
    await file?.close();
    await pool.end();
  }
  const text = `exported ${rows} row${rows === 1 ? "" : "s"} of ${label}${options.out === undefined ? "" : ` to ${options.out}`}`;
  return { exitCode: ExitCode.OK, text, toStderr: options.out === undefined, json: { store: where, table: tables.rows.text, rows, out: options.out ?? null } };
}
