import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { InvalidArgumentError, StateSchemaError } from "../../src/errors/errors.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { STATE_RECORD_VERSION } from "../../src/state/state-record.js";
import type { Clock } from "../../src/time/clock.js";
import { fileURLToPath } from "node:url";
import { runTsChild } from "../support/child-process.js";
import { describeStateStoreContract } from "../state/store-contract.js";

const here = path.dirname(fileURLToPath(import.meta.url));

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "civitas-sqlite-"));
}

describeStateStoreContract("SqliteStateStore", async () => {
  const dir = tempDir();
  const store = new SqliteStateStore(path.join(dir, "state.db"));
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

interface RawRow {
  name: string;
  version: number;
  state: string;
  updated_at: string;
}

describe("SqliteStateStore", () => {
  let dir: string;
  let file: string;
  const opened: { close(): unknown }[] = [];

  /** Opens a store (or a raw connection) that is closed after the test. */
  function track<T extends { close(): unknown }>(handle: T): T {
    opened.push(handle);
    return handle;
  }

  beforeEach(() => {
    dir = tempDir();
    file = path.join(dir, "state.db");
  });

  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) await handle.close();
    vi.restoreAllMocks();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("says it is durable", () => {
    expect(track(new SqliteStateStore(file)).durable).toBe(true);
  });

  it("keeps data across close and reopen", async () => {
    const first = new SqliteStateStore(file);
    await first.set("payer", { pending: { amount: 120, to: "acme" } });
    await first.set("other", { n: 1 });
    await first.delete("other");
    await first.close();

    const second = track(new SqliteStateStore(file));
    expect(await second.get("payer")).toEqual({ pending: { amount: 120, to: "acme" } });
    expect(await second.get("other")).toBeUndefined();
    expect(await second.list()).toEqual(["payer"]);
  });

  it("opens the file in WAL mode with synchronous=FULL", () => {
    const pragma = vi.spyOn(Database.prototype, "pragma");
    track(new SqliteStateStore(file));

    // journal_mode=WAL is persistent in the file: a second connection sees it.
    const raw = track(new Database(file, { readonly: true }));
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");

    // synchronous is per connection, so it must be read on the store's own
    // connection: the one the spied pragma() calls were made on.
    const storeConnection = pragma.mock.contexts[0] as Database.Database;
    expect(storeConnection).not.toBe(raw);
    pragma.mockRestore();
    expect(storeConnection.pragma("synchronous", { simple: true })).toBe(2); // 2 = FULL
    expect(storeConnection.pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("stores rows with the documented columns, the record version and an ISO-8601 UTC updated_at", async () => {
    let now = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
    const clock: Clock = { now: () => now, setTimeout: () => ({ cancel: () => undefined }) };
    const store = track(new SqliteStateStore(file, { clock }));
    await store.set("a", { n: 1 });
    const raw = track(new Database(file, { readonly: true }));
    const columns = raw.prepare("PRAGMA table_info(civitas_state)").all() as { name: string; type: string; notnull: number; pk: number }[];
    expect(columns.map((c) => [c.name, c.type, c.notnull || c.pk])).toEqual([
      ["name", "TEXT", 1],
      ["version", "INTEGER", 1],
      ["state", "TEXT", 1],
      ["updated_at", "TEXT", 1],
    ]);
    const read = (): RawRow => raw.prepare("SELECT * FROM civitas_state WHERE name = 'a'").get() as RawRow;
    expect(read()).toEqual({ name: "a", version: STATE_RECORD_VERSION, state: '{"n":1}', updated_at: "2030-01-02T03:04:05.678Z" });
    now += 1000;
    await store.set("a", { n: 2 });
    expect(read()).toEqual({ name: "a", version: STATE_RECORD_VERSION, state: '{"n":2}', updated_at: "2030-01-02T03:04:06.678Z" });
  });

  describe("refuses a record tampered with behind its back", () => {
    const tamperings: [string, string, unknown[]][] = [
      ["an unknown version", "UPDATE civitas_state SET version = ? WHERE name = 'payer'", [STATE_RECORD_VERSION + 1]],
      ["version 0", "UPDATE civitas_state SET version = ? WHERE name = 'payer'", [0]],
      ["malformed JSON", "UPDATE civitas_state SET state = ? WHERE name = 'payer'", ['{"pending": ']],
      ["a JSON array", "UPDATE civitas_state SET state = ? WHERE name = 'payer'", ["[1,2]"]],
      ["JSON null", "UPDATE civitas_state SET state = ? WHERE name = 'payer'", ["null"]],
      ["a JSON string", "UPDATE civitas_state SET state = ? WHERE name = 'payer'", ['"hi"']],
    ];
    for (const [label, sql, params] of tamperings) {
      it(`${label}: get rejects with STATE_SCHEMA and leaves the row as it is`, async () => {
        const store = track(new SqliteStateStore(file));
        await store.set("payer", { pending: 1 });
        await store.set("bystander", { ok: true });

        const raw = track(new Database(file));
        raw.prepare(sql).run(...params);
        const before = raw.prepare("SELECT * FROM civitas_state WHERE name = 'payer'").get() as RawRow;

        const err: unknown = await store.get("payer").catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StateSchemaError);
        expect((err as StateSchemaError).code).toBe("STATE_SCHEMA");
        expect((err as StateSchemaError).name).toBe("StateSchemaError");
        expect((err as StateSchemaError).agent).toBe("payer");
        expect((err as StateSchemaError).message).toContain("payer");

        expect(raw.prepare("SELECT * FROM civitas_state WHERE name = 'payer'").get()).toEqual(before);
        expect(await store.get("bystander")).toEqual({ ok: true });
        expect(await store.list()).toEqual(["bystander", "payer"]);
      });
    }

    it("a fresh store on the tampered file refuses it too, and set() repairs it", async () => {
      const first = new SqliteStateStore(file);
      await first.set("payer", { pending: 1 });
      await first.close();
      const raw = new Database(file);
      raw.prepare("UPDATE civitas_state SET version = 99").run();
      raw.close();

      const store = track(new SqliteStateStore(file));
      await expect(store.get("payer")).rejects.toMatchObject({ code: "STATE_SCHEMA" });
      await store.set("payer", { fresh: true });
      expect(await store.get("payer")).toEqual({ fresh: true });
    });
  });

  it("uses a custom table, separate from the default one in the same file", async () => {
    const custom = track(new SqliteStateStore(file, { table: "my_states" }));
    const plain = track(new SqliteStateStore(file));
    expect(custom.table).toBe("my_states");
    expect(plain.table).toBe("civitas_state");
    await custom.set("a", { in: "custom" });
    await plain.set("b", { in: "default" });

    expect(await custom.list()).toEqual(["a"]);
    expect(await plain.list()).toEqual(["b"]);
    expect(await plain.get("a")).toBeUndefined();

    const raw = track(new Database(file, { readonly: true }));
    expect(raw.prepare("SELECT name, state FROM my_states").all()).toEqual([{ name: "a", state: '{"in":"custom"}' }]);
  });

  const badTables: unknown[] = ["", "bad name", "x;DROP TABLE t", 'quo"te', "1abc", "sqlite_master", "SQLITE_x", "a".repeat(129), "é", 42, null];
  for (const table of badTables) {
    it(`refuses table option ${JSON.stringify(table)} with INVALID_ARGUMENT and creates nothing`, () => {
      let err: unknown;
      try {
        track(new SqliteStateStore(file, { table: table as string }));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).code).toBe("INVALID_ARGUMENT");
      expect((err as InvalidArgumentError).argument).toBe("table");
      expect(fs.existsSync(file)).toBe(false);
    });
  }

  it("accepts a 128-character table name", async () => {
    const store = track(new SqliteStateStore(file, { table: `t${"_".repeat(127)}` }));
    await store.set("a", {});
    expect(await store.list()).toEqual(["a"]);
  });

  for (const bad of ["", ":memory:", undefined, 42]) {
    it(`refuses path ${JSON.stringify(bad)} with INVALID_ARGUMENT`, () => {
      expect(() => new SqliteStateStore(bad as string)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT", argument: "path" }) as Error,
      );
    });
  }

  it("throws when the file cannot be opened", () => {
    expect(() => new SqliteStateStore(path.join(dir, "missing-dir", "state.db"))).toThrow();
  });
});

describe("SqliteStateStore without better-sqlite3 installed", () => {
  it("importing civitas-ts/sqlite works, and opening a store says how to install the driver (STORE_UNAVAILABLE)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "civitas-nodriver-"));
    try {
      const file = path.join(dir, "state.db");
      const run = await runTsChild(path.join(here, "fixtures", "without-driver.ts"), [file], { timeoutMs: 15_000 });
      expect(run.code, run.stderr).toBe(0);
      const result = JSON.parse(run.lines[0] ?? "{}") as { name?: string; code?: string; message?: string };
      expect(result.name).toBe("StoreUnavailableError");
      expect(result.code).toBe("STORE_UNAVAILABLE");
      expect(result.message).toContain("npm install better-sqlite3@12");
      expect(fs.existsSync(file)).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
