/**
 * Read-only access to a `SqliteStateStore` file for the `civitas state`
 * commands: the file is opened `readonly` and `fileMustExist`, so reading
 * never creates, migrates or writes anything. The CLI turns each way it can
 * fail into its own message and exit code.
 * @module
 */
import type BetterSqlite3 from "better-sqlite3";
import type { JsonObject } from "../message/json.js";
import { decodeState } from "../state/state-record.js";

/** What the state commands read from an SQLite store. */
export interface SqliteReader {
  list(): Promise<string[]>;
  get(name: string): Promise<JsonObject | undefined>;
  close(): Promise<void>;
}

/**
 * How opening went: the reader, or the step that failed — `driver`
 * (better-sqlite3 is not installed), `open` (the file cannot be opened),
 * `table` (the file has no such table) or `read` (the file cannot be read).
 */
export type SqliteReaderOpening =
  | { readonly reader: SqliteReader }
  | { readonly failed: "driver" | "open" | "read"; readonly cause: unknown }
  | { readonly failed: "table" };

interface RecordRow {
  version: unknown;
  state: unknown;
}

/** Whether `table` can name a state table: a plain SQL identifier. */
export const isSqliteTableName = (table: string): boolean => /^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(table);

/** Opens the SQLite file at `path` read-only and the state table `table` in it ({@link isSqliteTableName}). */
export async function openSqliteReader(path: string, table: string): Promise<SqliteReaderOpening> {
  let Database: typeof BetterSqlite3;
  try {
    Database = (await import("better-sqlite3")).default;
  } catch (cause) {
    return { failed: "driver", cause };
  }
  let db: BetterSqlite3.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (cause) {
    return { failed: "open", cause };
  }
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
    if (exists === undefined) {
      db.close();
      return { failed: "table" };
    }
    const selectOne = db.prepare<[string], RecordRow>(`SELECT version, state FROM "${table}" WHERE name = ?`);
    const selectNames = db.prepare<[], string>(`SELECT name FROM "${table}"`).pluck();
    return {
      reader: {
        list: async () => selectNames.all().sort(),
        get: async (name) => {
          const row = selectOne.get(name);
          return row === undefined ? undefined : decodeState(name, row.version, row.state);
        },
        close: async () => void db.close(),
      },
    };
  } catch (cause) {
    db.close();
    return { failed: "read", cause };
  }
}
