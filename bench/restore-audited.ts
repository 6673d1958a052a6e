/**
 * Restore of parked agents with a reading audit sink: a runtime restoring N
 * SUSPENDED agents looks up each pause's decision on record (a kill may have
 * come between a decision's receipt and its cleared marker), and every
 * lookup reads the log. Measured: `runtime.start()` of N parked agents from
 * a SqliteStateStore with a JsonlAuditSink holding their N pauses, beside
 * the same start with the same sink seen through a wrapper that only emits
 * (the baseline: the same receipts, fsync'ed, but no lookups), in the same
 * process. Target: at most 1.5x the baseline.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAudit, loadSqlite, type CivitasModule } from "./civitas.js";
import { median, timed, type Benchmark, type Row } from "./harness.js";

const BENCH = "restore-audited";
const KEY = "bench-restore-key-0123456789abcdef";
const AGENTS = 1_000;
const ROUNDS = 3;

export const restoreAudited: Benchmark = {
  name: BENCH,
  title: `start ${AGENTS.toLocaleString("en")} parked agents from SQLite, with a JSONL audit sink, with a decision lookup per pause and without`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const { JsonlAuditSink } = await loadAudit();
    const { SqliteStateStore } = await loadSqlite();
    const { Runtime, AgentProcess, ProcessStatus, silentLogger } = civitas;
    class Parked extends AgentProcess {}
    const dir = mkdtempSync(join(tmpdir(), "civitas-restore-"));
    try {
      const dbFile = join(dir, "state.db");
      const logFile = join(dir, "audit.jsonl");
      const names = Array.from({ length: AGENTS }, (_, i) => `parked-${i}`);
      {
        const store = new SqliteStateStore(dbFile);
        const sink = new JsonlAuditSink(logFile, { key: KEY });
        const runtime = new Runtime({ root: names.map((name) => new Parked(name)), store, auditSink: sink, logger: silentLogger, keepAlive: false });
        await runtime.start();
        await Promise.all(names.map((name) => runtime.suspend(name, "parked")));
        await runtime.stop();
        await sink.close();
        await store.close();
      }
      const startOnce = async (lookups: boolean): Promise<number> => {
        const store = new SqliteStateStore(dbFile);
        const sink = new JsonlAuditSink(logFile, { key: KEY });
        const agents = names.map((name) => new Parked(name));
        const auditSink = lookups ? sink : { emit: (event: Parameters<typeof sink.emit>[0]) => sink.emit(event) };
        const runtime = new Runtime({ root: agents, store, auditSink, logger: silentLogger, keepAlive: false });
        const seconds = await timed(() => runtime.start());
        if (agents.some((agent) => agent.status !== ProcessStatus.SUSPENDED)) throw new Error(`${BENCH}: an agent is not SUSPENDED after start()`);
        await runtime.stop();
        await sink.close();
        await store.close();
        return seconds * 1000;
      };
      const plain: number[] = [];
      const audited: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        plain.push(await startOnce(false));
        audited.push(await startOnce(true));
      }
      const base = median(plain);
      const measured = median(audited);
      return [
        {
          bench: BENCH,
          metric: `restore ${AGENTS.toLocaleString("en")} parked, total`,
          unit: "ms",
          runtime: measured,
          baseline: base,
          target: { kind: "ratio<=", value: 1.5 },
          note: "baseline: the same start and receipts through a sink without recordedSettlement (no decision lookups)",
        },
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
