/**
 * SqliteStateStore turns every better-sqlite3 failure (unusable file, foreign
 * table, lock, dropped table) into a CivitasError naming what is wrong.
 *
 * Each test pins a defect found by the review of the state layer (SPEC §1/§8,
 * docs/state.md) (these tests were in test/review/state-review.test.ts).
 */

import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStateStore } from "../../src/entries/sqlite.js";
import { caught, expectCivitasError, rejected } from "../support/outcome.js";
import { scratch } from "../support/scratch.js";

const { tempDir, track } = scratch("civitas-review-");

/** A fresh file whose table `createTable` made, and what opening a SqliteStateStore on it throws. */
function openedOn(createTable: string): { file: string; error: unknown } {
  const file = path.join(tempDir(), "state.db");
  const raw = new Database(file);
  raw.exec(createTable);
  raw.close();
  return { file, error: caught(() => track(new SqliteStateStore(file))) };
}

// ---------------------------------------------------------------- opening a store
describe("SqliteStateStore: an unusable file is refused with a CivitasError (SPEC §1)", () => {
  it("a directory path is refused with a CivitasError naming the path, not a raw SqliteError", () => {
    const dir = tempDir();
    const error = caught(() => track(new SqliteStateStore(dir)));
    expectCivitasError(error, "STORE_UNAVAILABLE");
    expect((error as Error).message).toContain(dir);
  });

  it("a file that is not an SQLite database is refused with a CivitasError, not a raw SQLITE_NOTADB", () => {
    const file = path.join(tempDir(), "notes.db");
    fs.writeFileSync(file, "this is not a database\n".repeat(200));
    const error = caught(() => track(new SqliteStateStore(file)));
    expectCivitasError(error, "STORE_UNAVAILABLE");
    expect((error as Error).message).toContain(file);
    // and the file is left as it was
    expect(fs.readFileSync(file, "utf8")).toBe("this is not a database\n".repeat(200));
  });

  it("a path in a missing directory is refused with a CivitasError, not better-sqlite3's TypeError", () => {
    const file = path.join(tempDir(), "missing-dir", "state.db");
    const error = caught(() => track(new SqliteStateStore(file)));
    expectCivitasError(error, "STORE_UNAVAILABLE");
  });

  it("null options are refused with INVALID_ARGUMENT, not a TypeError", () => {
    const file = path.join(tempDir(), "state.db");
    const error = caught(() => track(new SqliteStateStore(file, null as never)));
    expectCivitasError(error, "INVALID_ARGUMENT");
  });

  it("a clock option without now() is refused at construction, not at the first set() with a TypeError", async () => {
    const file = path.join(tempDir(), "state.db");
    let store: SqliteStateStore | undefined;
    let error = caught(() => (store = track(new SqliteStateStore(file, { clock: {} as never }))));
    if (error === undefined && store !== undefined) {
      // constructed: then the first checkpoint must at least fail with a CivitasError
      error = await rejected(store.set("a", { n: 1 }));
    }
    expectCivitasError(error, "INVALID_ARGUMENT");
  });
});

describe("SqliteStateStore on a file whose table has another shape", () => {
  it("an existing table without a primary key on name is refused with a CivitasError, not a raw SqliteError from prepare()", () => {
    const { file, error } = openedOn("CREATE TABLE civitas_state (name TEXT, version INTEGER NOT NULL, state TEXT NOT NULL, updated_at TEXT NOT NULL)");
    expectCivitasError(error, "STORE_UNAVAILABLE");
    expect((error as Error).message).toContain("'name' is not the primary key");
    // refused before any side effect: the user's file is not switched to WAL on the way
    const check = new Database(file, { readonly: true });
    const mode = check.pragma("journal_mode", { simple: true });
    check.close();
    expect(mode).toBe("delete");
  });

  it("a table whose version column has TEXT affinity (records it wrote would read back as version '1.0') is refused up front", () => {
    const { error } = openedOn("CREATE TABLE civitas_state (name TEXT PRIMARY KEY, version TEXT NOT NULL, state TEXT NOT NULL, updated_at TEXT NOT NULL)");
    expectCivitasError(error, "STORE_UNAVAILABLE");
    expect((error as Error).message).toContain("column 'version' is TEXT, not INTEGER");
  });

  it("a table made by the store itself is accepted when the file is opened again", async () => {
    const file = path.join(tempDir(), "state.db");
    const first = track(new SqliteStateStore(file));
    await first.set("payer", { amount: 120 });
    await first.close();
    const again = track(new SqliteStateStore(file));
    expect(await again.get("payer")).toEqual({ amount: 120 });
  });
});

// ---------------------------------------------------------------- errors while running
describe("SqliteStateStore: better-sqlite3 errors while running", () => {
  it(
    "set() while another connection holds the write lock rejects with a CivitasError, not a raw SQLITE_BUSY",
    async () => {
      const file = path.join(tempDir(), "state.db");
      const store = track(new SqliteStateStore(file, { busyTimeoutMs: 50 }));
      await store.set("a", { n: 1 });
      const other = track(new Database(file));
      other.exec("BEGIN IMMEDIATE"); // a second process mid-transaction (docs: "a few on one machine")
      const error = await rejected(store.set("a", { n: 2 })); // waits out the 50 ms busy timeout
      other.exec("ROLLBACK");
      expectCivitasError(error, "STORE_BUSY");
      expect((error as Error).message).toContain("busyTimeoutMs");
      expect(await store.get("a")).toEqual({ n: 1 });
      // and once the lock is gone, the store works again
      await store.set("a", { n: 3 });
      expect(await store.get("a")).toEqual({ n: 3 });
    },
  );

  it("get() after the table was dropped behind the store's back rejects with a CivitasError, not a raw SqliteError", async () => {
    const file = path.join(tempDir(), "state.db");
    const store = track(new SqliteStateStore(file));
    await store.set("a", { n: 1 });
    const other = new Database(file);
    other.exec("DROP TABLE civitas_state");
    other.close();
    expectCivitasError(await rejected(store.get("a")), "STORE_UNAVAILABLE");
    expectCivitasError(await rejected(store.list()), "STORE_UNAVAILABLE");
  });
});
