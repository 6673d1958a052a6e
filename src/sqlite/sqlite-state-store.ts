import { createRequire } from "node:module";
import type Database from "better-sqlite3";
import { CivitasError, describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import { checkClock, isoTime, systemClock, type Clock } from "../time/clock.js";
import { readAhead, RowsAhead, type ReadsAhead } from "../state/read-ahead.js";
import { assertStateName, decodeState, encodeState, STATE_RECORD_VERSION } from "../state/state-record.js";
import type { StateStore } from "../state/state-store.js";
import { StoreClosedError } from "../state/store-closed-error.js";
import { StoreUnavailableError } from "../state/store-unavailable-error.js";

/** Options of {@link SqliteStateStore}. */
export interface SqliteStateStoreOptions {
  /**
   * The table that holds the records; created if missing. A plain SQL
   * identifier: letters, digits and `_`, not starting with a digit or with
   * `sqlite_`, at most 128 characters.
   * @defaultValue `"civitas_state"`
   */
  table?: string;
  /**
   * Where the `updated_at` column's time comes from.
   * @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * How long a call waits for another connection (another process on the
   * same file) to release the database's write lock before it rejects with
   * `STORE_BUSY`. A whole number of milliseconds.
   * @defaultValue 5000
   */
  busyTimeoutMs?: number;
}

interface ColumnInfo {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

/** The columns of the records table: declared type, `NOT NULL`, and whether it is the primary key. */
const COLUMNS: Record<string, { type: string; notNull: boolean; pk: boolean }> = {
  name: { type: "TEXT", notNull: false, pk: true },
  version: { type: "INTEGER", notNull: true, pk: false },
  state: { type: "TEXT", notNull: true, pk: false },
  updated_at: { type: "TEXT", notNull: true, pk: false },
};

/**
 * A record as its statements return it, a tuple (`raw()`): building an
 * object per row costs better-sqlite3 a property definition per column,
 * a third of reading a row ahead.
 */
type RecordRow = [version: unknown, state: unknown];

/** A record read ahead: its name after the columns {@link RecordRow} has. */
type NamedRecordRow = [version: unknown, state: unknown, name: string];

function nameOfRow(row: NamedRecordRow): string {
  return row[2];
}

const DEFAULT_TABLE = "civitas_state";
const DEFAULT_BUSY_TIMEOUT_MS = 5000;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * A durable {@link StateStore} in an SQLite file (better-sqlite3 12): the
 * embedded durable default, for one process (or a few on one machine) that
 * must keep agents' state and suspension markers across crashes and restarts.
 *
 * - The database runs with `journal_mode=WAL` and `synchronous=FULL`: a
 *   `set` that resolved has been fsync'ed and survives a crash of the process
 *   and of the machine.
 * - `set` is one prepared `INSERT … ON CONFLICT(name) DO UPDATE` statement,
 *   so after a crash a record holds either the whole new state or the whole
 *   previous one.
 * - Records carry a schema version (`STATE_RECORD_VERSION`); `get` refuses a
 *   record of an unknown version, or one that is not a JSON object, with
 *   `STATE_SCHEMA` and leaves the row untouched.
 *
 * The table has the columns `name TEXT PRIMARY KEY, version INTEGER NOT NULL,
 * state TEXT NOT NULL, updated_at TEXT NOT NULL` (ISO-8601 UTC with
 * milliseconds). Calls are synchronous underneath and run one at a time.
 * The runtime never closes a store it was given: close it yourself after
 * `runtime.stop()`.
 *
 * @example
 * ```ts
 * import { SqliteStateStore } from "civitas-ts/sqlite";
 *
 * const store = new SqliteStateStore("./state.db");
 * const runtime = new Runtime({ root, store });
 * await runtime.start();
 * // ...
 * await runtime.stop();
 * await store.close();
 * ```
 */
export class SqliteStateStore implements StateStore, ReadsAhead {
  /**
   * Always `true`: a `set` that resolved is fsync'ed to disk.
   * @defaultValue `true`
   */
  readonly durable = true;
  /** The database file this store was opened on. */
  readonly path: string;
  /** The table that holds the records. */
  readonly table: string;

  private readonly db: Database.Database;
  private readonly clock: Clock;
  private readonly busyTimeoutMs: number;
  /** How errors name this store: `SqliteStateStore('<path>')`. */
  private readonly label: string;
  private readonly selectOne: Database.Statement<[string], RecordRow>;
  private readonly upsert: Database.Statement<[string, number, string, string]>;
  private readonly deleteOne: Database.Statement<[string]>;
  private readonly selectNames: Database.Statement<[], string>;
  private readonly selectMany: Database.Statement<[string], NamedRecordRow>;
  /** Records read ahead for a starting tree (see {@link readAhead}). */
  private ahead: RowsAhead<NamedRecordRow> | undefined;
  private closed = false;

  /**
   * Opens (creating if needed) the database at `path` and its table. An
   * existing table must have the documented columns; it is checked before
   * the file is changed in any way (such as being switched to WAL).
   *
   * @param path - the SQLite file; its directory must exist. `":memory:"` and
   *   other non-file databases are refused: use `InMemoryStateStore` instead.
   * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad `path`,
   *   `options`, `table`, `clock` or `busyTimeoutMs`.
   * @throws {@link StoreUnavailableError} (`STORE_UNAVAILABLE`) when the file
   *   cannot be opened (a directory, a missing directory, not an SQLite
   *   database) or its table has another shape; `STORE_BUSY` when another
   *   connection holds the write lock past `busyTimeoutMs`.
   */
  constructor(path: string, options: SqliteStateStoreOptions = {}) {
    if (typeof path !== "string" || path.length === 0 || path === ":memory:") {
      throw new InvalidArgumentError(
        "path",
        `new SqliteStateStore(path) needs the path of a database file, got ${describeValue(path)}; for a store that need not survive the process use InMemoryStateStore`,
      );
    }
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError("options", `new SqliteStateStore(path, options) takes an options object (or nothing), got ${describeValue(options)}`);
    }
    const table = options.table === undefined ? DEFAULT_TABLE : options.table;
    if (typeof table !== "string" || !SQL_IDENTIFIER.test(table) || table.toLowerCase().startsWith("sqlite_")) {
      throw new InvalidArgumentError(
        "table",
        `SqliteStateStore option table must be a plain SQL identifier (letters, digits and _, not starting with a digit or 'sqlite_', at most 128 characters), got ${describeValue(table)}`,
      );
    }
    const clock = checkClock(options.clock ?? systemClock, "SqliteStateStore");
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > MAX_TIMEOUT_MS) {
      throw new InvalidArgumentError("busyTimeoutMs", `SqliteStateStore option busyTimeoutMs must be a whole number of milliseconds from 0 to ${MAX_TIMEOUT_MS}, got ${describeValue(busyTimeoutMs)}`);
    }
    this.path = path;
    this.label = `SqliteStateStore('${path}')`;
    this.table = table;
    this.clock = clock;
    this.busyTimeoutMs = busyTimeoutMs;

    let db: Database.Database;
    try {
      const Driver = loadDriver(this.label);
      db = new Driver(path, { timeout: busyTimeoutMs });
    } catch (err) {
      throw err instanceof CivitasError ? err : this.failure("opening the database", err);
    }
    try {
      const quoted = `"${table}"`;
      this.checkTable(db.prepare<[], ColumnInfo>(`PRAGMA table_info(${quoted})`).all());
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (typeof mode !== "string" || mode.toLowerCase() !== "wal") {
        throw new InvalidArgumentError(
          "path",
          `SqliteStateStore could not put '${path}' in WAL mode (journal_mode is ${String(mode)}); pass the path of an ordinary database file`,
        );
      }
      db.pragma("synchronous = FULL");
      db.exec(
        `CREATE TABLE IF NOT EXISTS ${quoted} (
          name TEXT PRIMARY KEY,
          version INTEGER NOT NULL,
          state TEXT NOT NULL,
          updated_at TEXT NOT NULL
        )`,
      );
      this.selectOne = db.prepare<[string], RecordRow>(`SELECT version, state FROM ${quoted} WHERE name = ?`).raw();
      this.upsert = db.prepare<[string, number, string, string]>(
        `INSERT INTO ${quoted} (name, version, state, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET version = excluded.version, state = excluded.state, updated_at = excluded.updated_at`,
      );
      this.deleteOne = db.prepare<[string]>(`DELETE FROM ${quoted} WHERE name = ?`);
      this.selectNames = db.prepare<[], string>(`SELECT name FROM ${quoted}`).pluck();
      this.selectMany = db.prepare<[string], NamedRecordRow>(`SELECT version, state, name FROM ${quoted} WHERE name IN (SELECT value FROM json_each(?))`).raw();
    } catch (err) {
      db.close();
      throw err instanceof CivitasError ? err : this.failure("opening the database", err);
    }
    this.db = db;
  }

  /**
   * The state last set for `name`, decoded afresh, or `undefined`.
   * @throws (rejects) `STATE_SCHEMA` ({@link StateSchemaError}) when the stored record has an
   *   unknown version or is not a plain JSON object — the row is left as it is;
   *   `INVALID_ARGUMENT` for a bad name; `STORE_CLOSED` after `close()`;
   *   `STORE_BUSY` / `STORE_UNAVAILABLE` ({@link StoreUnavailableError}) when SQLite fails.
   */
  async get(name: string): Promise<JsonObject | undefined> {
    this.assertOpen();
    assertStateName(name);
    const ahead = this.ahead?.take(name);
    const row = ahead === undefined ? this.sqlite("reading", () => this.selectOne.get(name)) : (ahead ?? undefined);
    return row === undefined ? undefined : decodeState(name, row[0], row[1]);
  }

  /**
   * Reads the records of `names` a chunk per query, for the `get` of each
   * during a runtime's start (see {@link readAhead}). Reads nothing when
   * closed or when another read-ahead is still in use; a chunk whose query
   * fails is read by each `get` on its own, which reports the failure.
   * @internal
   */
  [readAhead](names: readonly string[]): () => void {
    if (this.closed || this.ahead !== undefined) return nothingRead;
    const ahead = new RowsAhead<NamedRecordRow>(names, (chunk) => this.selectMany.iterate(JSON.stringify(chunk)), nameOfRow);
    this.ahead = ahead;
    return () => {
      if (this.ahead === ahead) this.ahead = undefined;
    };
  }

  /**
   * Replaces the state of `name` in one atomic, fsync'ed statement.
   * @throws (rejects) `PAYLOAD_NOT_SERIALIZABLE` when `state` is not plain JSON (nothing is written),
   *   `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`;
   *   `STORE_BUSY` when another connection holds the write lock past `busyTimeoutMs`, and
   *   `STORE_UNAVAILABLE` for any other SQLite failure (the record is then as it was).
   */
  async set(name: string, state: JsonObject): Promise<void> {
    this.assertOpen();
    assertStateName(name);
    this.ahead?.drop(name);
    const text = encodeState(name, state);
    const updatedAt = isoTime(this.clock.now());
    this.sqlite("writing", () => this.upsert.run(name, STATE_RECORD_VERSION, text, updatedAt));
  }

  /**
   * Removes the state of `name`; a no-op when there is none.
   * @throws (rejects) `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`,
   *   `STORE_BUSY` / `STORE_UNAVAILABLE` when SQLite fails.
   */
  async delete(name: string): Promise<void> {
    this.assertOpen();
    assertStateName(name);
    this.ahead?.drop(name);
    this.sqlite("deleting", () => this.deleteOne.run(name));
  }

  /**
   * Names that have state, sorted by UTF-16 code unit (JavaScript's default sort).
   * @throws (rejects) `STORE_CLOSED` after `close()`, `STORE_BUSY` / `STORE_UNAVAILABLE` when SQLite fails.
   */
  async list(): Promise<string[]> {
    this.assertOpen();
    return this.sqlite("listing", () => this.selectNames.all()).sort();
  }

  /** Closes the database connection; later calls reject with `STORE_CLOSED`. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ahead = undefined;
    this.db.close();
  }

  /** Runs one better-sqlite3 call, turning its errors into {@link StoreUnavailableError}s. */
  private sqlite<T>(doing: string, call: () => T): T {
    try {
      return call();
    } catch (err) {
      throw this.failure(doing, err);
    }
  }

  private failure(doing: string, err: unknown): StoreUnavailableError {
    const store = this.label;
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))) {
      return new StoreUnavailableError(
        "STORE_BUSY",
        store,
        `${store}: ${doing} waited ${this.busyTimeoutMs} ms for another connection to release the database lock; retry later, or raise busyTimeoutMs`,
        { cause: err },
      );
    }
    const why = err instanceof Error ? err.message : describeValue(err);
    return new StoreUnavailableError(
      "STORE_UNAVAILABLE",
      store,
      `${store}: ${doing} failed: ${why}; pass the path of an SQLite database file (or a new file) in an existing, writable directory, whose table '${this.table}' was made by SqliteStateStore`,
      { cause: err },
    );
  }

  /** Refuses an existing table whose columns are not the ones this store reads and writes (no columns: the table is still to be created). */
  private checkTable(columns: readonly ColumnInfo[]): void {
    if (columns.length === 0) return;
    const problems: string[] = [];
    for (const [name, want] of Object.entries(COLUMNS)) {
      const column = columns.find((c) => c.name === name);
      if (column === undefined) problems.push(`no column '${name}'`);
      else if (column.type.toUpperCase() !== want.type) problems.push(`column '${name}' is ${column.type || "untyped"}, not ${want.type}`);
      else if (want.notNull && column.notnull === 0) problems.push(`column '${name}' allows NULL`);
      else if ((column.pk === 1) !== want.pk) problems.push(want.pk ? `'${name}' is not the primary key` : `column '${name}' is part of the primary key`);
    }
    for (const column of columns) if (!(column.name in COLUMNS)) problems.push(`an extra column '${column.name}'`);
    if (columns.filter((c) => c.pk > 0).length > 1) problems.push("a primary key of several columns");
    if (problems.length > 0) {
      const store = this.label;
      throw new StoreUnavailableError(
        "STORE_UNAVAILABLE",
        store,
        `${store}: the existing table '${this.table}' has ${problems.join(", ")}; it needs (name TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL, updated_at TEXT NOT NULL). Pass another table option, or migrate the table. The file was not changed`,
      );
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError(this.label);
  }
}

function nothingRead(): void {}

let driver: typeof Database | undefined;

/**
 * better-sqlite3, loaded on first use: it is an optional peer dependency, and
 * a missing one should say how to install it, not fail the import of
 * `civitas-ts/sqlite` with a module-resolution error.
 */
function loadDriver(store: string): typeof Database {
  if (driver !== undefined) return driver;
  try {
    driver = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
    return driver;
  } catch (err) {
    throw new StoreUnavailableError(
      "STORE_UNAVAILABLE",
      store,
      `${store} needs the optional dependency better-sqlite3, which could not be loaded (${err instanceof Error ? err.message.split("\n")[0] : String(err)}); install it with: npm install better-sqlite3@12`,
      { cause: err },
    );
  }
}
