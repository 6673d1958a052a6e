import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { runTsChild } from "../support/child-process.js";
import { blobFor } from "../support/crash-blob.js";
import { expectSqliteIntact } from "../support/sqlite.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const writer = path.join(here, "fixtures", "sqlite-crash-writer.ts");

interface CrashRun {
  /** The counter the child found when it started. */
  startedFrom: number;
  /** The highest n the child acknowledged (printed after set() resolved), or `undefined`. */
  lastAcked: number | undefined;
}

/**
 * Runs the writer on `file` and SIGKILLs it as soon as it has acknowledged
 * `killAfterAcks` sets (0: right after it printed "start"). Resolves once the
 * child is gone and all its output has been read.
 */
async function runAndKill(file: string, killAfterAcks: number): Promise<CrashRun> {
  let startedFrom: number | undefined;
  let lastAcked: number | undefined;
  let acks = 0;
  const run = await runTsChild(writer, [file], {
    timeoutMs: 8_000,
    onLine: (line, kill) => {
      if (line.startsWith("start ")) startedFrom = Number(line.slice("start ".length));
      else {
        lastAcked = Number(line);
        acks += 1;
      }
      if (startedFrom !== undefined && acks >= killAfterAcks) kill();
    },
  });
  if (run.signal !== "SIGKILL" || startedFrom === undefined) {
    throw new Error(`the crash writer ended with code ${String(run.code)}, signal ${String(run.signal)}; stderr:\n${run.stderr}`);
  }
  return { startedFrom, lastAcked };
}

describe("SqliteStateStore under SIGKILL", () => {
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "civitas-crash-"));
  });

  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("keeps every acknowledged set, intact, across repeated kills and restarts on the same file", async () => {
    const file = path.join(dir, "state.db");
    let stored = 0;
    // Kill points: before any write, during the first ones, and deep into a
    // run (past WAL auto-checkpoints, which happen about every 1000 pages).
    for (const killAfterAcks of [0, 1, 3, 40, 250]) {
      const run = await runAndKill(file, killAfterAcks);

      // The restarted writer found exactly what the last check found.
      expect(run.startedFrom).toBe(stored);

      expectSqliteIntact(file);

      const store = new SqliteStateStore(file);
      try {
        const record = await store.get("counter");
        if (run.lastAcked === undefined) {
          // Killed before anything was acknowledged: either nothing new or a whole new record.
          if (stored === 0 && record === undefined) continue;
        }
        expect(record).toBeDefined();
        const n = record?.n;
        expect(typeof n).toBe("number");
        expect(n as number).toBeGreaterThanOrEqual(run.lastAcked ?? stored);
        expect(n as number).toBeGreaterThanOrEqual(stored);
        expect(record?.blob === blobFor(n as number)).toBe(true);
        expect(Object.keys(record ?? {}).sort()).toEqual(["blob", "n"]);
        stored = n as number;
      } finally {
        await store.close();
      }
    }
    expect(stored).toBeGreaterThanOrEqual(250);
  }, 20_000);
});
