/**
 * One measurement of `bench/spawn.ts`, in a fresh process (what a user's
 * process pays on a cold start): prints one JSON line on stdout.
 *
 *   node --expose-gc --import tsx bench/spawn-child.ts <workload> <count> [sqlite file]
 *
 * Workloads:
 * - `spawn`: construct `count` idle agents and `await runtime.start()` with
 *   them under one Supervisor (InMemoryStateStore, silent logger).
 * - `spawn-baseline`: construct `count` raw actors (an object, an array
 *   mailbox, a loop started lazily on the first message): the floor for
 *   "something that can take a message".
 * - `restore`: the same as `spawn` on a SqliteStateStore whose file holds a
 *   parked (suspended, checkpointed) record for every agent; timed until
 *   `start()` resolved with every agent SUSPENDED.
 * - `restore-baseline`: read the same file's rows with better-sqlite3 and
 *   `JSON.parse` each state: the floor for restoring from that file.
 */
import Database from "better-sqlite3";
import type { AgentProcess as AgentProcessType } from "../src/index.js";
import { loadCivitas, loadSqlite } from "./civitas.js";
import { collect } from "./harness.js";

type Workload = "spawn" | "spawn-baseline" | "restore" | "restore-baseline";

interface Measurement {
  readonly workload: Workload;
  readonly count: number;
  readonly usPerAgent: number;
  readonly heapBytesPerAgent: number;
}

function heapUsed(): number {
  collect();
  return process.memoryUsage().heapUsed;
}

function since(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1000;
}

/** The floor: what a hand-written actor costs before its first message. */
class RawActor {
  readonly mailbox: unknown[] = [];
  running = false;
  constructor(
    readonly name: string,
    readonly onMessage: (message: unknown) => void,
  ) {}

  send(message: unknown): void {
    this.mailbox.push(message);
    if (!this.running) void this.drain();
  }

  private async drain(): Promise<void> {
    this.running = true;
    for (let message = this.mailbox.shift(); message !== undefined; message = this.mailbox.shift()) {
      await Promise.resolve();
      this.onMessage(message);
    }
    this.running = false;
  }
}

async function measure(workload: Workload, count: number, file: string | undefined): Promise<Measurement> {
  const { civitas } = await loadCivitas(false);
  const { AgentProcess, InMemoryStateStore, ProcessStatus, Runtime, Supervisor, silentLogger } = civitas;
  class Idle extends AgentProcess {
    override async handle(): Promise<void> {}
  }
  const sqlite = workload === "restore" ? await loadSqlite() : undefined;
  const keep: unknown[] = [];
  const before = heapUsed();
  const start = process.hrtime.bigint();

  if (workload === "spawn-baseline") {
    const noop = (): void => {};
    for (let i = 0; i < count; i++) keep.push(new RawActor(`a${i}`, noop));
  } else if (workload === "restore-baseline") {
    const db = new Database(required(file), { readonly: true });
    for (const row of db.prepare<[], { name: string; state: string }>("SELECT name, state FROM civitas_state").iterate()) {
      keep.push(JSON.parse(row.state));
    }
    db.close();
  } else {
    const agents: AgentProcessType[] = [];
    for (let i = 0; i < count; i++) agents.push(new Idle(`a${i}`));
    const store = sqlite === undefined ? new InMemoryStateStore() : new sqlite.SqliteStateStore(required(file));
    const runtime = new Runtime({ root: new Supervisor("root", { children: agents }), store, logger: silentLogger });
    await runtime.start();
    const expected = workload === "restore" ? ProcessStatus.SUSPENDED : ProcessStatus.RUNNING;
    const wrong = agents.filter((agent) => agent.status !== expected).length;
    if (wrong > 0) throw new Error(`${wrong} of ${count} agents are not ${expected} after start()`);
    keep.push(runtime, store);
  }

  const usPerAgent = since(start) / count;
  const heapBytesPerAgent = (heapUsed() - before) / count;
  (globalThis as { keep?: unknown }).keep = keep;
  return { workload, count, usPerAgent, heapBytesPerAgent };
}

function required(file: string | undefined): string {
  if (file === undefined) throw new Error("this workload needs the path of the SQLite file");
  return file;
}

const [workload, count, file] = process.argv.slice(2);
if (workload !== "spawn" && workload !== "spawn-baseline" && workload !== "restore" && workload !== "restore-baseline") {
  console.error("usage: spawn-child.ts spawn|spawn-baseline|restore|restore-baseline <count> [sqlite file]");
  process.exit(2);
}
console.log(JSON.stringify(await measure(workload, Number(count), file)));
process.exit(0);
