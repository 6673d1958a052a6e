import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { AgentProcess, InMemoryStateStore, Runtime, silentLogger, type Message } from "../../src/index.js";
import { uuidv7 } from "../../src/message/ids.js";
import { BusLink } from "../../src/nats/bus-link.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";

const SERVERS = "127.0.0.1:4222";

/** Records the `i` of every message, in arrival order. */
class Recorder extends AgentProcess {
  readonly seen: number[] = [];
  override async handle(message: Message): Promise<void> {
    this.seen.push(message.payload.i as number);
  }
}

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Two runtimes on the real server, each with its own connection: `sender` hosts nothing the test uses, `receiver` a Recorder. */
async function pair(): Promise<{ sender: Runtime; receiver: Runtime; recorder: Recorder; name: string; senderTransport: NatsTransport }> {
  const name = `outbox-${uuidv7().slice(-8)}`;
  const recorder = new Recorder(name, { mailboxSize: 10_000 });
  const receiver = new Runtime({ root: [recorder], transport: new NatsTransport({ servers: SERVERS }), logger: silentLogger, store: new InMemoryStateStore() });
  await receiver.start();
  const senderTransport = new NatsTransport({ servers: SERVERS });
  const sender = new Runtime({ root: [new Recorder(`${name}-idle`)], transport: senderTransport, logger: silentLogger, store: new InMemoryStateStore() });
  await sender.start();
  await waitUntil(() => senderTransport.hosts(name));
  return { sender, receiver, recorder, name, senderTransport };
}

describe("sends to another process through the outbox", () => {
  it("a long run of awaited sends arrives complete and in order", { timeout: 30_000 }, async () => {
    const { sender, receiver, recorder, name } = await pair();
    try {
      for (let i = 0; i < 3000; i++) await sender.send(name, { i, pad: "x".repeat(i % 200) });
      await waitUntil(() => recorder.seen.length === 3000);
      expect(recorder.seen).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    } finally {
      await sender.stop();
      await receiver.stop();
    }
  });

  it("sends still queued when stop() is called are handed over before the connection closes", { timeout: 30_000 }, async () => {
    const { sender, receiver, recorder, name } = await pair();
    try {
      const sends = Array.from({ length: 50 }, (_, i) => sender.send(name, { i }));
      await Promise.all(sends);
      await sender.stop(); // in the same turn as the last send resolved: the outbox still holds them
      await waitUntil(() => recorder.seen.length === 50);
      expect(recorder.seen).toEqual(Array.from({ length: 50 }, (_, i) => i));
    } finally {
      await sender.stop();
      await receiver.stop();
    }
  });
});

/** A connection double recording what is published, and when the link flushes or drains. */
function fakeConnection(options: { closed?: boolean; maxPayload?: number } = {}): { nc: NatsConnection; log: string[] } {
  const log: string[] = [];
  const nc = {
    publish: (subject: string, data: Uint8Array) => void log.push(`${subject}:${data.length}`),
    isClosed: () => options.closed === true,
    isDraining: () => false,
    info: { max_payload: options.maxPayload ?? 1024 * 1024 },
    status: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise<never>(() => {}) }) }),
    flush: () => {
      log.push("flush");
      return Promise.resolve();
    },
    drain: () => {
      log.push("drain");
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
  return { nc: nc as unknown as NatsConnection, log };
}

describe("BusLink's outbox", () => {
  it("hands the publishes of one turn to the connection together, in order, once the turn ends", async () => {
    const { nc, log } = fakeConnection();
    const link = new BusLink(nc, true, 1000, silentLogger, () => {});
    for (let i = 1; i <= 3; i++) await link.publish(`s.${i}`, new Uint8Array(i));
    expect(log).toEqual([]); // awaited, yet still in the outbox: no write per message
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(["s.1:1", "s.2:2", "s.3:3"]);
  });

  it("hands the outbox over at once when it holds 32 KiB as nats.js counts its buffer (subject and framing included)", async () => {
    const { nc, log } = fakeConnection();
    const link = new BusLink(nc, true, 1000, silentLogger, () => {});
    // Each takes 1,024 bytes in nats.js's buffer: "PUB s 1007\r\n" (12), the payload, "\r\n" (counted as 17 with the subject: a little over).
    for (let i = 0; i < 31; i++) await link.publish("s", new Uint8Array(1007));
    expect(log).toEqual([]);
    await link.publish("s", new Uint8Array(1007));
    expect(log).toHaveLength(32); // at 32 KiB of payloads alone (32,224 bytes) it would still wait for the end of the turn
  });

  it("flush() and close() hand over what is queued before they flush or drain", async () => {
    const { nc, log } = fakeConnection();
    const link = new BusLink(nc, true, 1000, silentLogger, () => {});
    await link.publish("a", new Uint8Array(1));
    await link.flush();
    await link.publish("b", new Uint8Array(2));
    await link.close();
    expect(log).toEqual(["a:1", "flush", "b:2", "drain"]);
  });

  it("refuses with TRANSPORT_UNAVAILABLE, queuing nothing, what the connection would refuse", async () => {
    const open = fakeConnection({ maxPayload: 8 });
    const link = new BusLink(open.nc, true, 1000, silentLogger, () => {});
    await expect(link.publish("big", new Uint8Array(9))).rejects.toMatchObject({ code: "TRANSPORT_UNAVAILABLE" });
    await expect(link.publish("a b", new Uint8Array(1))).rejects.toMatchObject({ code: "TRANSPORT_UNAVAILABLE" });
    const closed = fakeConnection({ closed: true });
    await expect(new BusLink(closed.nc, true, 1000, silentLogger, () => {}).publish("s", new Uint8Array(1))).rejects.toMatchObject({ code: "TRANSPORT_UNAVAILABLE" });
    await new Promise((resolve) => setImmediate(resolve));
    expect(open.log).toEqual([]);
    expect(closed.log).toEqual([]);
  });
});
