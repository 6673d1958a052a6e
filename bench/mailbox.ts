/**
 * Mailbox throughput: one producer `await put`s N messages while one consumer
 * `await get`s them, both with capacity 1000 (so backpressure applies alike),
 * through a Mailbox and through the baseline AsyncQueue. Messages are built
 * once up front: only put+get is timed.
 */
import type { Message } from "../src/index.js";
import type { CivitasModule } from "./civitas.js";
import { alternate, AsyncQueue, timed, type Benchmark, type Row } from "./harness.js";

const N = 200_000;
const CAPACITY = 1000;
const ROUNDS = 5;

interface Queue {
  put(message: Message): Promise<void>;
  get(): Promise<Message>;
}

async function produce(queue: Queue, messages: readonly Message[], n: number): Promise<void> {
  const size = messages.length;
  for (let i = 0; i < n; i++) await queue.put(messages[i % size] as Message);
}

async function consume(queue: Queue, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await queue.get();
}

async function round(queue: Queue, messages: readonly Message[], n: number): Promise<number> {
  const seconds = await timed(async () => {
    await Promise.all([produce(queue, messages, n), consume(queue, n)]);
  });
  return n / seconds;
}

export const mailbox: Benchmark = {
  name: "mailbox",
  title: `Mailbox put+get, ${N.toLocaleString("en")} messages, capacity ${CAPACITY}`,
  async run({ createMessage, Mailbox }: CivitasModule): Promise<Row[]> {
    const messages = Array.from({ length: 1024 }, (_, i) => createMessage({ sender: "p", recipient: "c", payload: { i } }));
    const pair = await alternate(ROUNDS, 1, {
      baseline: () => round(new AsyncQueue<Message>(CAPACITY), messages, N),
      runtime: () => round(new Mailbox({ capacity: CAPACITY }), messages, N),
    });
    return [{ bench: "mailbox", metric: "put+get throughput", unit: "msg/s", ...pair }];
  },
};
