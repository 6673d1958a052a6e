/**
 * In-process ping-pong: two agents under one Runtime bounce a counter with
 * `this.send` inside `handle()` for N round trips (2N messages). Baseline: two
 * plain async loops exchanging the same `{ n }` payloads through AsyncQueues,
 * yielding to the event loop every 128 messages like the runtime's Scheduler.
 */
import type { Message } from "../src/index.js";
import type { CivitasModule } from "./civitas.js";
import { alternate, AsyncQueue, latch, timed, YieldScheduler, type Benchmark, type Latch, type Row } from "./harness.js";

const ROUND_TRIPS = 20_000;
const MESSAGES = 2 * ROUND_TRIPS;
/** Untimed rounds of each side first: the runtime's deeper call graph takes V8 longer to optimize than the baseline's few functions. */
const WARMUP_ROUNDS = 5;
const ROUNDS = 9;

interface Ball {
  readonly n: number;
}

const STOP: Ball = { n: -1 };

async function baselineLoop(inbox: AsyncQueue<Ball>, outbox: AsyncQueue<Ball>, scheduler: YieldScheduler, limit: number, done: Latch): Promise<void> {
  for (;;) {
    const pause = scheduler.tick();
    if (pause !== undefined) await pause;
    const ball = inbox.poll() ?? (await inbox.get());
    if (ball === STOP) return;
    if (ball.n >= limit) {
      done.resolve();
      continue;
    }
    await outbox.put({ n: ball.n + 1 });
  }
}

async function baselineRound(): Promise<number> {
  const ping = new AsyncQueue<Ball>();
  const pong = new AsyncQueue<Ball>();
  const scheduler = new YieldScheduler(128);
  const done = latch();
  const loops = [baselineLoop(ping, pong, scheduler, MESSAGES, done), baselineLoop(pong, ping, scheduler, MESSAGES, done)];
  const seconds = await timed(async () => {
    await ping.put({ n: 1 });
    await done.promise;
  });
  await ping.put(STOP);
  await pong.put(STOP);
  await Promise.all(loops);
  return MESSAGES / seconds;
}

export const pingpong: Benchmark = {
  name: "pingpong",
  title: `Ping-pong, ${ROUND_TRIPS.toLocaleString("en")} round trips (${MESSAGES.toLocaleString("en")} messages)`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const { runtime, round } = pingPongRig(civitas, MESSAGES);
    const runtimeRound = round;

    await runtime.start();
    try {
      const pair = await alternate(ROUNDS, WARMUP_ROUNDS, runtimeRound, baselineRound);
      return [{ bench: "pingpong", metric: "messages/s", unit: "msg/s", ...pair, target: { kind: "ratio>=", value: 0.5 } }];
    } finally {
      await runtime.stop();
    }
  },
};

/** Two agents that bounce `{ n }` until it reaches a limit, under one runtime; shared by the ping-pong and suspend benchmarks. */
export interface PingPongRig {
  readonly runtime: InstanceType<CivitasModule["Runtime"]>;
  /** One timed round of `messages` messages; resolves with messages per second. */
  readonly round: () => Promise<number>;
}

/** Builds a {@link PingPongRig} from the code under test; start and stop its runtime yourself. */
export function pingPongRig({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule, messages: number): PingPongRig {
  class Player extends AgentProcess {
    peer = "";
    limit = 0;
    finished: Latch | undefined;

    override async handle(message: Message): Promise<void> {
      const n = message.payload["n"] as number;
      if (n >= this.limit) {
        this.finished?.resolve();
        return;
      }
      await this.send(this.peer, { n: n + 1 });
    }
  }
  const ping = new Player("ping");
  const pong = new Player("pong");
  ping.peer = "pong";
  pong.peer = "ping";
  const runtime = new Runtime({ root: [ping, pong], logger: silentLogger, store: new InMemoryStateStore() });
  const round = async (): Promise<number> => {
    const done = latch();
    for (const player of [ping, pong]) {
      player.limit = messages;
      player.finished = done;
    }
    const seconds = await timed(async () => {
      await runtime.send("ping", { n: 1 });
      await done.promise;
    });
    return messages / seconds;
  };
  return { runtime, round };
}
