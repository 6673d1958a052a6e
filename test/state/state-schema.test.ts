/**
 * STATE_SCHEMA: a stored record that is not plain JSON is refused, and the
 * runtime neither starts an agent on it nor overwrites it.
 *
 * Each test pins a defect found by the review of the core runtime (issue 2)
 * (these tests were in test/review/runtime-review.test.ts).
 */

import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { CivitasError } from "civitas-ts";
import { AgentProcess } from "civitas-ts";
import { SqliteStateStore } from "civitas-ts/sqlite";
import { expectCivitasError, rejected } from "../support/outcome.js";
import { scratch } from "../support/scratch.js";
import { runtimes } from "../support/runtimes.js";

// Before the runtime factory: its afterEach then runs after the runtimes are stopped.
const { tempDir, track } = scratch("civitas-review-");

const runtime = runtimes({ stop: "full" });

// ---------------------------------------------------------------- state schema
describe("STATE_SCHEMA before the agent runs", () => {
  it("a record refused with STATE_SCHEMA is not overwritten by the agent's stop hook", async () => {
    const dir = tempDir();
    const file = path.join(dir, "state.db");
    const store = new SqliteStateStore(file);
    track(store);
    await store.set("keeper", { balance: 100 });
    const raw = new Database(file);
    raw.prepare("UPDATE civitas_state SET version = 2 WHERE name = ?").run("keeper");
    raw.close();
    let stopRan = false;
    class Keeper extends AgentProcess {
      override async onStop(): Promise<void> {
        stopRan = true;
        await this.checkpoint(); // a common pattern: persist on the way out
      }
    }
    const rt = runtime([new Keeper("keeper")], { store });
    const error = (await rejected(rt.start())) as CivitasError & { cause?: CivitasError };
    expect(error?.cause?.code ?? error?.code).toBe("STATE_SCHEMA");
    const check = new Database(file, { readonly: true });
    const row = check.prepare("SELECT version, state FROM civitas_state WHERE name = ?").get("keeper") as { version: number; state: string };
    check.close();
    expect(stopRan).toBe(true); // onStop runs after a failed start (SPEC 4) ...
    // ... but the refused record must survive it: it is what an operator restores or migrates
    expect(row).toEqual({ version: 2, state: JSON.stringify({ balance: 100 }) });
  });
});

// ---------------------------------------------------------------- record validation
describe("STATE_SCHEMA: a stored record that is not plain JSON is refused", () => {
  function tamperedStore(text: string): { store: SqliteStateStore; file: string } {
    const file = path.join(tempDir(), "state.db");
    const store = track(new SqliteStateStore(file));
    const raw = new Database(file);
    raw.prepare("INSERT INTO civitas_state (name, version, state, updated_at) VALUES (?, 1, ?, ?)").run("payer", text, new Date().toISOString());
    raw.close();
    return { store, file };
  }

  it("a number out of range (1e400 decodes to Infinity) makes get() reject with STATE_SCHEMA", async () => {
    const { store } = tamperedStore('{"balance":1e400}');
    const error = await rejected(store.get("payer"));
    expectCivitasError(error, "STATE_SCHEMA");
  });

  it("a record nested deeper than MAX_JSON_DEPTH (1000) makes get() reject with STATE_SCHEMA", async () => {
    const depth = 1500;
    const { store } = tamperedStore(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);
    const error = await rejected(store.get("payer"));
    expectCivitasError(error, "STATE_SCHEMA");
  });

  it("the runtime does not start an agent on a record holding Infinity, and keeps the row", async () => {
    const { store, file } = tamperedStore('{"balance":1e400}');
    let started = false;
    class Payer extends AgentProcess {
      override async onStart(): Promise<void> {
        started = true;
      }
    }
    const rt = runtime([new Payer("payer")], { store });
    const error = (await rejected(rt.start())) as (CivitasError & { cause?: CivitasError }) | undefined;
    expect(error, "runtime.start() resolved: the agent runs on state it cannot checkpoint").toBeDefined();
    expect(error?.cause?.code ?? error?.code).toBe("STATE_SCHEMA");
    expect(started).toBe(false);
    const check = new Database(file, { readonly: true });
    const row = check.prepare("SELECT state FROM civitas_state WHERE name = ?").get("payer") as { state: string };
    check.close();
    expect(row.state).toBe('{"balance":1e400}');
  });
});
