/**
 * `civitas state list | show | suspended --store <uri>`: read-only views of
 * a state store. The SQLite file is opened read-only (`readonly`,
 * `fileMustExist`) and a PostgreSQL table is only read, so these commands
 * never create, migrate or modify a store; `civitas state migrate` is the one
 * that creates a store's schema.
 * @module
 */
import { CivitasError } from "../errors/civitas-error.js";
import type { JsonObject } from "../message/json.js";
import { readMarker, SUSPENSION_KEY } from "../state/suspension-marker.js";
import { decodeState, STATE_RECORD_VERSION } from "../state/state-record.js";
import { isSqliteTableName, openSqliteReader } from "../sqlite/sqlite-state-reader.js";
import { cell, CliError, ExitCode, table, usageError, type CommandResult } from "./output.js";

/** The store URI schemes the CLI understands. */
const SCHEMES = ["sqlite:<path>", "postgres://user@host:port/database"];
const DEFAULT_TABLE = "civitas_state";

/** Where to read state from, as given by `--store` and `--table`. */
export interface StoreOptions {
  /** `sqlite:<path>` or `postgres://…`. */
  store: string | undefined;
  /** The table, `civitas_state` unless given. */
  table: string | undefined;
}

/** The read-only part of a state store the commands need. */
export interface StoreReader {
  list(): Promise<string[]>;
  get(name: string): Promise<JsonObject | undefined>;
  /** The stored markers in one query, for a store that keeps them in their own column. */
  suspended?(): Promise<{ name: string; marker: string }[]>;
  close(): Promise<void>;
}

const isPostgres = (uri: string): boolean => uri.startsWith("postgres://") || uri.startsWith("postgresql://");

/**
 * Opens the store `--store` names, read-only.
 * @throws {@link CliError} for a missing or unsupported `--store`, a missing file or table.
 */
export async function openStore(options: StoreOptions): Promise<StoreReader> {
  const uri = options.store;
  if (uri === undefined || uri === "") {
    throw usageError(`--store is required; supported: ${SCHEMES.join(", ")}`);
  }
  if (isPostgres(uri)) return (await import("./open-postgres.js")).openPostgresStore(uri, options.table);
  if (!uri.startsWith("sqlite:")) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1];
    throw usageError(
      `${scheme === undefined ? `'${uri}' names no store scheme` : `store scheme '${scheme}:' is not supported`}; supported: ${SCHEMES.join(", ")}`,
    );
  }
  const path = uri.slice("sqlite:".length);
  if (path === "") throw usageError(`--store sqlite: needs a file path: --store sqlite:./state.db`);
  const tableName = options.table ?? DEFAULT_TABLE;
  if (!isSqliteTableName(tableName)) throw usageError(`--table must be a plain SQL identifier, got '${tableName}'`);
  const opening = await openSqliteReader(path, tableName);
  if ("reader" in opening) return opening.reader;
  switch (opening.failed) {
    case "driver":
      throw new CliError(
        ExitCode.USAGE,
        "USAGE",
        "the sqlite: store needs the optional dependency better-sqlite3; install it with: npm install better-sqlite3",
        { cause: opening.cause },
      );
    case "open":
      throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `cannot open the SQLite store '${path}': ${(opening.cause as Error).message}`, {
        cause: opening.cause,
      });
    case "table":
      throw new CliError(
        ExitCode.CORRUPT,
        "UNREADABLE",
        `'${path}' has no table '${tableName}': it is not a civitas state store (or pass --table <name>)`,
      );
    case "read":
      throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `cannot read the SQLite store '${path}': ${(opening.cause as Error).message}`, {
        cause: opening.cause,
      });
  }
}

async function withStore(options: StoreOptions, body: (store: StoreReader) => Promise<CommandResult>): Promise<CommandResult> {
  const store = await openStore(options);
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

/** `civitas state list`: the names that have state, sorted, one per line. */
export async function stateList(options: StoreOptions): Promise<CommandResult> {
  return withStore(options, async (store) => {
    const names = await store.list();
    return {
      exitCode: ExitCode.OK,
      text: names.length === 0 ? "(no agent has stored state)" : names.join("\n"),
      json: { store: options.store, names },
    };
  });
}

/**
 * `civitas state show <name>`: the stored state as JSON. Exit 4 when the
 * store holds no state for `name`, 3 when the record is refused (`STATE_SCHEMA`).
 */
export async function stateShow(name: string, options: StoreOptions): Promise<CommandResult> {
  return withStore(options, async (store) => {
    const state = await store.get(name);
    if (state === undefined) {
      throw new CliError(ExitCode.NOT_FOUND, "NOT_FOUND", `no state named '${name}' in ${String(options.store)}`);
    }
    return { exitCode: ExitCode.OK, text: JSON.stringify(state, null, 2), json: { store: options.store, name, state } };
  });
}

/**
 * `civitas state suspended`: the agents whose stored state holds a
 * suspension marker (`_civitas.suspended`), with each pause's deadline
 * (`expiresAt`, `-`/`null` for none: then only a decision ends it). Records that cannot be read are
 * listed as errors after the others, and make the exit code 3.
 */
export async function stateSuspended(options: StoreOptions): Promise<CommandResult> {
  return withStore(options, async (store) => {
    const suspended: { name: string; reason: string; since: string; expiresAt: string | null; suspensionId: string }[] = [];
    const errors: { name: string; code: string; message: string }[] = [];
    // A store with a marker column answers in one query; otherwise every record is read.
    const markers = store.suspended === undefined ? undefined : await store.suspended();
    const read = async (name: string): Promise<JsonObject | undefined> => {
      const text = markers?.find((m) => m.name === name)?.marker;
      return markers === undefined ? store.get(name) : decodeState(name, STATE_RECORD_VERSION, `{${JSON.stringify(SUSPENSION_KEY)}:${String(text)}}`);
    };
    for (const name of markers === undefined ? await store.list() : markers.map((m) => m.name)) {
      try {
        const state = await read(name);
        const marker = state === undefined ? undefined : readMarker(name, state);
        if (marker !== undefined) {
          suspended.push({ name, reason: marker.reason, since: marker.since, expiresAt: marker.expiresAt ?? null, suspensionId: marker.suspensionId });
        }
      } catch (err) {
        if (!(err instanceof CivitasError)) throw err;
        errors.push({ name, code: err.code, message: err.message });
      }
    }
    const lines = [
      suspended.length === 0
        ? `no agent is suspended (no stored state holds a '${SUSPENSION_KEY}' marker)`
        : table(
            ["NAME", "REASON", "SINCE", "EXPIRES", "SUSPENSION"],
            suspended.map((s) => [s.name, s.reason, s.since, cell(s.expiresAt), s.suspensionId]),
          ),
    ];
    if (errors.length > 0) lines.push("", "unreadable records:", ...errors.map((e) => `  - ${e.name}: ${e.code}: ${e.message}`));
    return {
      exitCode: errors.length > 0 ? ExitCode.CORRUPT : ExitCode.OK,
      text: lines.join("\n"),
      json: { store: options.store, ok: errors.length === 0, suspended, errors },
    };
  });
}

/**
 * `civitas state migrate --store <uri>`: creates the store's table (and, on
 * PostgreSQL, its marker index and the fence sequence) if missing, checking
 * an existing table's shape; changes nothing else. Idempotent. Exit 3 for a
 * table of another shape or an unreachable server.
 */
export async function stateMigrate(options: StoreOptions): Promise<CommandResult> {
  const uri = options.store;
  if (uri === undefined || uri === "") throw usageError(`--store is required; supported: ${SCHEMES.join(", ")}`);
  const table = options.table ?? DEFAULT_TABLE;
  if (isPostgres(uri)) {
    const { PostgresStateStore } = await import("../postgres/postgres-state-store.js");
    const store = new PostgresStateStore({ connectionString: uri }, { table });
    try {
      await store.migrate();
    } finally {
      await store.close();
    }
  } else if (uri.startsWith("sqlite:") && uri.length > "sqlite:".length) {
    const { SqliteStateStore } = await import("../sqlite/sqlite-state-store.js");
    await new SqliteStateStore(uri.slice("sqlite:".length), { table }).close();
  } else {
    throw usageError(`--store must be one of: ${SCHEMES.join(", ")}; got '${uri}'`);
  }
  return { exitCode: ExitCode.OK, text: `migrated: table ${table} of the store is ready`, json: { store: uri, table, migrated: true } };
}
