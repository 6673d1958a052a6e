import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentProcess, Runtime, silentLogger, type JsonObject, type Message } from "../../src/index.js";
import { uuidv7 } from "../../src/message/ids.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { startPeer, type PeerProcess } from "./support/peer-process.js";

// Python Civitas on the same bus: a peer script built on nats-py that speaks
// its subjects and envelope (test/nats/fixtures/python_peer.py). It runs
// with the project-local Python that `npm test` fills with nats-py and msgpack
// (scripts/test-setup.ts); without them the peer fails to start and these
// tests fail, loudly.
const SERVERS = "127.0.0.1:4222";
const PEER = "test/nats/fixtures/python_peer.py";

/** Answers requests with their payload; records plain sends. */
class Quoter extends AgentProcess {
  readonly sends: Message[] = [];
  override async handle(message: Message): Promise<Message | void> {
    if (message.replyTo === undefined) {
      this.sends.push(message);
      return;
    }
    return this.reply({ quoted: message.payload, by: this.name });
  }
}

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each([
  ["json", "msgpack"],
  ["msgpack", "json"],
] as const)("a Python Civitas peer writing %s, civitas-ts writing %s", (pythonSerializer, tsSerializer) => {
  const p = `py${uuidv7().slice(-8)}`;
  const tsAgent = `${p}-quoter`;
  const pyAgent = `${p}-py-agent`;
  const quoter = new Quoter(tsAgent, { capabilities: ["quote"] });
  let transport: NatsTransport;
  let runtime: Runtime;
  let peer: PeerProcess;

  beforeAll(async () => {
    transport = new NatsTransport({ servers: SERVERS, serializer: tsSerializer });
    runtime = new Runtime({ root: [quoter], transport, logger: silentLogger });
    await runtime.start();
    // The Python peer starts after the civitas-ts runtime and announces once: it learns the civitas-ts agent from its re-announcement.
    peer = await startPeer(PEER, [SERVERS, p, pythonSerializer, tsAgent]);
  }, 60_000);

  afterAll(async () => {
    await peer?.stop();
    await runtime?.stop();
  });

  it("registration works both ways", async () => {
    await waitUntil(() => transport.hosts(pyAgent));
    const registered = await peer.waitFor((event) => event.event === "registered" && event.name === tsAgent);
    expect(registered.capabilities).toEqual(["quote"]);
  });

  it("a Python agent asks a civitas-ts agent and gets the reply", async () => {
    const asked = await peer.waitFor((event) => event.event === "asked");
    const reply = asked.reply as JsonObject;
    expect(asked.correlation_ok).toBe(true);
    expect(reply).toMatchObject({ schema_version: 1, type: "reply", sender: tsAgent, reply_to: null, payload: { quoted: { sku: "A-1", serializer: pythonSerializer }, by: tsAgent } });
    expect(Object.keys(reply).slice(0, 14)).toEqual(["schema_version", "id", "type", "sender", "recipient", "correlation_id", "reply_to", "payload", "timestamp", "trace_id", "span_id", "parent_span_id", "attempt", "priority"]);
    expect(typeof reply.timestamp).toBe("number");
    expect(Math.abs((reply.timestamp as number) - Date.now() / 1000)).toBeLessThan(60);
  });

  it("a Python supervisor's heartbeat to a civitas-ts agent is acknowledged", async () => {
    const ack = await peer.waitFor((event) => event.event === "heartbeat_ack");
    expect(ack).toMatchObject({ type: "_agency.heartbeat_ack", sender: tsAgent });
  });

  it("civitas-ts asks a Python agent and gets its reply", async () => {
    await waitUntil(() => transport.hosts(pyAgent));
    const reply = await runtime.ask(pyAgent, { order: 42 }, { timeoutMs: 5000 });
    expect(reply.payload).toEqual({ echo: { order: 42 }, lang: "python", pid: peer.pid });
    expect(reply.sender).toBe(pyAgent);
  });

  it("civitas-ts sends to a Python agent, which reads Python's fourteen keys", async () => {
    await runtime.send(pyAgent, { note: "from ts" });
    const got = await peer.waitFor((event) => event.event === "got" && (event.payload as JsonObject).note === "from ts");
    expect(got).toMatchObject({ type: "message", sender: "_runtime" });
    expect(got.keys).toEqual(["schema_version", "id", "type", "sender", "recipient", "correlation_id", "reply_to", "payload", "timestamp", "trace_id", "span_id", "parent_span_id", "attempt", "priority"]);
  });

  it("a Python agent that deregisters is AGENT_NOT_FOUND afterwards", async () => {
    expect(await peer.stop()).toBe(0);
    await waitUntil(() => !transport.hosts(pyAgent));
    await expect(runtime.send(pyAgent, {})).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
  });
});
