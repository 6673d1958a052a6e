/**
 * Cross-process messaging over NATS, each beside the raw nats.js client in
 * the same run, against a peer process (bench/nats-peer.ts) on the server at
 * NATS_URL (default 127.0.0.1:4222):
 *
 * - ask round trip: sequential `runtime.ask` to an echo agent in the peer,
 *   beside `nc.request` to a raw echo responder (target: p50 at most 2x);
 * - one-way throughput: `runtime.send` of N messages to a counting agent in
 *   the peer until all arrived, beside raw publish of the same encoded bytes
 *   to a counting subscription (target: at least 50%);
 * - cross-process resume: `runtime.resume` of a suspended agent in the peer,
 *   beside a raw request (no target).
 */
import { spawn } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import type { Message } from "../src/index.js";
import { loadNats, type CivitasModule } from "./civitas.js";
import { percentile, type Benchmark, type Row } from "./harness.js";

const SERVERS = process.env.NATS_URL ?? "127.0.0.1:4222";
const ASKS = 3000;
const SENDS = 20_000;
const RESUMES = 300;

async function timeEach(count: number, call: (i: number) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    await call(i);
    latencies.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return latencies;
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
    const peer = spawn(process.execPath, ["--import", "tsx", "bench/nats-peer.ts", SERVERS, prefix], { stdio: ["ignore", "pipe", "inherit"] });
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

      const askRuntime = await timeEach(ASKS, () => runtime.ask(`${prefix}-echo`, payload));
      const bytes = encodeMessage(createMessage({ sender: `${prefix}-bench`, recipient: `${prefix}-echo`, payload }));
      const askRaw = await timeEach(ASKS, () => nc.request(`${prefix}.raw.echo`, bytes));

      let begin = process.hrtime.bigint();
      for (let i = 0; i < SENDS; i++) await runtime.send(`${prefix}-sink`, payload);
      await until(async () => (await runtime.ask(`${prefix}-sink`, {})).payload.count === SENDS);
      const sendSeconds = Number(process.hrtime.bigint() - begin) / 1e9;
      const sinkBytes = encodeMessage(createMessage({ sender: `${prefix}-bench`, recipient: `${prefix}-sink`, payload }));
      begin = process.hrtime.bigint();
      for (let i = 0; i < SENDS; i++) nc.publish(`${prefix}.raw.sink`, sinkBytes);
      await until(async () => new TextDecoder().decode((await nc.request(`${prefix}.raw.count`)).data) === String(SENDS));
      const rawSeconds = Number(process.hrtime.bigint() - begin) / 1e9;

      const resumeRuntime: number[] = [];
      for (let i = 0; i < RESUMES; i++) {
        await runtime.suspend(`${prefix}-pausable`, "bench");
        const start = process.hrtime.bigint();
        await runtime.resume(`${prefix}-pausable`, "bench@approver");
        resumeRuntime.push(Number(process.hrtime.bigint() - start) / 1000);
      }
      const resumeRaw = await timeEach(RESUMES, () => nc.request(`${prefix}.raw.echo`, bytes));
      return [
        { bench: "nats", metric: "ask p50 latency", unit: "us", runtime: percentile(askRuntime, 50), baseline: percentile(askRaw, 50), target: { kind: "ratio<=", value: 2 }, note: "baseline: nc.request echo" },
        { bench: "nats", metric: "ask p99 latency", unit: "us", runtime: percentile(askRuntime, 99), baseline: percentile(askRaw, 99), note: "baseline: nc.request echo" },
        { bench: "nats", metric: "one-way sends/s", unit: "msg/s", runtime: SENDS / sendSeconds, baseline: SENDS / rawSeconds, target: { kind: "ratio>=", value: 0.5 }, note: "baseline: raw publish of the same bytes" },
        { bench: "nats", metric: "resume p50 latency", unit: "us", runtime: percentile(resumeRuntime, 50), baseline: percentile(resumeRaw, 50), note: "baseline: nc.request echo" },
      ];
    } finally {
      await runtime.stop();
      await nc.close();
      peer.kill("SIGTERM");
    }
  },
};
