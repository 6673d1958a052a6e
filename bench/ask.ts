/**
 * Ask round-trip latency: sequential `runtime.ask` to an echo agent that
 * returns `this.reply(message.payload)`, each call timed with
 * `process.hrtime.bigint()`. Baseline: the same request/reply over an
 * AsyncQueue served by one loop (yielding every 128 messages like the
 * runtime's Scheduler), replies paired with their caller through a Map of
 * resolvers keyed by a correlation id. The baseline arms no timeout timer.
 *
 * Also measured: the bare async echo, the baseline with one change — each
 * request goes to an `async handle()` that the loop awaits, as an agent's
 * loop does — the ceiling for any runtime whose handlers are async functions.
 */
import type { Message } from "../src/index.js";
import type { CivitasModule } from "./civitas.js";
import { AsyncQueue, percentile, ratioText, settle, YieldScheduler, type Benchmark, type Row } from "./harness.js";

const CALLS = 20_000;
const ROUNDS = 6;
/** Untimed rounds of each side first: the runtime's deeper call graph takes V8 longer to optimize than the baseline's few functions. */
const WARMUP_ROUNDS = 5;

/** Runs `call` CALLS times in sequence, appending each latency (µs) to `into`; returns the round's wall time in seconds. */
async function sample(call: (i: number) => Promise<unknown>, into: number[]): Promise<number> {
  await settle(); // no forced GC: see timed() in harness.ts
  const begin = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    await call(i);
    into.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return Number(process.hrtime.bigint() - begin) / 1e9;
}

interface Request {
  readonly id: number;
  readonly payload: { readonly i: number };
}

interface Reply {
  readonly id: number;
  readonly payload: { readonly i: number };
}

const STOP: Request = { id: -1, payload: { i: -1 } };

/** The reply of the bare async echo's handler: the request's id and payload, as the baseline's loop builds it. */
async function echoed(request: Request): Promise<Reply> {
  return { id: request.id, payload: request.payload };
}

/**
 * The baseline request/reply pair: a client and a server loop over plain
 * queues; with `awaitHandler` (the bare async echo) the loop awaits an async
 * handler for each reply, as an agent's loop awaits `handle()`.
 */
class BaselineEcho {
  private readonly requests = new AsyncQueue<Request>();
  private readonly pending = new Map<number, (reply: Reply) => void>();
  private readonly scheduler = new YieldScheduler(128);
  private nextId = 0;
  private readonly served: Promise<void>;

  constructor(private readonly awaitHandler: boolean) {
    this.served = this.serve();
  }

  ask(payload: { i: number }): Promise<Reply> {
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, resolve);
      this.requests.put({ id, payload }).catch(reject);
    });
  }

  async close(): Promise<void> {
    await this.requests.put(STOP);
    await this.served;
  }

  private async serve(): Promise<void> {
    for (;;) {
      const pause = this.scheduler.tick();
      if (pause !== undefined) await pause;
      const request = this.requests.poll() ?? (await this.requests.get());
      if (request === STOP) return;
      const resolve = this.pending.get(request.id);
      if (resolve === undefined) continue;
      this.pending.delete(request.id);
      resolve(this.awaitHandler ? await echoed(request) : { id: request.id, payload: request.payload });
    }
  }
}

export const ask: Benchmark = {
  name: "ask",
  title: `Ask round trip, ${CALLS.toLocaleString("en")} sequential asks x ${ROUNDS} rounds`,
  async run({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule): Promise<Row[]> {
    class Echo extends AgentProcess {
      override async handle(message: Message): Promise<Message> {
        return this.reply(message.payload);
      }
    }

    const runtime = new Runtime({ root: [new Echo("echo")], logger: silentLogger, store: new InMemoryStateStore() });
    await runtime.start();
    const baseline = new BaselineEcho(false);
    const bare = new BaselineEcho(true);
    const runtimeCall = (i: number): Promise<Message> => runtime.ask("echo", { i });
    const baselineCall = (i: number): Promise<Reply> => baseline.ask({ i });
    const bareCall = (i: number): Promise<Reply> => bare.ask({ i });
    try {
      for (let i = 0; i < WARMUP_ROUNDS; i++) {
        await sample(baselineCall, []);
        await sample(bareCall, []);
        await sample(runtimeCall, []);
      }
      const r: number[] = [];
      const b: number[] = [];
      let rSeconds = 0;
      let bSeconds = 0;
      let bareSeconds = 0;
      for (let round = 0; round < ROUNDS; round++) {
        bSeconds += await sample(baselineCall, b);
        bareSeconds += await sample(bareCall, []);
        rSeconds += await sample(runtimeCall, r);
      }
      const total = CALLS * ROUNDS;
      return [
        { bench: "ask", metric: "p50 latency", unit: "us", runtime: percentile(r, 50), baseline: percentile(b, 50), target: { kind: "ratio<=", value: 2 } },
        { bench: "ask", metric: "p99 latency", unit: "us", runtime: percentile(r, 99), baseline: percentile(b, 99), target: { kind: "ratio<=", value: 2 } },
        { bench: "ask", metric: "sequential asks/s", unit: "ask/s", runtime: total / rSeconds, baseline: total / bSeconds, target: { kind: "ratio>=", value: 0.5 } },
        {
          bench: "ask",
          metric: "  bare async echo (ceiling)",
          unit: "ask/s",
          runtime: total / bareSeconds,
          baseline: total / bSeconds,
          note: `the baseline awaiting an async handle() per request, no envelope: civitas runs at ${ratioText(total / rSeconds, total / bareSeconds)} of it`,
        },
      ];
    } finally {
      await baseline.close();
      await bare.close();
      await runtime.stop();
    }
  },
};
