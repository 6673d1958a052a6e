/**
 * Approvals across processes: a child process (fixtures/approval-owner.ts)
 * owns "<p>-treasury", whose large payments are held for two finance
 * approvers; this process asks for a payment through NATS, finds the held
 * request in the shared PostgreSQL store, and votes through its own
 * `runtime.approvals`. The owner decides every vote (its rules, its
 * `authorizeApproval`, its receipts), handles the payment once, and the
 * asker here gets the reply or the denial.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CivitasError, HandlerFailedError, Runtime, silentLogger, type ApprovalView, type JsonObject, type Message } from "../../src/index.js";
import { uuidv7 } from "../../src/message/ids.js";
import { decodeMessage, encodeMessage } from "../../src/nats/codec.js";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { createTestSchema, PG_URL, type TestSchema } from "../support/postgres.js";
import { startPeer, type PeerProcess } from "./support/peer-process.js";
import { Desk, untilHosted, type Receipt } from "./support/remote.js";

const SERVERS = "127.0.0.1:4222";
const p = `v${uuidv7().slice(-8)}`;
const treasury = `${p}-treasury`;

let schema: TestSchema;
let store: PostgresStateStore;
let runtime: Runtime;
let peer: PeerProcess;
let raw: NatsConnection;
let transport: NatsTransport;

beforeAll(async () => {
  schema = await createTestSchema("approval_votes");
  const table = schema.table("state");
  store = new PostgresStateStore({ connectionString: PG_URL }, { table, logger: silentLogger });
  await store.migrate();
  raw = await connect({ servers: SERVERS });
  peer = await startPeer("test/nats/fixtures/approval-owner.ts", [SERVERS, p, PG_URL, table]);
  const fence = await store.nextFence();
  await store.claim([`${p}-desk`], fence);
  transport = new NatsTransport({ servers: SERVERS, name: `${p}-voter` });
  runtime = new Runtime({ root: [new Desk(`${p}-desk`)], store: store.fenced(fence), transport, logger: silentLogger });
  await runtime.start();
  expect(await untilHosted(transport, treasury)).toBe(true);
}, 60_000);

afterAll(async () => {
  await peer?.stop();
  await runtime?.stop();
  await raw?.close();
  await store?.close();
  await schema?.drop();
});

async function audit(approvalId: string, event?: string): Promise<Receipt[]> {
  const { audit } = (await runtime.ask(`${p}-probe`, {}, { timeoutMs: 5000 })).payload as unknown as { audit: Receipt[] };
  return audit.filter((r) => r.details.approvalId === approvalId && (event === undefined || r.event === event));
}

async function rejection(promise: Promise<unknown>): Promise<CivitasError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(CivitasError);
  return error as CivitasError;
}

/** Asks the treasury (in the other process) to pay `amountCents`, and returns the ask and its held request as the shared store lists it. */
async function holdPayment(amountCents: number): Promise<{ paying: Promise<Message>; held: ApprovalView }> {
  const paying = runtime.ask(treasury, { amountCents, to: "acme" }, { type: "pay", timeoutMs: 30_000 });
  paying.catch(() => undefined);
  const deadline = Date.now() + 5000;
  for (;;) {
    const held = (await runtime.approvals.list({ scope: "cluster", status: "pending", agent: treasury })).find((view) => view.message.payload && (view.message.payload as { amountCents?: number }).amountCents === amountCents);
    if (held !== undefined) return { paying, held };
    if (Date.now() > deadline) throw new Error(`the held payment of ${amountCents} was not listed`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Publishes a control request for `name` with the given requestId, as a runtime would, and returns the owner's answer. */
async function rawControl(name: string, requestId: string, args: JsonObject, retry = false): Promise<JsonObject> {
  const payload: JsonObject = retry ? { requestId, args, timeoutMs: 5000, retry: true } : { requestId, args, timeoutMs: 5000 };
  const request = { id: uuidv7(), type: "civitas.ctl.approval", sender: "_runtime", recipient: name, payload, timestamp: Date.now(), traceId: "a".repeat(32), spanId: "b".repeat(16), attempt: 0, priority: 1 };
  return decodeMessage((await raw.request(`civitas.ctl.${name}`, encodeMessage(request, "json"), { timeout: 5000 })).data).payload;
}

const authorizing = (approvalId: string, approver: string): Record<string, unknown>[] => peer.events.filter((e) => e.event === "authorizing" && e.approvalId === approvalId && e.approver === approver);

describe("votes on a held action of another process, through NATS", () => {
  it("are decided by the owner: two approvals release the payment, handled once there, and the asker here gets the reply", async () => {
    const { paying, held } = await holdPayment(250_000);
    expect(held).toMatchObject({ agent: treasury, status: "pending", votes: [], message: { type: "pay", payload: { amountCents: 250_000, to: "acme" } } });
    expect(await runtime.approvals.list({ status: "pending" })).toEqual([]); // none held here
    expect(await runtime.approvals.get(held.approvalId)).toEqual(held); // read from the owner

    const first = await runtime.approvals.approve(held.approvalId, "ana", { reason: "invoice checked" });
    expect(first).toMatchObject({ approvalId: held.approvalId, status: "pending", votes: [{ approver: "ana", vote: "approve", reason: "invoice checked" }] });
    expect(authorizing(held.approvalId, "ana")).toEqual([{ event: "authorizing", approvalId: held.approvalId, approver: "ana", decision: "approve" }]);
    // the same approver again counts once
    expect((await runtime.approvals.approve(held.approvalId, "ana")).votes).toHaveLength(1);
    expect(peer.events.filter((e) => e.event === "handled" && e.approvalId === held.approvalId)).toEqual([]);

    const second = await runtime.approvals.approve(held.approvalId, "ben");
    expect(second).toMatchObject({ status: "approved", decidedBy: "ben", votes: [{ approver: "ana" }, { approver: "ben" }] });
    const reply = await paying;
    expect(reply.payload).toEqual({ paid: 250_000, approvedBy: "ben" });
    await peer.waitFor((e) => e.event === "handled" && e.approvalId === held.approvalId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(peer.events.filter((e) => e.event === "handled" && e.approvalId === held.approvalId)).toHaveLength(1);
    // the owner's sink holds the votes and the decision; the stored request is consumed
    expect((await audit(held.approvalId, "approval.voted")).map((r) => [r.details.approver, r.details.accepted])).toEqual([["ana", true], ["ben", true]]);
    expect((await audit(held.approvalId, "approval.decided")).map((r) => r.details.decision)).toEqual(["approved"]);
    expect(await runtime.approvals.get(held.approvalId)).toMatchObject({ status: "approved", consumed: true });
    // decided: a late vote is refused by the owner, and nothing is handled again
    expect((await rejection(runtime.approvals.approve(held.approvalId, "cy"))).code).toBe("STALE_APPROVAL");
    // a retry the owner does not remember (its first attempt's answer lost with a restart) of the vote the request
    // records is answered with the request; the same retry by an approver who did not vote so is still stale
    const recorded = await rawControl(treasury, uuidv7(), { approvalId: held.approvalId, vote: "approve", approver: "ben" }, true);
    expect(recorded).toMatchObject({ ok: true, answer: { view: { approvalId: held.approvalId, status: "approved", decidedBy: "ben" } } });
    expect(await rawControl(treasury, uuidv7(), { approvalId: held.approvalId, vote: "deny", approver: "ben", reason: "x" }, true)).toMatchObject({ ok: false, code: "STALE_APPROVAL" });
    expect(await rawControl(treasury, uuidv7(), { approvalId: held.approvalId, vote: "approve", approver: "cy" }, true)).toMatchObject({ ok: false, code: "STALE_APPROVAL" });
    expect(peer.events.filter((e) => e.event === "handled" && e.approvalId === held.approvalId)).toHaveLength(1);
  }, 30_000);

  it("a deny rejects the asker with APPROVAL_DENIED; onApprovalDenied runs in the owner's process; nothing is handled", async () => {
    const { paying, held } = await holdPayment(300_000);
    const view = await runtime.approvals.deny(held.approvalId, "cy", { reason: "unknown supplier" });
    expect(view).toMatchObject({ status: "denied", decidedBy: "cy", decisionReason: "unknown supplier" });
    const error = await rejection(paying);
    // across processes the owner's refusal comes back as HANDLER_FAILED, its cause carrying the owner's code
    expect(error).toBeInstanceOf(HandlerFailedError);
    expect((error.cause as CivitasError).code).toBe("APPROVAL_DENIED");
    expect((error.cause as CivitasError).message).toContain("unknown supplier");
    expect(await peer.waitFor((e) => e.event === "denied" && e.approvalId === held.approvalId)).toMatchObject({ decidedBy: "cy", reason: "unknown supplier" });
    expect(authorizing(held.approvalId, "cy")).toEqual([{ event: "authorizing", approvalId: held.approvalId, approver: "cy", decision: "deny" }]);
    expect(peer.events.filter((e) => e.event === "handled" && e.approvalId === held.approvalId)).toEqual([]);
    expect((await rejection(runtime.approvals.deny(held.approvalId, "ana", { reason: "again" }))).code).toBe("STALE_APPROVAL");
    expect((await audit(held.approvalId, "approval.decided")).map((r) => [r.details.decision, r.details.decidedBy])).toEqual([["denied", "cy"]]);
  }, 30_000);

  it("a repeated requestId counts once: the same answer, one authorization, one vote, one decision", async () => {
    const { paying, held } = await holdPayment(400_000);
    // a read changes nothing and is not remembered: the same requestId read again sees the votes cast since
    const readId = uuidv7();
    expect(await rawControl(treasury, readId, { approvalId: held.approvalId })).toMatchObject({ ok: true, answer: { view: { votes: [] } } });
    const approveId = uuidv7();
    const approve = { approvalId: held.approvalId, vote: "approve", approver: "ben" };
    const once = await rawControl(treasury, approveId, approve);
    const twice = await rawControl(treasury, approveId, approve);
    expect(once).toMatchObject({ ok: true, answer: { view: { status: "pending", votes: [{ approver: "ben" }] } } });
    expect(twice).toEqual(once);
    expect(authorizing(held.approvalId, "ben")).toHaveLength(1);
    expect(await rawControl(treasury, readId, { approvalId: held.approvalId })).toMatchObject({ ok: true, answer: { view: { votes: [{ approver: "ben" }] } } });

    const denyId = uuidv7();
    const deny = { approvalId: held.approvalId, vote: "deny", approver: "ana", reason: "duplicate invoice" };
    const denied = await rawControl(treasury, denyId, deny);
    expect(denied).toMatchObject({ ok: true, answer: { view: { status: "denied", decidedBy: "ana" } } });
    // the same request again is answered from its first outcome, not refused as stale
    expect(await rawControl(treasury, denyId, deny)).toEqual(denied);
    expect(authorizing(held.approvalId, "ana")).toHaveLength(1);
    // a new request with the same content is a second decision: refused
    expect(await rawControl(treasury, uuidv7(), deny)).toMatchObject({ ok: false, code: "STALE_APPROVAL" });
    expect((await audit(held.approvalId, "approval.voted")).filter((r) => r.details.accepted === true)).toHaveLength(2);
    expect(await audit(held.approvalId, "approval.decided")).toHaveLength(1);
    expect((await rejection(paying)).cause).toMatchObject({ code: "APPROVAL_DENIED" });
  }, 30_000);

  it("refuses by their codes: a non-approver (recorded as refused), the owner's hook, an unknown id, and an id the addressed agent does not hold", async () => {
    const { held } = await holdPayment(500_000);
    const stranger = await rejection(runtime.approvals.approve(held.approvalId, "mallory"));
    expect([stranger.name, stranger.code]).toEqual(["RemoteControlError", "APPROVER_NOT_ALLOWED"]);
    expect(stranger.message).toContain(treasury);
    expect((await audit(held.approvalId, "approval.voted")).map((r) => [r.details.approver, r.details.accepted])).toEqual([["mallory", false]]);
    const hooked = await rejection(runtime.approvals.deny(held.approvalId, "refused", { reason: "no" }));
    expect(hooked.code).toBe("RESUME_REFUSED");
    expect((await rejection(runtime.approvals.approve(held.approvalId, ""))).code).toBe("INVALID_APPROVER");
    for (const timeoutMs of [-1, Number.NaN, "5" as unknown as number]) {
      const error = await rejection(runtime.approvals.approve(held.approvalId, "ana", { timeoutMs }));
      expect([error.code, error.message]).toEqual(["INVALID_ARGUMENT", expect.stringContaining("timeoutMs") as unknown]);
    }
    expect(authorizing(held.approvalId, "ana")).toEqual([]); // refused here: nothing reached the owner
    const unknown = uuidv7();
    const missing = await rejection(runtime.approvals.approve(unknown, "ana"));
    expect([missing.name, missing.code]).toEqual(["ApprovalNotFoundError", "APPROVAL_NOT_FOUND"]);
    expect((await rejection(runtime.approvals.get(unknown))).code).toBe("APPROVAL_NOT_FOUND");
    // the owner checks that the agent the request is addressed to holds the id: the probe does not
    expect(await rawControl(`${p}-probe`, uuidv7(), { approvalId: held.approvalId, vote: "approve", approver: "ana" })).toMatchObject({ ok: false, code: "APPROVAL_NOT_FOUND" });
    expect(await runtime.approvals.get(held.approvalId)).toMatchObject({ status: "pending", votes: [] });
  }, 30_000);

  it("a vote while the owner is down waits for it, then fails with AGENT_UNREACHABLE; the stored request is still listed and read", async () => {
    const { held } = await holdPayment(600_000);
    await peer.stop();
    const deadline = Date.now() + 5000;
    while (transport.hosts(treasury) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const started = Date.now();
    const error = await rejection(runtime.approvals.approve(held.approvalId, "ana", { timeoutMs: 500 }));
    expect([error.name, error.code]).toEqual(["AgentUnreachableError", "AGENT_UNREACHABLE"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(await runtime.approvals.get(held.approvalId)).toMatchObject({ approvalId: held.approvalId, status: "pending", votes: [] });
    expect((await runtime.approvals.list({ scope: "cluster", status: "pending" })).map((view) => view.approvalId)).toContain(held.approvalId);
  }, 30_000);
});
