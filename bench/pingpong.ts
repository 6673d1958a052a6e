/**
 * In-process ping-pong: two agents under one Runtime bounce a counter with
 * `this.send` inside `handle()` for N round trips (2N messages). Baseline: two
 * plain async loops exchanging the same `{ n }` payloads through AsyncQueues,
 * yielding to the event loop every 128 messages like the runtime's Scheduler.
 * Also measured: the bare actor loop, the baseline with one change — each
 * message goes to an `async handle()` that the loop awaits, as an agent's
 * does — with no envelope, routing or lifecycle at all: the ceiling for any
 * runtime whose handlers are async functions.
 */
import type * as Civitas from "../src/index.js";
import type { Message } from "../src/index.js";
import type { CivitasModule } from "./civitas.js";
import { alternate, AsyncQueue, latch, median, ratioText, timed, YieldScheduler, type Benchmark, type Latch, type Row } from "./harness.js";

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

/** The bare actor of the ceiling: handles one ball, awaiting its put like an agent awaits `this.send`. */
class BareActor {
  constructor(
    private readonly outbox: AsyncQueue<Ball>,
    private readonly limit: number,
    private readonly done: Latch,
  ) {}

  async handle(ball: Ball): Promise<void> {
    if (ball.n >= this.limit) {
      this.done.resolve();
      return;
    }
    await this.outbox.put({ n: ball.n + 1 });
  }
}

async function bareActorLoop(inbox: AsyncQueue<Ball>, actor: BareActor, scheduler: YieldScheduler): Promise<void> {
  for (;;) {
    const pause = scheduler.tick();
    if (pause !== undefined) await pause;
    const ball = inbox.poll() ?? (await inbox.get());
    if (ball === STOP) return;
    await actor.handle(ball);
  }
}

async function baselineRound(bare: boolean): Promise<number> {
  const ping = new AsyncQueue<Ball>();
  const pong = new AsyncQueue<Ball>();
  const scheduler = new YieldScheduler(128);
  const done = latch();
  const loops = bare
    ? [bareActorLoop(ping, new BareActor(pong, MESSAGES, done), scheduler), bareActorLoop(pong, new BareActor(ping, MESSAGES, done), scheduler)]
    : [baselineLoop(ping, pong, scheduler, MESSAGES, done), baselineLoop(pong, ping, scheduler, MESSAGES, done)];
  const seconds = await timed(async () => {
    await ping.put({ n: 1 });
    await done.promise;
  });
  await ping.put(STOP);
  await pong.put(STOP);
  await Promise.all(loops);
  return MESSAGES / seconds;
}

const ENVELOPES = 200_000;

/**
 * Nanoseconds per call of `make` over {@link ENVELOPES} calls, the median of
 * 7 rounds after 3 untimed ones; results are kept in a small ring so the
 * work cannot be optimized away.
 */
function nsPerCall(make: (i: number) => unknown): number {
  const keep = new Array<unknown>(1024);
  const figures: number[] = [];
  for (let round = 0; round < 10; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ENVELOPES; i++) keep[i & 1023] = make(i);
    if (round >= 3) figures.push(Number(process.hrtime.bigint() - start) / ENVELOPES);
  }
  return median(figures);
}

/** What one envelope costs on its own: `createMessage` (id, clock, payload check, trace ids) against the bare object, and `Date.now()` alone. */
function envelopeCost({ createMessage }: CivitasModule): { envelope: number; bare: number; clock: number } {
  return {
    envelope: nsPerCall((i) => createMessage({ sender: "ping", recipient: "pong", payload: { n: i } })),
    bare: nsPerCall((i) => ({ sender: "ping", recipient: "pong", payload: { n: i } })),
    clock: nsPerCall(() => Date.now()),
  };
}

export const pingpong: Benchmark = {
  name: "pingpong",
  title: `Ping-pong, ${ROUND_TRIPS.toLocaleString("en")} round trips (${MESSAGES.toLocaleString("en")} messages)`,
  async run(civitas: CivitasModule): Promise<Row[]> {
    const { runtime, round } = pingPongRig(civitas, MESSAGES);
    const runtimeRound = round;

    await runtime.start();
    try {
      const figures = await alternate(ROUNDS, WARMUP_ROUNDS, { baseline: () => baselineRound(false), bare: () => baselineRound(true), runtime: runtimeRound });
      const cost = envelopeCost(civitas);
      const nsPerMessage = (rate: number): string => `${(1e9 / rate).toFixed(0)} ns`;
      return [
        { bench: "pingpong", metric: "messages/s", unit: "msg/s", runtime: figures.runtime, baseline: figures.baseline, target: { kind: "ratio>=", value: 0.5 } },
        {
          bench: "pingpong",
          metric: "  bare actor loop (ceiling)",
          unit: "msg/s",
          runtime: figures.bare,
          baseline: figures.baseline,
          note: `the baseline awaiting an async handle() per message, no envelope: civitas runs at ${ratioText(figures.runtime, figures.bare)} of it`,
        },
        {
          bench: "pingpong",
          metric: "  one envelope, alone",
          unit: "ns",
          runtime: cost.envelope,
          baseline: cost.bare,
          note:
            `createMessage() (UUIDv7, Date.now(), payload check, trace ids) vs the bare { sender, recipient, payload } object, ${ENVELOPES.toLocaleString("en")} in a tight loop; ` +
            `Date.now() alone: ${cost.clock.toFixed(1)} ns. A message costs ${nsPerMessage(figures.runtime)} in civitas, ${nsPerMessage(figures.bare)} in the bare actor loop, ${nsPerMessage(figures.baseline)} in the baseline`,
        },
      ];
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
export function pingPongRig({ AgentProcess, InMemoryStateStore, Runtime, silentLogger }: CivitasModule, messages: number, options: { approvalPolicy?: Civitas.ApprovalPolicy } = {}): PingPongRig {
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
  const runtime = new Runtime({ root: [ping, pong], logger: silentLogger, store: new InMemoryStateStore(), ...options });
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
