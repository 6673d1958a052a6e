/**
 * Control of agents across processes with a shared PostgreSQL store: the
 * cluster-wide list of pauses (`listSuspended({ scope: "cluster" })`), deny
 * and deadlines decided by the owner in another process, errors by their
 * codes, and a request whose first answer is really lost on the wire (the
 * requester's TCP connection is cut between the request and the answer).
 * A child process (fixtures/cluster-peer.ts) owns "<p>-payer"; this process
 * reaches the NATS server through a TCP proxy it can cut.
 */
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CivitasError, Runtime, silentLogger, type JsonObject } from "../../src/index.js";
import { uuidv7 } from "../../src/message/ids.js";
import { decodeMessage } from "../../src/nats/codec.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { createTestSchema, PG_URL, type TestSchema } from "../support/postgres.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { startPeer, type PeerProcess } from "./support/peer-process.js";
import { Desk, untilHosted, type Receipt } from "./support/remote.js";

const SERVERS = "127.0.0.1:4222";
const p = `k${uuidv7().slice(-8)}`;
const payer = `${p}-payer`;
const desk = `${p}-desk`;

let schema: TestSchema;
let table: string;
let store: PostgresStateStore;
let proxy: TcpProxy;
let transport: NatsTransport;
let runtime: Runtime;
let peer: PeerProcess;
let monitor: NatsConnection;
let watch: Subscription;
/** Every control request published for the payer, as the server delivered it to an extra subscriber. */
const requests: { type: string; requestId: string; args: JsonObject }[] = [];

beforeAll(async () => {
  schema = await createTestSchema("cluster_control");
  table = schema.table("state");
  store = new PostgresStateStore({ connectionString: PG_URL }, { table, logger: silentLogger });
  await store.migrate();
  monitor = await connect({ servers: SERVERS });
  watch = monitor.subscribe(`civitas.ctl.${payer}`, {
    callback: (_error, msg) => {
      const request = decodeMessage(msg.data);
      requests.push({ type: request.type, requestId: String(request.payload.requestId), args: request.payload.args as JsonObject });
    },
  });
  await monitor.flush();
  peer = await startPeer("test/nats/fixtures/cluster-peer.ts", [SERVERS, p, PG_URL, table]);
  proxy = await startTcpProxy(4222);
  const fence = await store.nextFence();
  await store.claim([desk], fence);
  transport = new NatsTransport({ servers: `127.0.0.1:${proxy.port}`, reconnectTimeWait: 200 });
  runtime = new Runtime({ root: [new Desk(desk)], store: store.fenced(fence), transport, logger: silentLogger });
  await runtime.start();
  expect(await untilHosted(transport, payer)).toBe(true);
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await runtime?.stop();
  await proxy?.cut();
  watch?.unsubscribe();
  await monitor?.close();
  await store?.close();
  await schema?.drop();
});

async function probe(): Promise<{ status: string | null; expiresAt: string | null; audit: Receipt[] }> {
  return (await runtime.ask(`${p}-probe`, { status: payer }, { timeoutMs: 5000 })).payload as never;
}

async function receipts(event: string, suspensionId: string): Promise<Receipt[]> {
  return (await probe()).audit.filter((r) => r.event === event && r.agent === payer && r.details.suspensionId === suspensionId);
}

async function rejection(promise: Promise<unknown>): Promise<CivitasError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(CivitasError);
  return error as CivitasError;
}

/** Suspends the payer from this process and returns its pause as the shared store lists it. */
async function pausePayer(reason: string, expiresInMs?: number): Promise<{ suspensionId: string; expiresAt?: string }> {
  await runtime.suspend(payer, reason, expiresInMs === undefined ? {} : { expiresInMs });
  const pause = (await runtime.listSuspended({ scope: "cluster" })).find((s) => s.name === payer);
  expect(pause?.reason).toBe(reason);
  return pause!;
}

describe("listSuspended({ scope: \"cluster\" })", () => {
  it("lists every suspended agent in the shared store, wherever it runs; the local list only this runtime's", async () => {
    const before = Date.now();
    await runtime.suspend(payer, "approve INV-7: 12500.00", { expiresInMs: 3_600_000 });
    await runtime.suspend(desk, "desk closed");
    expect(runtime.listSuspended().map((s) => s.name)).toEqual([desk]);
    const cluster = await runtime.listSuspended({ scope: "cluster" });
    expect(cluster.map((s) => s.name)).toEqual([desk, payer]);
    const remote = cluster[1]!;
    expect(remote).toMatchObject({ name: payer, reason: "approve INV-7: 12500.00" });
    expect(remote.suspensionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(remote.expiresAt!)).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(remote.expiresAt).toBe((await probe()).expiresAt);
    expect((await transport.status(payer)).suspensionId).toBe(remote.suspensionId);
    expect(cluster[0]).toEqual(runtime.listSuspended()[0]);
    // The plain store (not a fenced view) and a runtime that was never started give the same answer.
    const reader = new Runtime({ root: [new Desk(`${p}-reader`)], store, logger: silentLogger });
    expect(await reader.listSuspended({ scope: "cluster" })).toEqual(cluster);
    await runtime.resume(payer, "alice@finance", { suspensionId: remote.suspensionId });
    await runtime.resume(desk, "alice@finance");
    expect(await runtime.listSuspended({ scope: "cluster" })).toEqual([]);
  });
});

describe("deny across processes", () => {
  it("is decided by the owner: onDeny runs there, its sink receipts agent.deny, a second deny or resume is STALE_APPROVAL", async () => {
    const { suspensionId } = await pausePayer("approve INV-8");
    await runtime.deny(payer, "bob@risk", { suspensionId, reason: "over budget" });
    expect(await peer.waitFor((e) => e.event === "denied" && e.suspensionId === suspensionId)).toMatchObject({ name: payer, decider: "bob@risk", reason: "over budget" });
    expect(peer.events.filter((e) => e.event === "authorizing" && e.approver === "bob@risk")).toEqual([{ event: "authorizing", approver: "bob@risk", decision: "deny" }]);
    const denied = await receipts("agent.deny", suspensionId);
    // Stamped with the owner's fence (issue 21): the peer runs on a fenced store.
    expect(denied.map((r) => r.details)).toEqual([{ decider: "bob@risk", suspensionId, reason: "over budget", expired: false, fence: expect.any(Number) as unknown }]);
    expect(await receipts("agent.resume", suspensionId)).toEqual([]);
    expect((await probe()).status).toBe("RUNNING");
    expect(requests.filter((r) => r.args.decision === "deny").at(-1)?.args).toEqual({ approver: "bob@risk", decision: "deny", suspensionId, reason: "over budget" });

    const again = await rejection(runtime.deny(payer, "bob@risk", { suspensionId }));
    expect([again.name, again.code]).toEqual(["RemoteControlError", "STALE_APPROVAL"]);
    expect(again.message).toContain(payer);
    expect((await rejection(runtime.resume(payer, "alice@finance", { suspensionId }))).code).toBe("STALE_APPROVAL");
    expect(await receipts("agent.deny", suspensionId)).toHaveLength(1);
    expect(peer.events.filter((e) => e.suspensionId === suspensionId && (e.event === "denied" || e.event === "resumed"))).toHaveLength(1);
    expect((await runtime.listSuspended({ scope: "cluster" })).map((s) => s.name)).not.toContain(payer);
  });

  it("errors come back by their codes; INVALID_APPROVER and INVALID_ARGUMENT are raised before anything is sent", async () => {
    const { suspensionId } = await pausePayer("approve INV-9");
    await monitor.flush();
    const sent = requests.length;
    for (const decider of ["  ", "", "bob\u0000", 42 as unknown as string]) {
      const error = await rejection(runtime.deny(payer, decider, { suspensionId }));
      expect([error.name, error.code]).toEqual(["InvalidApproverError", "INVALID_APPROVER"]);
    }
    expect((await rejection(runtime.suspend(payer, "x", { expiresInMs: -5 }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.deny(payer, "bob", { reason: 7 as unknown as string }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.deny(`${p}-nobody`, "bob"))).code).toBe("AGENT_NOT_FOUND");
    await new Promise((resolve) => setTimeout(resolve, 100));
    await monitor.flush();
    expect(requests.length).toBe(sent);

    const refused = await rejection(runtime.deny(payer, "refused", { suspensionId }));
    expect([refused.name, refused.code]).toEqual(["RemoteControlError", "RESUME_REFUSED"]);
    expect(peer.events.filter((e) => e.event === "authorizing" && e.approver === "refused").at(-1)).toMatchObject({ decision: "deny" });
    expect((await rejection(runtime.deny(payer, "bob", { suspensionId: "not-this-pause" }))).code).toBe("STALE_APPROVAL");
    expect((await probe()).status).toBe("SUSPENDED");
    expect(await receipts("agent.deny", suspensionId)).toEqual([]);
    await runtime.deny(payer, "bob", { suspensionId });
    expect((await probe()).status).toBe("RUNNING");
  });
});

describe("a suspend with a deadline across processes", () => {
  it("carries expiresInMs to the owner, whose pause is denied by \"expiry\" when it passes, and leaves the shared store", async () => {
    const before = Date.now();
    const { suspensionId, expiresAt } = await pausePayer("approve INV-10 within the hour", 1500);
    expect(requests.filter((r) => r.type === "_agency.suspend").at(-1)?.args).toEqual({ reason: "approve INV-10 within the hour", expiresInMs: 1500 });
    const deadline = Date.parse(expiresAt!);
    expect(deadline).toBeGreaterThanOrEqual(before + 1500 - 500);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 1500 + 500);
    expect((await probe()).status).toBe("SUSPENDED");
    expect(await peer.waitFor((e) => e.event === "denied" && e.suspensionId === suspensionId, 10_000)).toMatchObject({ decider: "expiry" });
    expect(Date.now()).toBeGreaterThanOrEqual(deadline - 50);
    expect((await receipts("agent.deny", suspensionId)).map((r) => r.details)).toMatchObject([{ decider: "expiry", suspensionId, expired: true }]);
    expect((await probe()).status).toBe("RUNNING");
    expect((await runtime.listSuspended({ scope: "cluster" })).map((s) => s.name)).not.toContain(payer);
    expect((await rejection(runtime.resume(payer, "alice@finance", { suspensionId }))).code).toBe("STALE_APPROVAL");
  });
});

describe("a request whose first answer is lost on the wire", () => {
  it("is sent again with the same requestId and gets the recorded outcome: one decision, one receipt, no STALE_APPROVAL", async () => {
    const { suspensionId } = await pausePayer("approve INV-11");
    const first = requests.length;
    // "slow@finance" is decided after 1.5 s: the requester's connection is cut while the owner decides, and stays
    // cut for 2.5 s, so the answer is published while nobody listens on the requester's inbox.
    const resumed = runtime.resume(payer, "slow@finance", { suspensionId, timeoutMs: 15_000 });
    await peer.waitFor((e) => e.event === "authorizing" && e.approver === "slow@finance");
    proxy.reset(2500);
    const cutAt = Date.now();
    await resumed;
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(2400); // answered only after the reconnect, by the retry
    expect(await peer.waitFor((e) => e.event === "resumed" && e.suspensionId === suspensionId)).toMatchObject({ approver: "slow@finance" });
    const sent = requests.slice(first).filter((r) => r.type === "_agency.resume");
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sent.map((r) => r.requestId)).size).toBe(1);
    expect(peer.events.filter((e) => e.event === "authorizing" && e.approver === "slow@finance")).toHaveLength(1);
    expect(await receipts("agent.resume", suspensionId)).toHaveLength(1);
    expect(peer.events.filter((e) => e.event === "resumed" && e.suspensionId === suspensionId)).toHaveLength(1);
    expect((await probe()).status).toBe("RUNNING");
  }, 30_000);
});
