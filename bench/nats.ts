/**
 * Cross-process messaging over NATS, each beside the raw nats.js client in
 * the same run, against a peer process (bench/nats-peer.ts) on the server at
 * NATS_URL (default 127.0.0.1:4222):
 *
 * - ask round trip: sequential `runtime.ask` to an echo agent in the peer,
 *   beside `nc.request` to a raw echo responder, in alternating rounds
 *   (target: p50 at most 1.5x);
 * - one-way throughput: `runtime.send` of N messages (each awaited) to a
 *   counting agent in the peer until all arrived, beside raw publish of the
 *   same encoded bytes to a counting subscription until all arrived
 *   (target: at least 70%); the median of alternating rounds after a warm-up;
 *   and the sending loop alone per message on each side (no target: when it
 *   is close to the whole transfer's time, the sender is the limit), with
 *   the socket writes that loop made per 1,000 messages (no target: the
 *   outbox's batches should be written as nats.js writes its own, one
 *   write per 32 KiB);
 * - cross-process resume: `runtime.resume` of a suspended agent in the peer
 *   (each after an untimed suspend), beside a raw request, after a warm-up
 *   of both, in alternating rounds (target: p50 at most 1.5x).
 *
 * CIVITAS_PEER_NODE_ARGS passes node options to the peer, e.g. `--cpu-prof
 * --cpu-prof-dir=.prof` to profile the receiving side.
 */
import { spawn } from "node:child_process";
import { Socket } from "node:net";
import { connect } from "@nats-io/transport-node";
import type { Message } from "../src/index.js";
import { emittedSource, loadNats, type CivitasModule } from "./civitas.js";
import { alternate, median, percentile, timed, type Benchmark, type Row } from "./harness.js";

const SERVERS = process.env.NATS_URL ?? "127.0.0.1:4222";
const ASKS = 3000;
const SENDS = 20_000;
const SEND_ROUNDS = 5;
const RESUMES = 1000;
/** Rounds the ask and resume latencies alternate in (see {@link alternateEach}). */
const LATENCY_ROUNDS = 6;
/** Untimed suspend+resume pairs first: without them the peer's resume path ran unoptimized through most of the timed ones. */
const RESUME_WARMUP = 1000;

async function timeEach(count: number, call: () => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) latencies.push(await timeOne(call));
  return latencies;
}

/** µs one call of `call` takes. */
async function timeOne(call: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await call();
  return Number(process.hrtime.bigint() - start) / 1000;
}

/**
 * `count` timed calls of each side, in {@link LATENCY_ROUNDS} alternating
 * rounds: a machine whose speed drifts during the run (on a shared VM it
 * does) then drifts under both sides alike, not under whichever ran last.
 */
async function alternateEach<K extends string>(count: number, sides: Record<K, () => Promise<number>>): Promise<Record<K, number[]>> {
  const names = Object.keys(sides) as K[];
  const latencies = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  const perRound = Math.ceil(count / LATENCY_ROUNDS);
  for (let round = 0; round < LATENCY_ROUNDS; round++) {
    for (const name of names) for (let i = 0; i < perRound; i++) latencies[name].push(await sides[name]());
  }
  return latencies;
}

/** Counts the writes to every socket of this process while `run` runs (both sides' connections are sockets of this process). */
async function countingWrites(run: () => Promise<void>): Promise<number> {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- put back as it was, and called with its socket
  const write = Socket.prototype.write;
  let writes = 0;
  Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket["write"]>): boolean {
    writes++;
    return write.apply(this, args);
  } as Socket["write"];
  try {
    await run();
    // What is left is written a turn later (the outbox's last batch, nats.js's buffer): counted too.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    Socket.prototype.write = write;
  }
  return writes;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

export const nats: Benchmark = {
  name: "nats",
  title: "cross-process ask, send throughput and resume over NATS",
  async run(civitas: CivitasModule): Promise<Row[]> {
    const { NatsTransport, encodeMessage } = await loadNats();
    const { AgentProcess, Runtime, InMemoryStateStore, silentLogger, createMessage } = civitas;
    const prefix = `bench${process.pid}`;
    // The peer runs the code this side measures (the emitted src/, when there is one).
    const emitted = emittedSource();
    const peerArgs = ["--import", "tsx", "bench/nats-peer.ts", SERVERS, prefix, ...(emitted === undefined ? [] : [emitted])];
    const peer = spawn(process.execPath, [...(process.env.CIVITAS_PEER_NODE_ARGS ?? "").split(" ").filter(Boolean), ...peerArgs], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      peer.stdout.setEncoding("utf8").on("data", (chunk: string) => chunk.includes("ready") && resolve());
      peer.once("close", (code) => reject(new Error(`the benchmark peer ended with code ${String(code)}`)));
    });
    class Idle extends AgentProcess {
      override async handle(_message: Message): Promise<void> {}
    }
    const transport = new NatsTransport({ servers: SERVERS });
    const runtime = new Runtime({ root: [new Idle(`${prefix}-bench`)], transport, logger: silentLogger, store: new InMemoryStateStore() });
    await runtime.start();
    const nc = await connect({ servers: SERVERS });
    try {
      await until(async () => transport.hosts(`${prefix}-echo`));
      const payload = { i: 0, note: "benchmark" };
      // warm up both sides
      await timeEach(500, () => runtime.ask(`${prefix}-echo`, payload));
      await timeEach(500, () => nc.request(`${prefix}.raw.echo`, encodeMessage(createMessage({ sender: "b", recipient: "e", payload }))));

      const bytes = encodeMessage(createMessage({ sender: `${prefix}-bench`, recipient: `${prefix}-echo`, payload }));
      const asks = await alternateEach(ASKS, {
        runtime: () => timeOne(() => runtime.ask(`${prefix}-echo`, payload)),
        raw: () => timeOne(() => nc.request(`${prefix}.raw.echo`, bytes)),
      });

      // Alternating rounds after a warm-up, the median of each side (the counts only grow: each round waits for its total).
      const sinkBytes = encodeMessage(createMessage({ sender: `${prefix}-bench`, recipient: `${prefix}-sink`, payload }));
      let sent = 0;
      let published = 0;
      // The sending loop alone, per message (the warm-up round's first): set beside the whole transfer, it tells which side limits it.
      const loops: Record<"runtime" | "raw", number[]> = { runtime: [], raw: [] };
      const writes: Record<"runtime" | "raw", number[]> = { runtime: [], raw: [] };
      const throughput = await alternate(SEND_ROUNDS, 1, {
        runtime: async () => {
          sent += SENDS;
          const seconds = await timed(async () => {
            const begun = performance.now();
            const count = await countingWrites(async () => {
              for (let i = 0; i < SENDS; i++) await runtime.send(`${prefix}-sink`, payload);
            });
            loops.runtime.push(((performance.now() - begun) * 1000) / SENDS);
            writes.runtime.push((count * 1000) / SENDS);
            await until(async () => (await runtime.ask(`${prefix}-sink`, {})).payload.count === sent);
          });
          return SENDS / seconds;
        },
        raw: async () => {
          published += SENDS;
          const seconds = await timed(async () => {
            const begun = performance.now();
            const count = await countingWrites(async () => {
              for (let i = 0; i < SENDS; i++) nc.publish(`${prefix}.raw.sink`, sinkBytes);
            });
            loops.raw.push(((performance.now() - begun) * 1000) / SENDS);
            writes.raw.push((count * 1000) / SENDS);
            await until(async () => new TextDecoder().decode((await nc.request(`${prefix}.raw.count`)).data) === String(published));
          });
          return SENDS / seconds;
        },
      });

      for (let i = 0; i < RESUME_WARMUP; i++) {
        await runtime.suspend(`${prefix}-pausable`, "bench");
        await runtime.resume(`${prefix}-pausable`, "bench@approver");
      }
      const resumes = await alternateEach(RESUMES, {
        runtime: async () => {
          await runtime.suspend(`${prefix}-pausable`, "bench");
          return timeOne(() => runtime.resume(`${prefix}-pausable`, "bench@approver"));
        },
        raw: () => timeOne(() => nc.request(`${prefix}.raw.echo`, bytes)),
      });
      return [
        { bench: "nats", metric: "ask p50 latency", unit: "us", runtime: percentile(asks.runtime, 50), baseline: percentile(asks.raw, 50), target: { kind: "ratio<=", value: 1.5 }, note: "baseline: nc.request echo" },
        { bench: "nats", metric: "ask p99 latency", unit: "us", runtime: percentile(asks.runtime, 99), baseline: percentile(asks.raw, 99), note: "baseline: nc.request echo" },
        { bench: "nats", metric: "one-way sends/s", unit: "msg/s", runtime: throughput.runtime, baseline: throughput.raw, target: { kind: "ratio>=", value: 0.7 }, note: `baseline: raw publish of the same bytes; median of ${SEND_ROUNDS} alternating rounds of ${SENDS}` },
        {
          bench: "nats",
          metric: "one-way, sending loop alone",
          unit: "us/msg",
          runtime: median(loops.runtime.slice(1)),
          baseline: median(loops.raw.slice(1)),
          note: "until the last send returned (runtime.send awaited, or nc.publish); near the whole transfer's time per message, the sender is the limit",
        },
        {
          bench: "nats",
          metric: "one-way, socket writes per 1,000",
          unit: "writes",
          runtime: median(writes.runtime.slice(1)),
          baseline: median(writes.raw.slice(1)),
          note: "the writes the sending loop made; nats.js alone writes once per 32 KiB of its buffer",
        },
        { bench: "nats", metric: "resume p50 latency", unit: "us", runtime: percentile(resumes.runtime, 50), baseline: percentile(resumes.raw, 50), target: { kind: "ratio<=", value: 1.5 }, note: "baseline: nc.request echo" },
      ];
    } finally {
      await runtime.stop();
      await nc.close();
      peer.kill("SIGTERM");
    }
  },
};
