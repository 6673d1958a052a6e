/**
 * The durable audit sink, measured two ways.
 *
 * 1. Rows per second with fsync: `JsonlAuditSink.emit` into a fresh log in a
 *    temporary directory (removed afterwards), sequential (each emit awaited
 *    before the next) and concurrent (all emits started at once, awaited with
 *    `Promise.all`; the sink writes and fsyncs them one at a time, in call
 *    order). Baseline: the same process appending comparable JSON lines
 *    (`JSON.stringify` of the event plus seq/keyId/prev, no hash, no HMAC, no
 *    canonical encoding) with `FileHandle.appendFile` + `FileHandle.sync`, one
 *    fsync per row; its concurrent side serialises the appends through a
 *    promise chain like the sink does, so both make one write + fsync per row.
 * 2. Cost to a suspend/resume round trip: `await runtime.suspend(name)` then
 *    `await runtime.resume(name, "approver")` on an idle agent with an
 *    InMemoryStateStore, with no audit sink (baseline) and with a
 *    JsonlAuditSink (two fsync'ed rows per pair: agent.suspend and
 *    agent.resume, both awaited by the runtime).
 *
 * No targets: the figures and ratios are printed with target "-".
 */
import { mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Runtime as RuntimeType } from "../src/index.js";
import { loadAudit, type AuditModule, type CivitasModule } from "./civitas.js";
import { collect, median, percentile, settle, timed, type Benchmark, type Row } from "./harness.js";

const BENCH = "audit";
const KEY = "bench-audit-key-0123456789abcdef";

const SEQUENTIAL_ROWS = 300;
const CONCURRENT_ROWS = 1_000;
const ROWS_ROUNDS = 3;

const PLAIN_PAIRS = 2_000;
const AUDITED_PAIRS = 200;
const PAIR_ROUNDS = 2;

type Sink = InstanceType<AuditModule["JsonlAuditSink"]>;

interface Event {
  readonly event: string;
  readonly ts: string;
  readonly agent: string;
  readonly signerId: string;
  readonly details: { readonly reason: string; readonly suspensionId: string; readonly i: number };
}

function event(i: number): Event {
  return {
    event: i % 2 === 0 ? "agent.suspend" : "agent.resume",
    ts: new Date().toISOString(),
    agent: "payer",
    signerId: "civitas-runtime",
    details: { reason: "bench", suspensionId: `s-${i}`, i },
  };
}

/** A JSON line of the same fields as a row, minus hash and mac; nothing is hashed or signed. */
function plainLine(seq: number, e: Event): string {
  return `${JSON.stringify({ seq, ts: e.ts, event: e.event, agent: e.agent, signerId: e.signerId, keyId: "default", details: e.details, prev: "0" })}\n`;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

// ---- 1. rows per second ------------------------------------------------------

/** Rows/s of `count` emits into a fresh sink under `dir`. */
async function sinkRate(JsonlAuditSink: AuditModule["JsonlAuditSink"], dir: string, file: string, count: number, concurrent: boolean): Promise<number> {
  const sink: Sink = new JsonlAuditSink(join(dir, file), { key: KEY });
  try {
    await sink.emit(event(-1)); // opens the file outside the timing
    const events = Array.from({ length: count }, (_, i) => event(i));
    const seconds = await timed(async () => {
      if (concurrent) {
        await Promise.all(events.map((e) => sink.emit(e)));
      } else {
        for (const e of events) await sink.emit(e);
      }
    });
    return count / seconds;
  } finally {
    await sink.close();
  }
}

/** Rows/s of `count` plain appendFile + fsync of JSON lines into a fresh file under `dir`. */
async function plainRate(dir: string, file: string, count: number, concurrent: boolean): Promise<number> {
  const handle = await open(join(dir, file), "a");
  try {
    const events = Array.from({ length: count }, (_, i) => event(i));
    const append = async (seq: number, e: Event): Promise<void> => {
      await handle.appendFile(plainLine(seq, e));
      await handle.sync();
    };
    const seconds = await timed(async () => {
      if (concurrent) {
        let chain: Promise<void> = Promise.resolve();
        await Promise.all(
          events.map((e, seq) => {
            const run = chain.then(() => append(seq, e));
            chain = run;
            return run;
          }),
        );
      } else {
        for (const [seq, e] of events.entries()) await append(seq, e);
      }
    });
    return count / seconds;
  } finally {
    await handle.close();
  }
}

// ---- 2. suspend/resume round trip ------------------------------------------------

async function pairs(runtime: RuntimeType, count: number, into: number[]): Promise<void> {
  collect();
  await settle();
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    await runtime.suspend("idle");
    await runtime.resume("idle", "approver");
    into.push(Number(process.hrtime.bigint() - start) / 1000);
  }
}

// ---- the benchmark -----------------------------------------------------------------

export const audit: Benchmark = {
  name: "audit",
  title: "Audit sink: fsync'ed rows/s (sequential, concurrent), cost to a suspend/resume pair",
  async run({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule): Promise<Row[]> {
    const { JsonlAuditSink } = await loadAudit();
    class Idle extends AgentProcess {
      override async handle(): Promise<void> {}
    }

    const rows: Row[] = [];
    const dir = mkdtempSync(join(tmpdir(), "civitas-bench-audit-"));
    try {
      // 1. rows per second
      let file = 0;
      const next = (): string => `log-${file++}.jsonl`;
      for (const [concurrent, count] of [
        [false, SEQUENTIAL_ROWS],
        [true, CONCURRENT_ROWS],
      ] as const) {
        const sink: number[] = [];
        const plain: number[] = [];
        // warm-up of each side, then alternating rounds
        await plainRate(dir, next(), 50, concurrent);
        await sinkRate(JsonlAuditSink, dir, next(), 50, concurrent);
        for (let round = 0; round < ROWS_ROUNDS; round++) {
          plain.push(await plainRate(dir, next(), count, concurrent));
          sink.push(await sinkRate(JsonlAuditSink, dir, next(), count, concurrent));
        }
        const how = concurrent ? `${count.toLocaleString("en")} emits started at once (Promise.all)` : `${count} emits, each awaited`;
        rows.push({
          bench: BENCH,
          metric: `rows/s with fsync, ${concurrent ? "concurrent" : "sequential"}`,
          unit: "rows/s",
          runtime: median(sink),
          baseline: median(plain),
          note: `${how}, median of ${ROWS_ROUNDS} rounds, fresh log each; baseline = FileHandle.appendFile + sync of a comparable JSON line (no hash, no HMAC)${concurrent ? ", serialised through a promise chain like the sink" : ""}`,
        });
      }

      // 2. suspend/resume pair, without vs with the sink
      const plainPairs: number[] = [];
      const auditedPairs: number[] = [];
      const plainRuntime = new Runtime({ root: [new Idle("idle")], logger: silentLogger, store: new InMemoryStateStore() });
      const sink: Sink = new JsonlAuditSink(join(dir, "runtime.jsonl"), { key: KEY });
      const auditedRuntime = new Runtime({ root: [new Idle("idle")], logger: silentLogger, store: new InMemoryStateStore(), auditSink: sink });
      await plainRuntime.start();
      await auditedRuntime.start();
      try {
        await pairs(plainRuntime, 200, []);
        await pairs(auditedRuntime, 20, []);
        for (let round = 0; round < PAIR_ROUNDS; round++) {
          await pairs(plainRuntime, Math.ceil(PLAIN_PAIRS / PAIR_ROUNDS), plainPairs);
          await pairs(auditedRuntime, Math.ceil(AUDITED_PAIRS / PAIR_ROUNDS), auditedPairs);
        }
      } finally {
        await auditedRuntime.stop();
        await plainRuntime.stop();
        await sink.close();
      }
      const p50 = { audited: percentile(auditedPairs, 50), plain: percentile(plainPairs, 50) };
      const avg = { audited: mean(auditedPairs), plain: mean(plainPairs) };
      rows.push(
        {
          bench: BENCH,
          metric: "suspend+resume pair p50, audited",
          unit: "us",
          runtime: p50.audited,
          baseline: p50.plain,
          note: `${auditedPairs.length} pairs with a JsonlAuditSink (2 fsync'ed rows per pair) vs ${plainPairs.length.toLocaleString("en")} pairs without a sink; InMemoryStateStore; the sink adds ${(p50.audited - p50.plain).toFixed(0)} us at p50, ${(avg.audited - avg.plain).toFixed(0)} us on average`,
        },
        { bench: BENCH, metric: "suspend+resume pair mean, audited", unit: "us", runtime: avg.audited, baseline: avg.plain },
        { bench: BENCH, metric: "suspend+resume pair p99, audited", unit: "us", runtime: percentile(auditedPairs, 99), baseline: percentile(plainPairs, 99) },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
