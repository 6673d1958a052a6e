// civitas-ts as bench-peers' civitas-ts.mjs runs it, but with a clock the runtime reads from shared
// memory, which a worker thread refreshes from Date.now() every millisecond: what W1-W3 would gain
// if reading the time were not a call into V8's runtime (~36-45 ns on the VMs these benchmarks run
// on, one per message). Data for a design decision (docs/benchmarks.md, "stop 45"), not how
// civitas-ts runs: such a clock costs a thread and its wake-ups while the process is idle, lags the
// wall clock by up to a refresh period (more when the thread is not scheduled), and a plain
// Float64Array read of memory another thread writes is not guaranteed untorn by the memory model.
// Copy it into the bench-peers folder with the others and list `civitas-coarse-clock` in JS_PEERS.
import { Worker } from 'node:worker_threads';
import { AgentProcess, Runtime, Supervisor, systemClock } from 'civitas-ts';

export const meta = { name: 'civitas-coarse-clock', version: 'civitas-ts with a clock read from shared memory' };

const shared = new SharedArrayBuffer(16);
const time = new Float64Array(shared, 0, 1);
time[0] = Date.now();
const refresher = new Worker(
  `const { workerData } = require('node:worker_threads');
   const time = new Float64Array(workerData, 0, 1);
   const idle = new Int32Array(workerData, 8, 1);
   for (;;) { time[0] = Date.now(); Atomics.wait(idle, 0, 0, 1); }`,
  { eval: true, workerData: shared },
);
refresher.unref();
const clock = { now: () => time[0], setTimeout: systemClock.setTimeout };

async function runtimeOf(children) {
  const runtime = new Runtime({ root: new Supervisor('root', { children }), clock });
  await runtime.start();
  return runtime;
}

export async function w1(total) {
  const half = total / 2;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  let n = 0;
  class Pong extends AgentProcess { async handle() { await this.send('ping', {}); } }
  class Ping extends AgentProcess { async handle() { if (++n === half) done(); else await this.send('pong', {}); } }
  const runtime = await runtimeOf([new Ping('ping'), new Pong('pong')]);
  return () => { void runtime.send('pong', {}); return finished; };
}

export async function w2(senders, perSender) {
  const total = senders * perSender;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  let n = 0;
  class Receiver extends AgentProcess { async handle() { if (++n === total) done(); } }
  class Sender extends AgentProcess { async handle() { for (let j = 0; j < perSender; j++) await this.send('receiver', { j }); } }
  const children = [new Receiver('receiver')];
  for (let i = 0; i < senders; i++) children.push(new Sender(`sender-${i}`));
  const runtime = await runtimeOf(children);
  return () => { for (let i = 0; i < senders; i++) void runtime.send(`sender-${i}`, {}); return finished; };
}

export async function w3() {
  class Server extends AgentProcess { async handle(m) { return this.reply({ n: m.payload.n + 1 }); } }
  const runtime = await runtimeOf([new Server('server')]);
  return { ask: async (n) => (await runtime.ask('server', { n })).payload.n };
}
