// A runtime starting on an SqliteStateStore reads its agents' records ahead, a
// chunk per query, instead of one read transaction per agent (100,000 parked
// agents took 4 s to restore that way). Every get still returns and throws
// exactly what it would have.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { StateSchemaError } from "../../src/errors/errors.js";
import { AgentProcess } from "../../src/process/agent-process.js";
import { ProcessStatus } from "../../src/contracts/process-status.js";
import { silentLogger } from "../../src/logging/logger.js";
import { Runtime } from "../../src/runtime/runtime.js";
import { readAhead } from "../../src/state/read-ahead.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { STATE_RECORD_VERSION } from "../../src/state/state-record.js";
import { Supervisor } from "../../src/supervision/supervisor.js";
import { whenStarted } from "../support/runtimes.js";

class Idle extends AgentProcess {}

/** More agents than one read-ahead chunk holds (1,024). */
const AGENTS = 2_500;

describe("an SqliteStateStore read ahead for a starting runtime", () => {
  let dir: string;
  let file: string;
  let store: SqliteStateStore;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "civitas-read-ahead-"));
    file = path.join(dir, "state.db");
    store = new SqliteStateStore(file);
  });

  afterEach(async () => {
    await store.close();
    vi.restoreAllMocks();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Writes `state` for each name straight into the file, in one transaction. */
  function writeRaw(records: readonly (readonly [string, object, number?])[]): void {
    const db = new Database(file);
    const insert = db.prepare("INSERT OR REPLACE INTO civitas_state (name, version, state, updated_at) VALUES (?, ?, ?, ?)");
    db.transaction(() => {
      for (const [name, state, version] of records) insert.run(name, version ?? STATE_RECORD_VERSION, JSON.stringify(state), new Date(0).toISOString());
    })();
    db.close();
  }

  /** Counts the single-record queries `get` makes (those the read-ahead spares). */
  function countSingleReads(): { readonly count: number } {
    const counter = { count: 0 };
    const inner = store as unknown as { sqlite(doing: string, call: () => unknown): unknown };
    const original = inner.sqlite.bind(store);
    vi.spyOn(inner, "sqlite").mockImplementation((doing, call) => {
      if (doing === "reading") counter.count++;
      return original(doing, call);
    });
    return counter;
  }

  it("restores every agent of a tree with its own record, parked ones SUSPENDED, without a query per agent", async () => {
    const names = Array.from({ length: AGENTS }, (_, i) => `agent-${i}`);
    const since = new Date(0).toISOString();
    writeRaw(
      names
        .filter((_, i) => i % 3 !== 0) // every third agent has no record: it starts from its initial state
        .map((name, i) => [name, i % 2 === 0 ? { n: name } : { n: name, "_civitas.suspended": { reason: "parked", since, approver: null, suspensionId: `s-${name}` } }] as const),
    );
    const agents = names.map((name) => new Idle(name));
    const reads = countSingleReads();
    const runtime = await whenStarted(new Runtime({ root: new Supervisor("root", { children: agents }), store, logger: silentLogger, keepAlive: false }));
    try {
      expect(reads.count).toBe(0);
      names.forEach((name, i) => {
        const agent = agents[i] as Idle;
        if (i % 3 === 0) {
          expect(agent.state).toEqual({});
          expect(agent.status).toBe(ProcessStatus.RUNNING);
        } else {
          expect(agent.state.n).toBe(name);
          expect(agent.status).toBe(agent.state["_civitas.suspended"] === undefined ? ProcessStatus.RUNNING : ProcessStatus.SUSPENDED);
          expect(agent.suspension?.suspensionId).toBe(agent.status === ProcessStatus.SUSPENDED ? `s-${name}` : undefined);
        }
      });
    } finally {
      await runtime.stop();
    }
  });

  it("takes a record read ahead once: a later get reads the file again", async () => {
    writeRaw([["a", { v: 1 }]]);
    const drop = store[readAhead](["a", "b"]);
    expect(await store.get("a")).toEqual({ v: 1 });
    writeRaw([["a", { v: 2 }]]); // another connection
    expect(await store.get("a")).toEqual({ v: 2 });
    drop();
  });

  it("forgets what it read of a name that is set or deleted through the store", async () => {
    writeRaw([
      ["a", { v: 1 }],
      ["b", { v: 1 }],
    ]);
    const drop = store[readAhead](["a", "b"]);
    expect(await store.get("a")).toEqual({ v: 1 }); // reads the chunk that holds b too
    await store.set("b", { v: 2 });
    expect(await store.get("b")).toEqual({ v: 2 });
    await store.delete("a");
    expect(await store.get("a")).toBeUndefined();
    drop();
  });

  it("serves agents that start out of order, reading a record on its own where it was not read ahead", async () => {
    writeRaw([
      ["a", { v: "a" }],
      ["b", { v: "b" }],
      ["c", { v: "c" }],
    ]);
    const drop = store[readAhead](["a", "b", "c"]);
    const reads = countSingleReads();
    expect(await store.get("c")).toEqual({ v: "c" }); // not next in line: read on its own
    expect(reads.count).toBe(1);
    expect(await store.get("a")).toEqual({ v: "a" });
    expect(await store.get("b")).toEqual({ v: "b" });
    expect(reads.count).toBe(1);
    drop();
  });

  it("still refuses a malformed record with STATE_SCHEMA when it is asked for, not when it is read ahead", async () => {
    writeRaw([
      ["good", { v: 1 }],
      ["bad", { v: 1 }, STATE_RECORD_VERSION + 1],
    ]);
    const drop = store[readAhead](["good", "bad"]);
    expect(await store.get("good")).toEqual({ v: 1 });
    const error = await store.get("bad").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateSchemaError);
    expect((error as StateSchemaError).code).toBe("STATE_SCHEMA");
    drop();
  });

  it("reads nothing ahead once dropped, while another read-ahead is in use, or when closed", async () => {
    writeRaw([["a", { v: 1 }]]);
    const reads = countSingleReads();
    const drop = store[readAhead](["a"]);
    drop();
    expect(await store.get("a")).toEqual({ v: 1 });
    expect(reads.count).toBe(1);

    const first = store[readAhead](["x"]);
    const second = store[readAhead](["a"]);
    expect(await store.get("a")).toEqual({ v: 1 });
    expect(reads.count).toBe(2);
    second();
    first();

    await store.close();
    const closed = store[readAhead](["a"]);
    closed();
    await expect(store.get("a")).rejects.toMatchObject({ code: "STORE_CLOSED" });
  });
});
