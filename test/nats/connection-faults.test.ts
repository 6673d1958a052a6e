import { connect } from "@nats-io/transport-node";
import { afterEach, describe, expect, it } from "vitest";
import { AgentProcess, Runtime, silentLogger, type Message } from "../../src/index.js";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { TransportUnavailableError } from "../../src/errors/errors.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { ownNatsServer, type OwnNatsServer } from "./support/nats-server.js";

/** Answers requests; records plain sends. */
class Box extends AgentProcess {
  readonly got: Message[] = [];
  override async handle(message: Message): Promise<Message | void> {
    if (message.replyTo !== undefined) return this.reply({ by: this.name });
    this.got.push(message);
  }
}

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function server(): Promise<OwnNatsServer> {
  const s = await ownNatsServer();
  await s.start();
  cleanups.push(() => s.stop());
  return s;
}

async function runtimeOn(url: string, agent: AgentProcess, options: { sendTimeoutMs?: number; reconnectTimeWait?: number } = {}): Promise<{ runtime: Runtime; transport: NatsTransport }> {
  const transport = new NatsTransport({ servers: url, reconnectTimeWait: options.reconnectTimeWait ?? 100, ...(options.sendTimeoutMs === undefined ? {} : { sendTimeoutMs: options.sendTimeoutMs }) });
  const runtime = new Runtime({ root: [agent], transport, logger: silentLogger });
  await runtime.start();
  cleanups.push(() => runtime.stop());
  return { runtime, transport };
}

describe("NatsTransport connection faults", () => {
  it("start() rejects with TRANSPORT_UNAVAILABLE when no server answers", async () => {
    const s = await ownNatsServer(); // never started
    const runtime = new Runtime({ root: [new Box("lonely")], transport: new NatsTransport({ servers: s.url }), logger: silentLogger });
    const error = await runtime.start().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TransportUnavailableError);
    expect(error).toBeInstanceOf(CivitasError);
    expect(error).toMatchObject({ code: "TRANSPORT_UNAVAILABLE", name: "TransportUnavailableError" });
    expect((error as Error).message).toContain(s.url);
  });

  it("while the server is down a send waits, then rejects with TRANSPORT_UNAVAILABLE at its deadline; local agents keep working", async () => {
    const s = await server();
    const a = new Box("fault-a");
    const { runtime, transport: aTransport } = await runtimeOn(s.url, a, { sendTimeoutMs: 300 });
    const other = await runtimeOn(s.url, new Box("fault-b"));
    await waitUntil(() => other.transport.hosts("fault-a"));
    await s.stop();
    await waitUntil(() => !aTransport.connected);
    const started = Date.now();
    const error = await runtime.send("fault-b", { lost: false }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: "TRANSPORT_UNAVAILABLE" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    // in-process delivery does not need the bus
    expect((await runtime.ask("fault-a", {}, { timeoutMs: 2000 })).payload).toEqual({ by: "fault-a" });
  });

  it("a send waiting for the connection rejects with the signal's reason when aborted", async () => {
    const s = await server();
    const { runtime, transport } = await runtimeOn(s.url, new Box("abort-a"));
    await runtimeOn(s.url, new Box("abort-b"));
    await waitUntil(() => transport.hosts("abort-b"));
    await s.stop();
    await waitUntil(() => !transport.connected);
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const sending = runtime.send("abort-b", {}, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 100);
    await expect(sending).rejects.toBe(reason);
  });

  it("reconnects after the server comes back: a send that waited goes out, and messages flow again", async () => {
    const s = await server();
    const a = await runtimeOn(s.url, new Box("back-a"), { reconnectTimeWait: 400 });
    const b = new Box("back-b");
    await runtimeOn(s.url, b, { reconnectTimeWait: 50 });
    await waitUntil(() => a.transport.hosts("back-b"));
    await s.stop();
    await waitUntil(() => !a.transport.connected);
    expect(a.transport.connected).toBe(false);
    const waiting = a.runtime.send("back-b", { during: "outage" });
    await s.start();
    await waiting;
    expect(a.transport.connected).toBe(true);
    await waitUntil(() => b.got.some((m) => m.payload.during === "outage"));
    expect((await a.runtime.ask("back-b", {}, { timeoutMs: 5000 })).payload).toEqual({ by: "back-b" });
  });

  it("runtime.stop() closes a connection the transport created, and never one it was given", async () => {
    const s = await server();
    const given = await connect({ servers: s.url });
    cleanups.push(() => given.close());
    const borrowed = new Runtime({ root: [new Box("given-a")], transport: new NatsTransport({ connection: given }), logger: silentLogger });
    await borrowed.start();
    await borrowed.stop();
    expect(given.isClosed()).toBe(false);
    await given.flush();

    const own = new NatsTransport({ servers: s.url });
    const owning = new Runtime({ root: [new Box("own-a")], transport: own, logger: silentLogger });
    await owning.start();
    const watcher = await connect({ servers: s.url });
    cleanups.push(() => watcher.close());
    await owning.stop();
    await expect(owning.stop()).resolves.toBeUndefined(); // idempotent
    // its agents were withdrawn and its connection is gone: publishing to its subject reaches nobody
    await expect(watcher.request("civitas.agent.own-a", new Uint8Array(), { timeout: 1000 })).rejects.toThrow();
  });

  it("refuses options that cannot work with INVALID_ARGUMENT", () => {
    expect(() => new NatsTransport({})).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => new NatsTransport({ servers: "x", serializer: "xml" as never })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => new NatsTransport({ servers: "x", sendTimeoutMs: -1 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});
