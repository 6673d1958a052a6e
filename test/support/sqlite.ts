/** SQLite files in tests: checks on what a killed writer left behind. */
import Database from "better-sqlite3";
import { expect } from "vitest";

/** Asserts that the SQLite database in `file` passes `PRAGMA integrity_check`. */
export function expectSqliteIntact(file: string): void {
  const raw = new Database(file);
  try {
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
  } finally {
    raw.close();
  }
}
