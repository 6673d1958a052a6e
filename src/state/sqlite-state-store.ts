import Database from "better-sqlite3";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import { isoTime, systemClock, type Clock } from "../time/clock.js";
import { assertStateName, decodeState, encodeState, STATE_RECORD_VERSION } from "./state-record.js";
import type { StateStore } from "./state-store.js";
import { StoreClosedError } from "./store-closed-error.js";

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
}

interface RecordRow {
  version: unknown;
  state: unknown;
}

const DEFAULT_TABLE = "civitas_state";
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
export class SqliteStateStore implements StateStore {
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
  private readonly selectOne: Database.Statement<[string], RecordRow>;
  private readonly upsert: Database.Statement<[string, number, string, string]>;
  private readonly deleteOne: Database.Statement<[string]>;
  private readonly selectNames: Database.Statement<[], string>;
  private closed = false;

  /**
   * Opens (creating if needed) the database at `path` and its table.
   *
   * @param path - the SQLite file; its directory must exist. `":memory:"` and
   *   other non-file databases are refused: use `InMemoryStateStore` instead.
   * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad `path`
   *   or `table`; the better-sqlite3 error when the file cannot be opened.
   */
  constructor(path: string, options: SqliteStateStoreOptions = {}) {
    if (typeof path !== "string" || path.length === 0 || path === ":memory:") {
      throw new InvalidArgumentError(
        "path",
        `new SqliteStateStore(path) needs the path of a database file, got ${describeValue(path)}; for a store that need not survive the process use InMemoryStateStore`,
      );
    }
    const table = options.table === undefined ? DEFAULT_TABLE : options.table;
    if (typeof table !== "string" || !SQL_IDENTIFIER.test(table) || table.toLowerCase().startsWith("sqlite_")) {
      throw new InvalidArgumentError(
        "table",
        `SqliteStateStore option table must be a plain SQL identifier (letters, digits and _, not starting with a digit or 'sqlite_', at most 128 characters), got ${describeValue(table)}`,
      );
    }
    this.path = path;
    this.table = table;
    this.clock = options.clock ?? systemClock;

    const db = new Database(path);
    try {
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (typeof mode !== "string" || mode.toLowerCase() !== "wal") {
        throw new InvalidArgumentError(
          "path",
          `SqliteStateStore could not put '${path}' in WAL mode (journal_mode is ${String(mode)}); pass the path of an ordinary database file`,
        );
      }
      db.pragma("synchronous = FULL");
      const quoted = `"${table}"`;
      db.exec(
        `CREATE TABLE IF NOT EXISTS ${quoted} (
          name TEXT PRIMARY KEY,
          version INTEGER NOT NULL,
          state TEXT NOT NULL,
          updated_at TEXT NOT NULL
        )`,
      );
      this.selectOne = db.prepare<[string], RecordRow>(`SELECT version, state FROM ${quoted} WHERE name = ?`);
      this.upsert = db.prepare<[string, number, string, string]>(
        `INSERT INTO ${quoted} (name, version, state, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET version = excluded.version, state = excluded.state, updated_at = excluded.updated_at`,
      );
      this.deleteOne = db.prepare<[string]>(`DELETE FROM ${quoted} WHERE name = ?`);
      this.selectNames = db.prepare<[], string>(`SELECT name FROM ${quoted}`).pluck();
    } catch (err) {
      db.close();
      throw err;
    }
    this.db = db;
  }

  /**
   * The state last set for `name`, decoded afresh, or `undefined`.
   * @throws (rejects) `STATE_SCHEMA` ({@link StateSchemaError}) when the stored record has an
   *   unknown version or is not a JSON object — the row is left as it is;
   *   `INVALID_ARGUMENT` for a bad name; `STORE_CLOSED` after `close()`.
   */
  async get(name: string): Promise<JsonObject | undefined> {
    this.assertOpen();
    assertStateName(name);
    const row = this.selectOne.get(name);
    return row === undefined ? undefined : decodeState(name, row.version, row.state);
  }

  /**
   * Replaces the state of `name` in one atomic, fsync'ed statement.
   * @throws (rejects) `PAYLOAD_NOT_SERIALIZABLE` when `state` is not plain JSON (nothing is written),
   *   `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`.
   */
  async set(name: string, state: JsonObject): Promise<void> {
    this.assertOpen();
    assertStateName(name);
    const text = encodeState(name, state);
    this.upsert.run(name, STATE_RECORD_VERSION, text, isoTime(this.clock.now()));
  }

  /**
   * Removes the state of `name`; a no-op when there is none.
   * @throws (rejects) `INVALID_ARGUMENT` for a bad name, `STORE_CLOSED` after `close()`.
   */
  async delete(name: string): Promise<void> {
    this.assertOpen();
    assertStateName(name);
    this.deleteOne.run(name);
  }

  /**
   * Names that have state, sorted by UTF-16 code unit (JavaScript's default sort).
   * @throws (rejects) `STORE_CLOSED` after `close()`.
   */
  async list(): Promise<string[]> {
    this.assertOpen();
    return this.selectNames.all().sort();
  }

  /** Closes the database connection; later calls reject with `STORE_CLOSED`. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError(`SqliteStateStore('${this.path}')`);
  }
}

