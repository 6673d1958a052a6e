/**
 * Memory per idle agent: heap growth (after full GCs) of one Runtime holding
 * 10,000 started, idle agents (silentLogger, InMemoryStateStore), divided by
 * the count — first as started, then again once every agent has handled one
 * message and gone idle (queues that grew stay allocated). Baseline: 10,000
 * plain objects, each with an idle async loop awaiting a promise — the floor
 * for "something that waits for a message" — measured the same two ways.
 */
import type { CivitasModule } from "./civitas.js";
import { collect, hasGc, median, settle, type Benchmark, type Row } from "./harness.js";

const AGENTS = 10_000;
const ROUNDS = 3;
const TARGET_BYTES = 1200;

/** Bytes per agent: right after start, and after each handled one message. */
interface Footprint {
  readonly started: number;
  readonly afterMessage: number;
}

function heapUsed(): number {
  collect();
  return process.memoryUsage().heapUsed;
}

async function quiesce(): Promise<void> {
  for (let i = 0; i < 3; i++) await settle();
}

async function runtimeFootprint({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule, count: number): Promise<Footprint> {
  let handled = 0;
  class Idle extends AgentProcess {
    override async handle(): Promise<void> {
      handled++;
    }
  }

  await quiesce();
  const before = heapUsed();
  const agents: Idle[] = [];
  for (let i = 0; i < count; i++) agents.push(new Idle(`idle-${i}`));
  const runtime = new Runtime({ root: agents, logger: silentLogger, store: new InMemoryStateStore() });
  agents.length = 0;
  await runtime.start();
  await quiesce();
  const started = heapUsed();
  for (let i = 0; i < count; i++) await runtime.send(`idle-${i}`, { hello: i });
  while (handled < count) await settle();
  await quiesce();
  const afterMessage = heapUsed();
  if (runtime.agents().length !== count) throw new Error("not every agent registered");
  await runtime.stop();
  return { started: (started - before) / count, afterMessage: (afterMessage - before) / count };
}

interface Waiter {
  readonly name: string;
  wake: ((message: unknown) => void) | undefined;
  loop: Promise<void> | undefined;
}

const STOP = Symbol("stop");

async function idleLoop(waiter: Waiter, onMessage: () => void): Promise<void> {
  for (;;) {
    const message = await new Promise<unknown>((resolve) => (waiter.wake = resolve));
    if (message === STOP) return;
    onMessage();
  }
}

async function baselineFootprint(count: number): Promise<Footprint> {
  let handled = 0;
  const onMessage = (): void => {
    handled++;
  };
  await quiesce();
  const before = heapUsed();
  const waiters: Waiter[] = [];
  for (let i = 0; i < count; i++) {
    const waiter: Waiter = { name: `idle-${i}`, wake: undefined, loop: undefined };
    waiter.loop = idleLoop(waiter, onMessage);
    waiters.push(waiter);
  }
  await quiesce();
  const started = heapUsed();
  for (let i = 0; i < count; i++) (waiters[i] as Waiter).wake?.({ hello: i });
  while (handled < count) await settle();
  await quiesce();
  const afterMessage = heapUsed();
  for (const waiter of waiters) waiter.wake?.(STOP);
  await Promise.all(waiters.map((waiter) => waiter.loop ?? Promise.resolve()));
  return { started: (started - before) / count, afterMessage: (afterMessage - before) / count };
}

export const memory: Benchmark = {
  name: "memory",
  title: `Heap per idle agent, ${AGENTS.toLocaleString("en")} agents in one Runtime`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const note = hasGc() ? undefined : "global.gc is missing (run with --expose-gc): figures include garbage";
    await runtimeFootprint(civitas, 500);
    await baselineFootprint(500);
    const r: Footprint[] = [];
    const b: Footprint[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      b.push(await baselineFootprint(AGENTS));
      r.push(await runtimeFootprint(civitas, AGENTS));
    }
    const target = { kind: "value<=", value: TARGET_BYTES } as const;
    const rows: Row[] = [
      { bench: "memory", metric: "heap per idle agent", unit: "B", runtime: median(r.map((f) => f.started)), baseline: median(b.map((f) => f.started)), target },
      {
        bench: "memory",
        metric: "  idle after 1 message",
        unit: "B",
        runtime: median(r.map((f) => f.afterMessage)),
        baseline: median(b.map((f) => f.afterMessage)),
        target,
      },
    ];
    return note === undefined ? rows : rows.map((row) => ({ ...row, note }));
  },
};
