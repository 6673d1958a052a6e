import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentProcess, Runtime, silentLogger, type JsonObject, type Message } from "../../src/index.js";
import type { CivitasError } from "../../src/errors/civitas-error.js";
import { uuidv7 } from "../../src/message/ids.js";
import { createMessage } from "../../src/message/message.js";
import { decodeMessage, encodeMessage } from "../../src/nats/codec.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { testTracing } from "../support/tracing.js";
import { startPeer, type PeerProcess } from "./support/peer-process.js";

const SERVERS = "127.0.0.1:4222";
const PEER = "test/nats/fixtures/nats-peer.ts";
/** Names unique to this run: other test runs may share the server. */
const p = `t${uuidv7().slice(-8)}`;
const peerPrefix = `${p}-child`;

/** Answers requests with their payload and where it ran; takes plain sends silently. */
class Echo extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    if (message.replyTo !== undefined) return this.reply({ ...message.payload, pid: process.pid, by: this.name });
  }
}

/** Runs one messaging operation from inside an agent, as application code would, and replies with what happened. */
class Caller extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    if (message.replyTo === undefined) return;
    const { op, to, payload = {} } = message.payload as { op: string; to: string; payload?: JsonObject };
    try {
      if (op === "send") await this.send(to, payload);
      if (op === "ask") return this.reply({ reply: (await this.ask(to, payload, { timeoutMs: 5000 })).payload });
      if (op === "broadcast") return this.reply({ count: await this.broadcast(to, payload) });
      if (op === "sendCapable") await this.sendCapable(to, payload);
      return this.reply({ ok: true });
    } catch (error) {
      return this.reply({ code: (error as CivitasError).code ?? String(error) });
    }
  }
}

const tracing = testTracing();
let transport: NatsTransport;
let runtime: Runtime;
let peer: PeerProcess;
let raw: NatsConnection;

beforeAll(async () => {
  transport = new NatsTransport({ servers: SERVERS, serializer: "json" });
  runtime = new Runtime({ root: [new Echo(`${p}-parent-echo`), new Caller(`${p}-caller`), new Echo(`${p}-worker-0`)], transport, logger: silentLogger, tracerProvider: tracing.provider });
  await runtime.start();
  // The child starts after this runtime: it must learn this runtime's agents (it asks one at start) and this runtime its.
  peer = await startPeer(PEER, [SERVERS, peerPrefix, "msgpack", `${p}-parent-echo`]);
  raw = await connect({ servers: SERVERS });
  await waitUntil(() => transport.hosts(`${peerPrefix}-probe`));
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await runtime?.stop();
  await raw?.close();
  await tracing.close();
});

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const call = async (payload: JsonObject): Promise<JsonObject> => (await runtime.ask(`${p}-caller`, payload, { timeoutMs: 10_000 })).payload;

describe("NatsTransport between two processes", () => {
  it("a late-starting runtime learns the agents started before it, and the earlier one learns its", async () => {
    const ready = peer.events.find((event) => event.event === "ready") as { remote: string[]; asked: JsonObject };
    expect(ready.remote).toContain(`${p}-parent-echo`);
    expect(ready.asked).toMatchObject({ from: peerPrefix, pid: process.pid, by: `${p}-parent-echo` });
    expect(transport.remoteAgents()).toEqual(expect.arrayContaining([`${peerPrefix}-echo`, `${peerPrefix}-sink`, `${peerPrefix}-probe`]));
  });

  it("runtime.ask reaches an agent in the other process and resolves with its reply", async () => {
    const reply = await runtime.ask(`${peerPrefix}-echo`, { n: 1 }, { timeoutMs: 5000 });
    expect(reply.payload).toEqual({ n: 1, pid: peer.pid, by: `${peerPrefix}-echo` });
    expect(reply.correlationId).toBeDefined();
  });

  it("an agent's ask and send reach the other process", async () => {
    expect(await call({ op: "ask", to: `${peerPrefix}-echo`, payload: { k: "v" } })).toEqual({ reply: { k: "v", pid: peer.pid, by: `${peerPrefix}-echo` } });
    expect(await call({ op: "send", to: `${peerPrefix}-sink`, payload: { note: "hello" } })).toEqual({ ok: true });
    const got = await peer.waitFor((event) => event.event === "got" && (event.payload as JsonObject).note === "hello");
    expect(got).toMatchObject({ to: `${peerPrefix}-sink`, sender: `${p}-caller`, type: "message" });
  });

  it("sendCapable finds an agent in the other process by its capability", async () => {
    expect(await call({ op: "sendCapable", to: "pricing", payload: { quote: 7 } })).toEqual({ ok: true });
    await peer.waitFor((event) => event.event === "got" && (event.payload as JsonObject).quote === 7);
    expect(await call({ op: "sendCapable", to: `${p}-no-such-capability`, payload: {} })).toEqual({ code: "AGENT_NOT_FOUND" });
  });

  it("broadcast reaches matching agents in both processes", async () => {
    const result = await call({ op: "broadcast", to: `${p}*worker-*`, payload: { fanout: 1 } });
    expect(result).toEqual({ count: 2 });
    await peer.waitFor((event) => event.event === "got" && event.to === `${peerPrefix}-worker-1` && (event.payload as JsonObject).fanout === 1);
  });

  it("a name nobody hosts is AGENT_NOT_FOUND at once, from outside and from inside", async () => {
    await expect(runtime.send(`${p}-nobody`, {})).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    await expect(runtime.ask(`${p}-nobody`, {})).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    expect(await call({ op: "send", to: `${p}-nobody` })).toEqual({ code: "AGENT_NOT_FOUND" });
  });

  it("an ask across processes times out with ASK_TIMEOUT, and its late reply is dropped and counted", async () => {
    const before = runtime.lateReplies;
    await expect(runtime.ask(`${peerPrefix}-slow`, { delayMs: 400 }, { timeoutMs: 100 })).rejects.toMatchObject({ code: "ASK_TIMEOUT" });
    await waitUntil(() => runtime.lateReplies === before + 1);
  });

  it("a span in this process is the parent of the handle span in the other", async () => {
    const marker = uuidv7();
    await call({ op: "ask", to: `${peerPrefix}-echo`, payload: { marker } });
    // the caller's handle span sent the ask: find it among this process's spans
    const callerSpans = tracing.named("civitas.agent.handle").filter((span) => span.attributes["civitas.agent.name"] === `${p}-caller`);
    const sending = callerSpans.at(-1);
    expect(sending).toBeDefined();
    const probe = await runtime.ask(`${peerPrefix}-probe`, {}, { timeoutMs: 5000 });
    const spans = probe.payload.spans as { traceId: string; parent: string | null; name: string }[];
    const handle = spans.find((span) => span.name === "civitas.agent.handle" && span.traceId === sending?.spanContext().traceId);
    expect(handle, JSON.stringify(spans)).toBeDefined();
    expect(handle?.parent).toBe(sending?.spanContext().spanId);
  });
});

describe("the bus side of an agent", () => {
  /** Publishes a Python-like envelope to an agent and waits for the answer on a `_reply.<uuid7>` address of its own. */
  async function rawAsk(to: string, type: string, payload: JsonObject = {}, serializer: "json" | "msgpack" = "msgpack"): Promise<Message> {
    const replyTo = `_reply.${uuidv7()}`;
    const sub = raw.subscribe(`civitas.agent.${replyTo}`, { max: 1, timeout: 5000 });
    const request = { ...createMessage({ sender: "py-supervisor", recipient: to, payload, correlationId: uuidv7(), replyTo }), type, priority: 1 };
    raw.publish(`civitas.agent.${to}`, encodeMessage(request, serializer));
    for await (const msg of sub) return decodeMessage(msg.data);
    throw new Error("no answer");
  }

  it("answers a heartbeat from the bus, also while the agent is SUSPENDED", async () => {
    const pausable = `${peerPrefix}-pausable`;
    expect((await rawAsk(pausable, "_agency.heartbeat")).type).toBe("_agency.heartbeat_ack");
    await runtime.send(pausable, {}, { type: "pause" });
    await peer.waitFor((event) => event.event === "paused");
    const status = await runtime.ask(`${peerPrefix}-probe`, { status: pausable }, { timeoutMs: 5000 });
    expect(status.payload.status).toBe("SUSPENDED");
    const ack = await rawAsk(pausable, "_agency.heartbeat", {}, "json");
    expect(ack).toMatchObject({ type: "_agency.heartbeat_ack", sender: pausable });
  });

  it("drops a control message that arrives from the bus: a forged _agency.resume does not resume the agent", async () => {
    const pausable = `${peerPrefix}-pausable`;
    await peer.waitFor((event) => event.event === "paused");
    const forged = { ...createMessage({ sender: "mallory", recipient: pausable, payload: { approver: "mallory" } }), type: "_agency.resume", priority: 1 };
    raw.publish(`civitas.agent.${pausable}`, encodeMessage(forged, "msgpack"));
    await raw.flush();
    // a heartbeat sent after it is answered after it was looked at: the forged resume was dropped by then
    expect((await rawAsk(pausable, "_agency.heartbeat")).type).toBe("_agency.heartbeat_ack");
    const status = await runtime.ask(`${peerPrefix}-probe`, { status: pausable }, { timeoutMs: 5000 });
    expect(status.payload.status).toBe("SUSPENDED");
  });

  it("answers a Python-style ask (reply_to _reply.<uuid7>, either serializer) by publishing to civitas.agent.<reply_to>", async () => {
    for (const serializer of ["json", "msgpack"] as const) {
      const reply = await rawAsk(`${p}-parent-echo`, "quote", { sku: serializer }, serializer);
      expect(reply.payload).toEqual({ sku: serializer, pid: process.pid, by: `${p}-parent-echo` });
      expect(reply.replyTo).toBeUndefined();
      expect(reply.correlationId).toBeDefined();
    }
  });

  it("a runtime that stops withdraws its agents: they are AGENT_NOT_FOUND afterwards", async () => {
    const other = new NatsTransport({ servers: SERVERS });
    const leaving = new Runtime({ root: [new Echo(`${p}-leaving`)], transport: other, logger: silentLogger });
    await leaving.start();
    await waitUntil(() => transport.hosts(`${p}-leaving`));
    expect((await runtime.ask(`${p}-leaving`, { x: 1 }, { timeoutMs: 5000 })).payload).toMatchObject({ x: 1 });
    await leaving.stop();
    await waitUntil(() => !transport.hosts(`${p}-leaving`));
    await expect(runtime.send(`${p}-leaving`, {})).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
  });
});
