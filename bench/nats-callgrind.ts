/**
 * The cross-process send rig for counting instructions: one side of a
 * one-way send over NATS, or the raw client's equivalent, in this process,
 * on a real connection to the server at NATS_URL (default 127.0.0.1:4222)
 * whose socket is left out of the measured part, so the count does not
 * depend on the machine's load or on the other process:
 *
 * - `send`: `runtime.send` to an agent another runtime announced, through
 *   the transport's outbox into the connection's buffer; the connection's
 *   final socket write is replaced by a counter once it has connected;
 * - `raw-send`: `nc.publish` of the same envelope's bytes, likewise;
 * - `receive`: the bytes of the envelopes as the socket would hand them to
 *   nats.js (`MSG` frames, 64 messages per read), through the subscription
 *   into a counting agent's `handle`;
 * - `raw-receive`: the same frames into a counting subscription callback;
 * - `decode`: `decodeMessage` alone, no connection, of 64 envelopes as
 *   `runtime.send` writes them (each with its own id, timestamp, trace and
 *   span ids, payload), laid out in one buffer as a socket read: the reader's
 *   share of `receive`, on envelopes that differ where real ones do (the
 *   `receive` frames repeat one envelope).
 *
 * Run it under callgrind with two message counts; the difference of the
 * two totals divided by the difference in messages is the instructions per
 * message, free of start-up and of the warm-up (40,000 messages first):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --predictable --import tsx bench/nats-callgrind.ts send 20000
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node --predictable --import tsx bench/nats-callgrind.ts send 60000
 *
 * Or count between marks, as bench/callgrind.ts does (the counts repeat to
 * within a fraction of a percent, where two totals can differ by more): the
 * rig reads `process.ppid` as the measured part begins and as it ends, and
 * callgrind told `--dump-before=getppid` dumps its counts there; the
 * highest-numbered dump holds exactly the measured messages (its compilers'
 * and collector's part included, as `callgrind_annotate --inclusive=yes` shows):
 *
 *   valgrind --tool=callgrind --dump-before=getppid --callgrind-out-file=/tmp/cg.%p node --predictable --import tsx bench/nats-callgrind.ts send 30000
 *
 * `node --cpu-prof --import tsx bench/nats-callgrind.ts receive 400000`
 * shows where the time goes.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Message } from "../src/index.js";
import { loadCivitas, loadNats } from "./civitas.js";

const SERVERS = process.env.NATS_URL ?? "127.0.0.1:4222";
const WARMUP = 40_000;
/** Messages per socket read on the receiving side (about 12 KiB: a read of a busy socket). */
const PER_READ = 64;
const mode = process.argv[2] ?? "send";
const count = Number(process.argv[3] ?? "20000");
const total = WARMUP + count;

const { civitas } = await loadCivitas(false);
const { NatsTransport, encodeMessage } = await loadNats();
const { AgentProcess, Runtime, InMemoryStateStore, silentLogger, createMessage } = civitas;
const prefix = `cg${process.pid}`;
const payload = { i: 0, note: "benchmark" };
const sinkBytes = encodeMessage(createMessage({ sender: `${prefix}-bench`, recipient: `${prefix}-sink`, payload }));

/** nats.js internals this rig reaches into: the socket write, the parser a socket read feeds, the subscriptions' ids. */
interface Internals {
  protocol: {
    transport: { send(frame: Uint8Array): void };
    parser: { parse(frame: Uint8Array): void };
    subscriptions: { all(): { subject: string; sid: number }[] };
  };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

let started = 0n;

/** Where callgrind, told `--dump-before=getppid`, dumps its counts: the start and the end of the measured part. */
function mark(): void {
  if (process.ppid < 0) throw new Error("unreachable: a parent pid is never negative");
}
/** Wall-clock time per measured message (a rough figure beside the instruction count). */
const elapsed = (): string => `${(Number(process.hrtime.bigint() - started) / count).toFixed(0)} ns/message`;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

let written = 0;
function stubSocketWrite(nc: NatsConnection): void {
  (nc as unknown as Internals).protocol.transport.send = (frame) => {
    written += frame.length;
  };
}

/** `PER_READ` MSG frames carrying `bytes` on `subject`, as one socket read. */
function frames(nc: NatsConnection, subject: string, bytes: Uint8Array): Uint8Array {
  const sid = (nc as unknown as Internals).protocol.subscriptions.all().find((s) => s.subject === subject)?.sid;
  if (sid === undefined) throw new Error(`no subscription to ${subject}`);
  const head = Buffer.from(`MSG ${subject} ${sid} ${bytes.length}\r\n`, "latin1");
  const one = Buffer.concat([head, bytes, Buffer.from("\r\n", "latin1")]);
  return Buffer.concat(Array.from({ length: PER_READ }, () => one));
}

class Idle extends AgentProcess {
  override async handle(_message: Message): Promise<void> {}
}

let sunk = 0;
class Sink extends AgentProcess {
  override async handle(_message: Message): Promise<void> {
    sunk++;
  }
}

if (mode === "decode") {
  const { decodeMessage } = await loadNats();
  const envelopes = Array.from({ length: PER_READ }, (_, i) => encodeMessage(createMessage({ sender: `${prefix}-bench`, recipient: `${prefix}-sink`, payload: { i, note: "benchmark" } })));
  const read = Buffer.concat(envelopes);
  const views: Buffer[] = [];
  let at = 0;
  for (const envelope of envelopes) {
    views.push(read.subarray(at, at + envelope.length));
    at += envelope.length;
  }
  let attempts = 0;
  const decode = (from: number, to: number): void => {
    for (let i = from; i < to; i++) attempts += decodeMessage(views[i % PER_READ] as Buffer).attempt;
  };
  decode(0, WARMUP);
  mark();
  started = process.hrtime.bigint();
  decode(WARMUP, total);
  mark();
  console.log(`decode: ${count} messages after ${WARMUP}, attempts ${attempts}, ${elapsed()}`);
  process.exit(0);
}

const nc = await connect({ servers: SERVERS });
if (mode === "send" || mode === "raw-send") {
  const runtime = new Runtime({ root: [new Idle(`${prefix}-bench`)], transport: new NatsTransport({ connection: nc, discoveryMs: 0 }), logger: silentLogger, store: new InMemoryStateStore() });
  await runtime.start();
  // The sink is announced by "another runtime": a registration on the bus.
  const other = await connect({ servers: SERVERS });
  const registration = createMessage({ sender: "peer", recipient: "peer", type: "_agency.register", payload: { name: `${prefix}-sink`, capabilities: [], capability_metadata: {} } });
  const announced = (): boolean => (runtime as unknown as { services: { bus: { transport: { hosts(n: string): boolean } } } }).services.bus.transport.hosts(`${prefix}-sink`);
  // Announced again until it arrives: under valgrind the first one can come before the subscription is up.
  while (!announced()) {
    other.publish("civitas.agent._agency.register", encodeMessage(registration));
    await other.flush();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await other.close();
  stubSocketWrite(nc);
  for (let i = 0; i < total; i++) {
    if (i === WARMUP) {
      await turn();
      mark();
      started = process.hrtime.bigint();
    }
    if (mode === "send") await runtime.send(`${prefix}-sink`, payload);
    else {
      // As the benchmark's raw side: publishes without awaiting, a turn now and then.
      nc.publish(`${prefix}.raw.sink`, sinkBytes);
      if ((i & 1023) === 1023) await turn();
    }
  }
  await turn();
  mark();
  console.log(`${mode}: ${count} messages after ${WARMUP}, ${written} bytes written, ${elapsed()}`);
} else {
  let raw = 0;
  let subject: string;
  if (mode === "receive") {
    const runtime = new Runtime({ root: [new Sink(`${prefix}-sink`, { mailboxSize: 100_000 })], transport: new NatsTransport({ connection: nc, discoveryMs: 0 }), logger: silentLogger, store: new InMemoryStateStore() });
    await runtime.start();
    subject = `civitas.agent.${prefix}-sink`;
  } else {
    subject = `${prefix}.raw.sink`;
    nc.subscribe(subject, { callback: () => void raw++ });
  }
  const read = frames(nc, subject, sinkBytes);
  const parser = (nc as unknown as Internals).protocol.parser;
  let parsed = 0;
  for (; parsed < total; parsed += PER_READ) {
    if (parsed === WARMUP) {
      mark();
      started = process.hrtime.bigint();
    }
    parser.parse(read);
    await turn();
  }
  await until(() => sunk + raw >= parsed);
  mark();
  console.log(`${mode}: ${count} messages after ${WARMUP}, ${sunk + raw} handled, ${elapsed()}`);
}
process.exit(0);
