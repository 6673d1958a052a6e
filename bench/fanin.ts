/**
 * Fan-in: 1,000 sender agents each `await this.send` M messages to one
 * collector agent (default mailbox capacity 1000, so senders feel
 * backpressure). Baseline: 1,000 async producers `await put` into one
 * AsyncQueue of the same capacity, drained by one loop that yields every 128
 * messages like the runtime's Scheduler. The runtime's figure also pays for
 * the 1,000 kick-off messages that start the senders (2% more messages than
 * it is credited with). Also measured: the bare actor loop, the baseline
 * whose drain awaits an `async handle()` per message as an agent's loop does
 * (no envelope, routing or lifecycle): the ceiling for any runtime whose
 * handlers are async functions.
 */
import type { CivitasModule } from "./civitas.js";
import { alternate, AsyncQueue, latch, ratioText, timed, YieldScheduler, type Benchmark, type Latch, type Row } from "./harness.js";

const SENDERS = 1000;
const PER_SENDER = 50;
const TOTAL = SENDERS * PER_SENDER;
const CAPACITY = 1000;
/** Untimed rounds of each side first: the runtime's deeper call graph takes V8 longer to optimize than the baseline's few functions. */
const WARMUP_ROUNDS = 3;
const ROUNDS = 7;

async function producer(queue: AsyncQueue<{ i: number }>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await queue.put({ i });
}

/** The bare actor of the ceiling: counts what it handles, like the collector agent. */
class BareCollector {
  received = 0;

  async handle(_item: { i: number }): Promise<void> {
    this.received++;
  }
}

async function consumer(queue: AsyncQueue<{ i: number }>, scheduler: YieldScheduler, total: number, actor: BareCollector | undefined): Promise<void> {
  for (let received = 0; received < total; received++) {
    const pause = scheduler.tick();
    if (pause !== undefined) await pause;
    const item = queue.poll() ?? (await queue.get());
    if (actor !== undefined) await actor.handle(item);
  }
}

async function baselineRound(bare: boolean): Promise<number> {
  const queue = new AsyncQueue<{ i: number }>(CAPACITY);
  const scheduler = new YieldScheduler(128);
  const seconds = await timed(async () => {
    const draining = consumer(queue, scheduler, TOTAL, bare ? new BareCollector() : undefined);
    const producers: Promise<void>[] = [];
    for (let s = 0; s < SENDERS; s++) producers.push(producer(queue, PER_SENDER));
    await Promise.all(producers);
    await draining;
  });
  return TOTAL / seconds;
}

export const fanin: Benchmark = {
  name: "fanin",
  title: `Fan-in, ${SENDERS.toLocaleString("en")} senders x ${PER_SENDER} messages -> 1 collector`,
  async run({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule): Promise<Row[]> {
    class Sender extends AgentProcess {
      count = 0;

      override async handle(): Promise<void> {
        for (let i = 0; i < this.count; i++) await this.send("collector", { i });
      }
    }

    class Collector extends AgentProcess {
      private received = 0;
      private expected = 0;
      private finished: Latch | undefined;

      expect(expected: number): Promise<void> {
        this.received = 0;
        this.expected = expected;
        this.finished = latch();
        return this.finished.promise;
      }

      override async handle(): Promise<void> {
        if (++this.received === this.expected) this.finished?.resolve();
      }
    }

    const senders = Array.from({ length: SENDERS }, (_, i) => new Sender(`sender-${i}`));
    const collector = new Collector("collector", { mailboxSize: CAPACITY });
    const runtime = new Runtime({ root: [collector, ...senders], logger: silentLogger, store: new InMemoryStateStore() });

    const runtimeRound = async (): Promise<number> => {
      const done = collector.expect(TOTAL);
      for (const sender of senders) sender.count = PER_SENDER;
      const seconds = await timed(async () => {
        await Promise.all(senders.map((sender) => runtime.send(sender.name, {})));
        await done;
      });
      return TOTAL / seconds;
    };

    await runtime.start();
    try {
      const figures = await alternate(ROUNDS, WARMUP_ROUNDS, { baseline: () => baselineRound(false), bare: () => baselineRound(true), runtime: runtimeRound });
      return [
        { bench: "fanin", metric: "messages/s", unit: "msg/s", runtime: figures.runtime, baseline: figures.baseline, target: { kind: "ratio>=", value: 0.5 } },
        {
          bench: "fanin",
          metric: "  bare actor loop (ceiling)",
          unit: "msg/s",
          runtime: figures.bare,
          baseline: figures.baseline,
          note: `the baseline's drain awaiting an async handle() per message, no envelope: civitas runs at ${ratioText(figures.runtime, figures.bare)} of it`,
        },
      ];
    } finally {
      await runtime.stop();
    }
  },
};
