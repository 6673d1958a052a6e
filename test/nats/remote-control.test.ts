import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentProcess, Runtime, silentLogger, type JsonObject, type Message } from "../../src/index.js";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { uuidv7 } from "../../src/message/ids.js";
import { decodeMessage, encodeMessage } from "../../src/nats/codec.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { startPeer, type PeerProcess } from "./support/peer-process.js";
import { announceAgent, untilHosted } from "./support/remote.js";

const SERVERS = "127.0.0.1:4222";
const PEER = "test/nats/fixtures/nats-peer.ts";
const p = `c${uuidv7().slice(-8)}`;
const pausable = `${p}-pausable`;

class Idle extends AgentProcess {
  override async handle(_message: Message): Promise<void> {}
}

let transport: NatsTransport;
let runtime: Runtime;
let peer: PeerProcess;
let raw: NatsConnection;

beforeAll(async () => {
  transport = new NatsTransport({ servers: SERVERS });
  runtime = new Runtime({ root: [new Idle(`${p}-approver`)], transport, logger: silentLogger });
  await runtime.start();
  peer = await startPeer(PEER, [SERVERS, p, "msgpack"]);
  raw = await connect({ servers: SERVERS });
  await untilHosted(transport, `${p}-probe`);
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await runtime?.stop();
  await raw?.close();
});

async function probe(): Promise<{ status: string | null; audit: { event: string; agent: string }[] }> {
  return (await runtime.ask(`${p}-probe`, { status: pausable }, { timeoutMs: 5000 })).payload as never;
}

async function rejection(promise: Promise<unknown>): Promise<CivitasError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(CivitasError);
  return error as CivitasError;
}

/** A control request as the runtime writes it, sent on the raw connection, answered by the owner. */
async function rawControl(type: string, requestId: string, args: JsonObject): Promise<JsonObject> {
  const request = { id: uuidv7(), type, sender: "_runtime", recipient: pausable, payload: { requestId, args, timeoutMs: 5000 }, timestamp: Date.now(), traceId: "a".repeat(32), spanId: "b".repeat(16), attempt: 0, priority: 1 };
  return decodeMessage((await raw.request(`civitas.ctl.${pausable}`, encodeMessage(request, "json"), { timeout: 5000 })).data).payload;
}

describe("control of an agent in another process", () => {
  it("suspend and resume work across processes, decided and receipted by the owner", async () => {
    const before = Date.now();
    const pause = await runtime.suspend(pausable, "needs approval", { expiresInMs: 3_600_000 });
    expect((await probe()).status).toBe("SUSPENDED");
    // The owner answers with its pause: resuming by that id is accepted (another id would be STALE_APPROVAL).
    expect(pause.suspensionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(pause.expiresAt!)).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(await runtime.suspend(pausable, "needs approval")).toEqual(pause);
    await runtime.resume(pausable, "alice", { suspensionId: pause.suspensionId });
    const after = await probe();
    expect(after.status).toBe("RUNNING");
    expect(after.audit.filter((e) => e.agent === pausable && e.event !== "agent.start").map((e) => e.event)).toEqual(["agent.suspend", "agent.resume"]);
  });

  it("failIfSuspended fails fast with AGENT_SUSPENDED for an agent suspended in another process", async () => {
    await runtime.suspend(pausable, "again");
    const error = await rejection(runtime.ask(pausable, {}, { failIfSuspended: true, timeoutMs: 5000 }));
    expect(error.code).toBe("AGENT_SUSPENDED");
  });

  it("the owner's refusals come back as their codes: STALE_APPROVAL, RESUME_REFUSED", async () => {
    expect((await rejection(runtime.resume(pausable, "alice", { suspensionId: "not-this-one" }))).code).toBe("STALE_APPROVAL");
    const refused = await rejection(runtime.resume(pausable, "refused-approver"));
    expect(refused.code).toBe("RESUME_REFUSED");
    expect(refused.message).toContain(pausable);
    expect((await probe()).status).toBe("SUSPENDED");
  });

  it("INVALID_APPROVER is raised before anything is sent, AGENT_NOT_FOUND at once for an unknown name", async () => {
    const before = (await probe()).audit.length;
    expect((await rejection(runtime.resume(pausable, "  "))).code).toBe("INVALID_APPROVER");
    const started = Date.now();
    expect((await rejection(runtime.suspend(`${p}-nobody`))).code).toBe("AGENT_NOT_FOUND");
    expect(Date.now() - started).toBeLessThan(200);
    expect((await probe()).audit.length).toBe(before);
  });

  it("a retried request (same requestId, first answer lost) returns the recorded outcome: one receipt, no STALE_APPROVAL", async () => {
    const status = await runtime.ask(`${p}-probe`, { status: pausable }, { timeoutMs: 5000 });
    expect(status.payload.status).toBe("SUSPENDED");
    const resumesBefore = (await probe()).audit.filter((e) => e.event === "agent.resume").length;
    const requestId = uuidv7();
    const first = await rawControl("_agency.resume", requestId, { approver: "bob" });
    const retried = await rawControl("_agency.resume", requestId, { approver: "bob" });
    expect(first).toEqual({ ok: true, answer: {} });
    expect(retried).toEqual(first);
    const after = await probe();
    expect(after.status).toBe("RUNNING");
    expect(after.audit.filter((e) => e.event === "agent.resume").length).toBe(resumesBefore + 1);
  });

  it("CONTROL_TIMEOUT when the request was taken and no answer came", async () => {
    // an owner that takes control requests and never answers
    const silent = `${p}-silent`;
    const sub = raw.subscribe(`civitas.ctl.${silent}`);
    await announceAgent(raw, silent, "msgpack");
    await untilHosted(transport, silent);
    expect((await rejection(runtime.suspend(silent, "", { timeoutMs: 300 }))).code).toBe("CONTROL_TIMEOUT");
    sub.unsubscribe();
  });

  it("AGENT_UNREACHABLE at the deadline when the owner is gone", async () => {
    await peer.stop(); // it withdraws its agents; re-announce one as if a crashed owner had left it behind
    await announceAgent(raw, pausable, "json");
    await untilHosted(transport, pausable);
    const started = Date.now();
    expect((await rejection(runtime.resume(pausable, "alice", { timeoutMs: 400 }))).code).toBe("AGENT_UNREACHABLE");
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
  });
});
