/**
 * `civitas state list | show | suspended --store <uri>`: read-only views of
 * a state store. The SQLite file is opened read-only (`readonly`,
 * `fileMustExist`), so the CLI never creates, migrates or modifies a store.
 * @module
 */
import type BetterSqlite3 from "better-sqlite3";
import { CivitasError } from "../errors/civitas-error.js";
import type { JsonObject } from "../message/json.js";
import { readMarker, SUSPENSION_KEY } from "../process/suspension.js";
import { decodeState } from "../state/state-record.js";
import { CliError, ExitCode, table, usageError, type CommandResult } from "./output.js";

/** The store URI schemes the CLI understands. */
const SCHEMES = ["sqlite:<path>"];
const DEFAULT_TABLE = "civitas_state";
const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Where to read state from, as given by `--store` and `--table`. */
export interface StoreOptions {
  /** `sqlite:<path>`. */
  store: string | undefined;
  /** The SQLite table, `civitas_state` unless given. */
  table: string | undefined;
}

/** The read-only part of a state store the commands need. */
interface StoreReader {
  list(): string[];
  get(name: string): JsonObject | undefined;
  close(): void;
}

interface RecordRow {
  version: unknown;
  state: unknown;
}

async function openStore(options: StoreOptions): Promise<StoreReader> {
  const uri = options.store;
  if (uri === undefined || uri === "") {
    throw usageError(`--store is required; supported: ${SCHEMES.join(", ")}`);
  }
  if (!uri.startsWith("sqlite:")) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1];
    throw usageError(
      `${scheme === undefined ? `'${uri}' names no store scheme` : `store scheme '${scheme}:' is not supported`}; supported: ${SCHEMES.join(", ")}`,
    );
  }
  const path = uri.slice("sqlite:".length);
  if (path === "") throw usageError(`--store sqlite: needs a file path: --store sqlite:./state.db`);
  const tableName = options.table ?? DEFAULT_TABLE;
  if (!SQL_IDENTIFIER.test(tableName)) throw usageError(`--table must be a plain SQL identifier, got '${tableName}'`);

  let Database: typeof BetterSqlite3;
  try {
    Database = (await import("better-sqlite3")).default;
  } catch (err) {
    throw new CliError(
      ExitCode.USAGE,
      "USAGE",
      "the sqlite: store needs the optional dependency better-sqlite3; install it with: npm install better-sqlite3",
      { cause: err },
    );
  }
  let db: BetterSqlite3.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `cannot open the SQLite store '${path}': ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(tableName);
    if (exists === undefined) {
      throw new CliError(
        ExitCode.CORRUPT,
        "UNREADABLE",
        `'${path}' has no table '${tableName}': it is not a civitas state store (or pass --table <name>)`,
      );
    }
    const selectOne = db.prepare<[string], RecordRow>(`SELECT version, state FROM "${tableName}" WHERE name = ?`);
    const selectNames = db.prepare<[], string>(`SELECT name FROM "${tableName}"`).pluck();
    return {
      list: () => selectNames.all().sort(),
      get: (name) => {
        const row = selectOne.get(name);
        return row === undefined ? undefined : decodeState(name, row.version, row.state);
      },
      close: () => db.close(),
    };
  } catch (err) {
    db.close();
    if (err instanceof CliError) throw err;
    throw new CliError(ExitCode.CORRUPT, "UNREADABLE", `cannot read the SQLite store '${path}': ${(err as Error).message}`, {
      cause: err,
    });
  }
}

async function withStore(options: StoreOptions, body: (store: StoreReader) => CommandResult): Promise<CommandResult> {
  const store = await openStore(options);
  try {
    return body(store);
  } finally {
    store.close();
  }
}

/** `civitas state list`: the names that have state, sorted, one per line. */
export async function stateList(options: StoreOptions): Promise<CommandResult> {
  return withStore(options, (store) => {
    const names = store.list();
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
  return withStore(options, (store) => {
    const state = store.get(name);
    if (state === undefined) {
      throw new CliError(ExitCode.NOT_FOUND, "NOT_FOUND", `no state named '${name}' in ${String(options.store)}`);
    }
    return { exitCode: ExitCode.OK, text: JSON.stringify(state, null, 2), json: { store: options.store, name, state } };
  });
}

/**
 * `civitas state suspended`: the agents whose stored state holds a
 * suspension marker (`_civitas.suspended`). Records that cannot be read are
 * listed as errors after the others, and make the exit code 3.
 */
export async function stateSuspended(options: StoreOptions): Promise<CommandResult> {
  return withStore(options, (store) => {
    const suspended: { name: string; reason: string; since: string; suspensionId: string }[] = [];
    const errors: { name: string; code: string; message: string }[] = [];
    for (const name of store.list()) {
      try {
        const state = store.get(name);
        const marker = state === undefined ? undefined : readMarker(name, state);
        if (marker !== undefined) {
          suspended.push({ name, reason: marker.reason, since: marker.since, suspensionId: marker.suspensionId });
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
            ["NAME", "REASON", "SINCE", "SUSPENSION"],
            suspended.map((s) => [s.name, s.reason, s.since, s.suspensionId]),
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
