/**
 * Part of the `suspend` benchmark: the cost per message of a send to a
 * suspended agent with the durable backlog (issue 26, item 7) against the
 * same send with `durableBacklog: false`, both on a SqliteStateStore (WAL,
 * synchronous=FULL) in a fresh temporary directory.
 *
 * - One at a time: each `runtime.send` awaited before the next, so each
 *   message is one durable commit of the agent's record with the backlog so
 *   far (the record grows with the backlog: messages 1..N, N = {@link SEQUENTIAL}).
 * - All at once: {@link BURST} sends started together and awaited together;
 *   the messages that land while a write is in flight share the next one
 *   (group commit), so the cost per message is the burst's time / BURST.
 * - Replay: `resume` and the drain of {@link SEQUENTIAL} backlog messages by a
 *   handler that does not checkpoint (one removal write per message),
 *   against the same drain without the backlog.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Runtime as RuntimeType } from "../src/index.js";
import { loadSqlite, type CivitasModule } from "./civitas.js";
import { latch, median, percentile, timed, type Latch, type Row } from "./harness.js";

const BENCH = "suspend";
const SEQUENTIAL = 200;
const BURST = 1_000;
const ROUNDS = 3;

interface Figures {
  /** Microseconds per awaited send, every send of every round. */
  readonly sequential: number[];
  /** Microseconds per message of a burst, one value per round. */
  readonly burst: number[];
  /** Messages per second of resume + drain, one value per round. */
  readonly replay: number[];
}

/** Measures one configuration: a fresh SQLite file, one agent suspended and fed, then resumed and drained, {@link ROUNDS} times. */
async function measure(civitas: CivitasModule, durableBacklog: boolean): Promise<Figures> {
  const { AgentProcess, Runtime, silentLogger } = civitas;
  class Sink extends AgentProcess {
    handled = 0;
    target = 0;
    finished: Latch | undefined;
    override async handle(): Promise<void> {
      if (++this.handled === this.target) this.finished?.resolve();
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "civitas-bench-backlog-"));
  const { SqliteStateStore } = await loadSqlite();
  const store = new SqliteStateStore(join(dir, "state.db"));
  const sink = new Sink("sink", { mailboxSize: 2 * BURST });
  const runtime: RuntimeType = new Runtime({ root: [sink], logger: silentLogger, store, durableBacklog });
  const figures: Figures = { sequential: [], burst: [], replay: [] };
  const drain = async (count: number): Promise<number> => {
    const done = latch();
    sink.handled = 0;
    sink.target = count;
    sink.finished = done;
    const seconds = await timed(async () => {
      await runtime.resume("sink", "approver");
      await done.promise;
    });
    return count / seconds;
  };
  await runtime.start();
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      const warmup = round === 0; // the first round runs cold code: not reported
      await runtime.suspend("sink", "bench");
      for (let i = 0; i < SEQUENTIAL; i++) {
        const start = process.hrtime.bigint();
        await runtime.send("sink", { i });
        if (!warmup) figures.sequential.push(Number(process.hrtime.bigint() - start) / 1000);
      }
      const replayed = await drain(SEQUENTIAL);
      if (!warmup) figures.replay.push(replayed);
      await runtime.suspend("sink", "bench");
      const start = process.hrtime.bigint();
      await Promise.all(Array.from({ length: BURST }, (_, i) => runtime.send("sink", { i })));
      if (!warmup) figures.burst.push(Number(process.hrtime.bigint() - start) / 1000 / BURST);
      await drain(BURST);
    }
  } finally {
    await runtime.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

/** The rows of the durable-backlog part of the `suspend` benchmark; none (with a note) when better-sqlite3 is missing. */
export async function backlogRows(civitas: CivitasModule): Promise<Row[]> {
  let durable: Figures;
  let memory: Figures;
  try {
    durable = await measure(civitas, true);
    memory = await measure(civitas, false);
  } catch (error) {
    console.log(`(durable backlog skipped: ${error instanceof Error ? error.message : String(error)}) `);
    return [];
  }
  const mean = (values: readonly number[]): number => values.reduce((sum, v) => sum + v, 0) / values.length;
  return [
    {
      bench: BENCH,
      metric: "send to a suspended agent p50 (sqlite, durable backlog)",
      unit: "us",
      runtime: percentile(durable.sequential, 50),
      baseline: percentile(memory.sequential, 50),
      note: `each send awaited before the next, ${SEQUENTIAL} per round x ${ROUNDS} rounds: one durable commit per message of the record with the backlog so far (1..${SEQUENTIAL} messages); baseline = durableBacklog: false on the same store (the message waits in memory only)`,
    },
    { bench: BENCH, metric: "send to a suspended agent mean (sqlite, durable backlog)", unit: "us", runtime: mean(durable.sequential), baseline: mean(memory.sequential) },
    {
      bench: BENCH,
      metric: `send to a suspended agent, ${BURST.toLocaleString("en")} at once (sqlite, durable backlog)`,
      unit: "us/msg",
      runtime: median(durable.burst),
      baseline: median(memory.burst),
      note: `${BURST.toLocaleString("en")} sends started together: messages landing while a write is in flight share the next (group commit); median of ${ROUNDS} rounds; baseline = durableBacklog: false`,
    },
    {
      bench: BENCH,
      metric: `resume + drain of ${SEQUENTIAL} backlog messages (sqlite)`,
      unit: "msg/s",
      runtime: median(durable.replay),
      baseline: median(memory.replay),
      note: "handler without a checkpoint, so each message costs one removal write of its own (a checkpointing handler removes it in its own write); baseline = durableBacklog: false",
    },
  ];
}
