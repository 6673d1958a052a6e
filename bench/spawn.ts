/**
 * The start path, each figure from fresh processes (`bench/spawn-child.ts`),
 * the median of three:
 *
 * 1. Spawn: construct 100,000 idle agents and `await runtime.start()` with
 *    them under one Supervisor — µs and heap bytes per agent. Baseline: the
 *    same number of hand-written actors (object + array mailbox + a loop
 *    started on the first message) in a fresh process. For scale, on this
 *    machine (`../shared/bench-peers`, W4): Erlang/OTP supervisor 10 µs,
 *    xstate 16 µs, nact 6.5 µs, a raw Node actor 3.5 µs.
 * 2. Restore: the same 100,000 agents on a SqliteStateStore whose file holds
 *    a parked (suspended, checkpointed) record for each, timed until
 *    `start()` resolved with all of them SUSPENDED. Baseline: reading the
 *    file's rows with better-sqlite3 and `JSON.parse`-ing each state.
 *
 * The parked records are copies of one record the runtime itself wrote (one
 * agent suspended and stopped), each with its own name and suspension id,
 * inserted in one transaction: writing 100,000 of them through the runtime
 * would take 100,000 fsyncs.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { loadSqlite, type CivitasModule } from "./civitas.js";
import { median, type Benchmark, type Row } from "./harness.js";

const BENCH = "spawn";
const AGENTS = 100_000;
const RUNS = 3;
const CHILD = join(dirname(fileURLToPath(import.meta.url)), "spawn-child.ts");
const ROOT = resolve(dirname(CHILD), "..");

interface Measurement {
  readonly usPerAgent: number;
  readonly heapBytesPerAgent: number;
}

function child(workload: string, file?: string): Measurement {
  const args = ["--expose-gc", "--import", "tsx", CHILD, workload, String(AGENTS), ...(file === undefined ? [] : [file])];
  const out = execFileSync(process.execPath, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  return JSON.parse(out.trim().split("\n").pop() as string) as Measurement;
}

function medianOf(workload: string, file?: string): Measurement {
  const runs: Measurement[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(child(workload, file));
  return { usPerAgent: median(runs.map((run) => run.usPerAgent)), heapBytesPerAgent: median(runs.map((run) => run.heapBytesPerAgent)) };
}

/** Writes a SQLite file with a parked record, as the runtime writes it, for each of `count` agents named a0, a1 … */
export async function parkedFile(civitas: CivitasModule, dir: string, count: number): Promise<string> {
  const { AgentProcess, Runtime, silentLogger } = civitas;
  const { SqliteStateStore } = await loadSqlite();
  class Idle extends AgentProcess {
    override async handle(): Promise<void> {}
  }
  const file = join(dir, "parked.db");
  const store = new SqliteStateStore(file);
  const runtime = new Runtime({ root: [new Idle("a0")], store, logger: silentLogger });
  await runtime.start();
  await runtime.suspend("a0", "parked for the spawn benchmark");
  await runtime.stop();
  await store.close();

  const db = new Database(file);
  const row = db.prepare<[], { version: number; state: string; updated_at: string }>("SELECT version, state, updated_at FROM civitas_state WHERE name = 'a0'").get();
  if (row === undefined) throw new Error("the runtime wrote no parked record");
  const id = (JSON.parse(row.state) as Record<string, { suspensionId: string }>)["_civitas.suspended"]?.suspensionId;
  if (id === undefined) throw new Error("the parked record has no suspension marker");
  const insert = db.prepare("INSERT OR REPLACE INTO civitas_state (name, version, state, updated_at) VALUES (?, ?, ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const unique = id.slice(0, -8) + i.toString(16).padStart(8, "0");
      insert.run(`a${i}`, row.version, row.state.replace(id, unique), row.updated_at);
    }
  })();
  db.close();
  return file;
}

export const spawn: Benchmark = {
  name: BENCH,
  title: `start ${AGENTS.toLocaleString("en")} idle agents, restore as many parked ones from SQLite (fresh processes)`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const started = medianOf("spawn");
    const raw = medianOf("spawn-baseline");
    const dir = mkdtempSync(join(tmpdir(), "civitas-spawn-"));
    try {
      const file = await parkedFile(civitas, dir, AGENTS);
      const restored = medianOf("restore", file);
      const read = medianOf("restore-baseline", file);
      return [
        { bench: BENCH, metric: "start, per agent", unit: "us", runtime: started.usPerAgent, baseline: raw.usPerAgent, target: { kind: "value<=", value: 8 } },
        { bench: BENCH, metric: "heap, per started agent", unit: "B", runtime: started.heapBytesPerAgent, baseline: raw.heapBytesPerAgent, target: { kind: "value<=", value: 1100 } },
        {
          bench: BENCH,
          metric: "restore parked, total",
          unit: "ms",
          runtime: (restored.usPerAgent * AGENTS) / 1000,
          baseline: (read.usPerAgent * AGENTS) / 1000,
          target: { kind: "value<=", value: 1500 },
          note: "baseline: better-sqlite3 reads every row and JSON.parses its state",
        },
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
