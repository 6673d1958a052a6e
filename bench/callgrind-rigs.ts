/**
 * The workloads `bench/callgrind.ts` counts instructions for, one per hot
 * path: each builds its agents once, then runs a unit of work (a message,
 * an ask, an agent started …) as many times as it is told. Kept apart from
 * the wall-clock benchmarks so that the counted code never changes when a
 * benchmark's report does.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import type { AgentProcess as AgentProcessType, Message, Runtime as RuntimeType } from "../src/index.js";
import { loadSqlite, type CivitasModule } from "./civitas.js";
import { latch, type Latch } from "./harness.js";
import { pingPongRig } from "./pingpong.js";
import { parkedFile } from "./spawn.js";

/** One workload under callgrind: `run(units)` does `units` units of work (units may be rounded to the rig's batch). */
export interface CallgrindRig {
  /** Units of work per call of `run` that the rig is built around (messages per round, agents per runtime …). */
  readonly batch: number;
  run(units: number): Promise<void>;
  close(): Promise<void>;
}

/** How each workload is sized: a warm-up, then the counted units (both multiples of its batch). */
export interface RigPlan {
  readonly name: string;
  readonly unit: string;
  readonly warmup: number;
  readonly counted: number;
  readonly build: (civitas: CivitasModule) => Promise<CallgrindRig>;
}

const ALLOW = Object.freeze({ decision: "allow" } as const);

async function pingpong(civitas: CivitasModule): Promise<CallgrindRig> {
  return pingpongWith(civitas, {});
}

/** Ping-pong with an approval policy that allows every message: the gate's cost on the path (docs/approvals.md). */
async function pingpongPolicy(civitas: CivitasModule): Promise<CallgrindRig> {
  return pingpongWith(civitas, { approvalPolicy: () => ALLOW });
}

async function pingpongWith(civitas: CivitasModule, options: Parameters<typeof pingPongRig>[2]): Promise<CallgrindRig> {
  const batch = 20_000;
  const { runtime, round } = pingPongRig(civitas, batch, options);
  await runtime.start();
  return { batch, run: async (units) => { for (let done = 0; done < units; done += batch) await round(); }, close: () => runtime.stop() };
}

async function fanin({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule): Promise<CallgrindRig> {
  const senders = 200;
  const perSender = 50;
  class Sender extends AgentProcess {
    override async handle(): Promise<void> {
      for (let i = 0; i < perSender; i++) await this.send("collector", { i });
    }
  }
  class Collector extends AgentProcess {
    received = 0;
    expected = 0;
    finished: Latch | undefined;
    override async handle(): Promise<void> {
      if (++this.received === this.expected) this.finished?.resolve();
    }
  }
  const collector = new Collector("collector", { mailboxSize: 100 });
  const children = Array.from({ length: senders }, (_, i) => new Sender(`sender-${i}`));
  const runtime = new Runtime({ root: [collector, ...children], logger: silentLogger, store: new InMemoryStateStore() });
  await runtime.start();
  const batch = senders * perSender;
  const round = async (): Promise<void> => {
    collector.received = 0;
    collector.expected = batch;
    collector.finished = latch();
    for (const sender of children) void runtime.send(sender.name, {});
    await collector.finished.promise;
  };
  return { batch, run: async (units) => { for (let done = 0; done < units; done += batch) await round(); }, close: () => runtime.stop() };
}

async function ask(civitas: CivitasModule): Promise<CallgrindRig> {
  return askWith(civitas, {});
}

/** Asks with an approval policy that allows every message: the gate's cost on an ask (docs/approvals.md). */
async function askPolicy(civitas: CivitasModule): Promise<CallgrindRig> {
  return askWith(civitas, { approvalPolicy: () => ALLOW });
}

async function askWith({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule, options: { approvalPolicy?: () => typeof ALLOW }): Promise<CallgrindRig> {
  class Echo extends AgentProcess {
    override async handle(message: Message): Promise<Message> {
      return this.reply({ n: (message.payload["n"] as number) + 1 });
    }
  }
  const runtime = new Runtime({ root: [new Echo("echo")], logger: silentLogger, store: new InMemoryStateStore(), ...options });
  await runtime.start();
  return {
    batch: 1,
    run: async (units) => {
      for (let i = 0; i < units; i++) await runtime.ask("echo", { n: i });
    },
    close: () => runtime.stop(),
  };
}

async function suspend({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule): Promise<CallgrindRig> {
  class Idle extends AgentProcess {
    override async handle(): Promise<void> {}
  }
  const runtime = new Runtime({ root: [new Idle("idle")], logger: silentLogger, store: new InMemoryStateStore() });
  await runtime.start();
  return {
    batch: 1,
    run: async (units) => {
      for (let i = 0; i < units; i++) {
        await runtime.suspend("idle", "callgrind");
        await runtime.resume("idle", "approver");
      }
    },
    close: () => runtime.stop(),
  };
}

async function spawn({ AgentProcess, InMemoryStateStore, Runtime, Supervisor, silentLogger }: CivitasModule): Promise<CallgrindRig> {
  class Idle extends AgentProcess {
    override async handle(): Promise<void> {}
  }
  const batch = 5_000;
  let last: RuntimeType | undefined;
  return {
    batch,
    run: async (units) => {
      for (let done = 0; done < units; done += batch) {
        await last?.stop();
        const agents: AgentProcessType[] = [];
        for (let i = 0; i < batch; i++) agents.push(new Idle(`a${i}`));
        last = new Runtime({ root: new Supervisor("root", { children: agents }), store: new InMemoryStateStore(), logger: silentLogger });
        await last.start();
      }
    },
    close: async () => await last?.stop(),
  };
}

async function restore(civitas: CivitasModule): Promise<CallgrindRig> {
  const { AgentProcess, Runtime, Supervisor, silentLogger, ProcessStatus } = civitas;
  const { SqliteStateStore } = await loadSqlite();
  class Idle extends AgentProcess {
    override async handle(): Promise<void> {}
  }
  const batch = 2_000;
  const dir = mkdtempSync(`${tmpdir()}/civitas-callgrind-`);
  const file = await parkedFile(civitas, dir, batch);
  return {
    batch,
    run: async (units) => {
      for (let done = 0; done < units; done += batch) {
        const agents: AgentProcessType[] = [];
        for (let i = 0; i < batch; i++) agents.push(new Idle(`a${i}`));
        const store = new SqliteStateStore(file);
        const runtime = new Runtime({ root: new Supervisor("root", { children: agents }), store, logger: silentLogger });
        await runtime.start();
        if (agents.some((agent) => agent.status !== ProcessStatus.SUSPENDED)) throw new Error("restore: an agent is not SUSPENDED after start()");
        await runtime.stop();
        await store.close();
      }
    },
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Every counted workload with its sizes: long enough a warm-up that V8 has
 * optimized the path (counts then repeat to within ~1 %), and enough
 * counted units that a garbage collection more or less moves the figure
 * little.
 */
export const RIGS: readonly RigPlan[] = [
  { name: "pingpong", unit: "message", warmup: 160_000, counted: 100_000, build: pingpong },
  { name: "policy", unit: "message (allow policy)", warmup: 160_000, counted: 100_000, build: pingpongPolicy },
  { name: "fanin", unit: "message", warmup: 80_000, counted: 60_000, build: fanin },
  { name: "ask", unit: "ask", warmup: 50_000, counted: 30_000, build: ask },
  { name: "askpolicy", unit: "ask (allow policy)", warmup: 50_000, counted: 30_000, build: askPolicy },
  { name: "suspend", unit: "suspend+resume pair", warmup: 15_000, counted: 6_000, build: suspend },
  { name: "spawn", unit: "agent started and stopped", warmup: 15_000, counted: 10_000, build: spawn },
  { name: "restore", unit: "parked agent restored and stopped", warmup: 4_000, counted: 4_000, build: restore },
];
