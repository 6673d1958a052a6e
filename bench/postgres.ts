/**
 * The PostgreSQL backend (`npm run bench -- postgres`), each figure beside a
 * raw `pg` statement measured in the same run, on the same server and pool
 * settings, in a schema of its own (dropped afterwards).
 *
 * 1. `PostgresStateStore.set` latency (p50, p99) of a ~1 KB state, sequential,
 *    vs a raw parameterised `INSERT … ON CONFLICT DO UPDATE` of the same
 *    bytes into a table of the same shape. Aim: at most 1.3x the raw statement.
 * 2. A suspend+resume pair on a runtime whose store is a PostgresStateStore
 *    (no audit sink: one write for the pause, one for its settlement) vs two
 *    raw upserts of the same bytes.
 * 3. `PostgresAuditSink.emit` rows/s (each awaited; one transaction per row in
 *    three round trips: begin and lock the chain head, insert and move the
 *    head, commit) vs a raw
 *    autocommitted `INSERT` of a line of the same size.
 *
 * Set CIVITAS_BENCH_POSTGRES to another connection string to measure elsewhere.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { loadPostgres, type CivitasModule } from "./civitas.js";
import { collect, percentile, settle, type Benchmark, type Row } from "./harness.js";

const BENCH = "postgres";
const URL = process.env.CIVITAS_BENCH_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";
const SETS = 600;
const PAIRS = 300;
const ROWS = 400;
const ROUNDS = 3;

/** A state of about 1 KB. */
function stateOf(i: number): Record<string, unknown> {
  return { i, pending: { invoice: `INV-${i}`, amount: 1250.5, to: "globex" }, history: Array.from({ length: 12 }, (_, k) => ({ k, note: "x".repeat(48) })) };
}

async function latencies(count: number, op: (i: number) => Promise<void>, into: number[]): Promise<void> {
  collect();
  await settle();
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    await op(i);
    into.push(Number(process.hrtime.bigint() - start) / 1000);
  }
}

async function rate(count: number, op: (i: number) => Promise<void>): Promise<number> {
  await settle();
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await op(i);
  return count / (Number(process.hrtime.bigint() - start) / 1e9);
}

export const postgres: Benchmark = {
  name: "postgres",
  title: "PostgreSQL store set p50/p99, suspend+resume pair, audit rows/s, each beside raw pg",
  async run({ AgentProcess, Runtime, silentLogger }: CivitasModule): Promise<Row[]> {
    const { PostgresAuditSink, PostgresStateStore } = await loadPostgres();
    const schema = `civitas_bench_${randomBytes(4).toString("hex")}`;
    const admin = new pg.Pool({ connectionString: URL, max: 1 });
    await admin.query(`CREATE SCHEMA "${schema}"`);
    const pool = new pg.Pool({ connectionString: URL, max: 4 });
    pool.on("error", () => undefined);
    const rows: Row[] = [];
    try {
      const store = new PostgresStateStore({ pool }, { table: `${schema}.state` });
      await store.migrate();
      await pool.query(`CREATE TABLE "${schema}"."raw" (name bytea PRIMARY KEY, version integer NOT NULL, state text, suspended text, fence bigint NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
      const rawUpsert = `INSERT INTO "${schema}"."raw" (name, version, state, suspended, fence, updated_at) VALUES ($1, 1, $2, $3, 0, clock_timestamp())
        ON CONFLICT (name) DO UPDATE SET version = excluded.version, state = excluded.state, suspended = excluded.suspended, fence = excluded.fence, updated_at = excluded.updated_at`;
      const name = Buffer.from("payer");
      const texts = Array.from({ length: SETS }, (_, i) => JSON.stringify(stateOf(i)));

      // 1. set latency
      const civitasSet: number[] = [];
      const rawSet: number[] = [];
      await latencies(50, (i) => store.set("payer", stateOf(i) as never), []);
      await latencies(50, (i) => pool.query(rawUpsert, [name, texts[i], null]).then(() => undefined), []);
      for (let round = 0; round < ROUNDS; round++) {
        await latencies(SETS / ROUNDS, (i) => store.set("payer", stateOf(i) as never), civitasSet);
        await latencies(SETS / ROUNDS, (i) => pool.query(rawUpsert, [name, texts[i], null]).then(() => undefined), rawSet);
      }
      const sizeNote = `${Buffer.byteLength(texts[0] ?? "")} B state, ${civitasSet.length} sequential sets each side, alternating rounds; baseline = raw parameterised upsert of the same bytes (aim: <= 1.30x)`;
      rows.push(
        { bench: BENCH, metric: "set p50", unit: "us", runtime: percentile(civitasSet, 50), baseline: percentile(rawSet, 50), target: { kind: "ratio<=", value: 1.3 }, note: sizeNote },
        { bench: BENCH, metric: "set p99", unit: "us", runtime: percentile(civitasSet, 99), baseline: percentile(rawSet, 99), target: { kind: "ratio<=", value: 1.3 } },
      );

      // 2. suspend+resume pair
      class Idle extends AgentProcess {
        override async handle(): Promise<void> {}
      }
      const runtime = new Runtime({ root: [new Idle("idle")], logger: silentLogger, store, keepAlive: false });
      await runtime.start();
      const pairs: number[] = [];
      const rawPairs: number[] = [];
      const marker = JSON.stringify({ reason: "", since: new Date().toISOString(), approver: null, suspensionId: "01234567-89ab-7def-8123-456789abcdef" });
      const paused = `{"_civitas.suspended":${marker}}`;
      const pair = async (): Promise<void> => {
        await runtime.suspend("idle");
        await runtime.resume("idle", "approver");
      };
      const rawPair = async (): Promise<void> => {
        await pool.query(rawUpsert, [Buffer.from("idle"), paused, marker]);
        await pool.query(rawUpsert, [Buffer.from("idle"), "{}", null]);
      };
      try {
        await latencies(30, pair, []);
        await latencies(30, rawPair, []);
        for (let round = 0; round < ROUNDS; round++) {
          await latencies(PAIRS / ROUNDS, pair, pairs);
          await latencies(PAIRS / ROUNDS, rawPair, rawPairs);
        }
      } finally {
        await runtime.stop();
      }
      rows.push(
        { bench: BENCH, metric: "suspend+resume pair p50", unit: "us", runtime: percentile(pairs, 50), baseline: percentile(rawPairs, 50), target: { kind: "ratio<=", value: 1.3 }, note: `${pairs.length} pairs on an idle agent, no audit sink (two store writes per pair); baseline = two raw upserts of the same bytes` },
        { bench: BENCH, metric: "suspend+resume pair p99", unit: "us", runtime: percentile(pairs, 99), baseline: percentile(rawPairs, 99) },
      );

      // 3. audit rows/s
      const sink = new PostgresAuditSink({ pool, key: "bench-audit-key", table: `${schema}.audit` });
      await pool.query(`CREATE TABLE "${schema}"."raw_audit" (seq bigint PRIMARY KEY, line text NOT NULL)`);
      const ts = new Date().toISOString();
      const event = (i: number) => ({ event: "agent.suspend", ts, agent: "payer", signerId: "bench", details: { reason: "bench", suspensionId: `s-${i}`, i } });
      const line = (i: number): string => `${JSON.stringify({ agent: "payer", details: event(i).details, event: "agent.suspend", hash: "0".repeat(64), keyId: "default", mac: "0".repeat(64), prev: "0".repeat(64), seq: i, signerId: "bench", ts })}`;
      let seq = 0;
      const sinkRates: number[] = [];
      const rawRates: number[] = [];
      await sink.emit(event(-1));
      for (let round = 0; round < ROUNDS; round++) {
        sinkRates.push(await rate(ROWS / ROUNDS, (i) => sink.emit(event(i)).then(() => undefined)));
        rawRates.push(await rate(ROWS / ROUNDS, () => pool.query(`INSERT INTO "${schema}"."raw_audit" (seq, line) VALUES ($1, $2)`, [seq, line(seq++)]).then(() => undefined)));
      }
      await sink.close();
      rows.push({
        bench: BENCH,
        metric: "audit rows/s, sequential",
        unit: "rows/s",
        runtime: percentile(sinkRates, 50),
        baseline: percentile(rawRates, 50),
        note: `${ROWS} emits each awaited, median of ${ROUNDS} rounds; one transaction per row (begin + lock head, insert + move head, commit: 3 round trips) vs one autocommitted INSERT of a line of the same size`,
      });
      await store.close();
    } finally {
      await pool.end();
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
      await admin.end();
    }
    return rows;
  },
};
