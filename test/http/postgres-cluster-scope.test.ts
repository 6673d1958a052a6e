/**
 * The inbox's cluster scope against the real PostgreSQL server: two
 * runtimes in this process share one `PostgresStateStore` table (each
 * through its own fenced view), one owns the payer, the other serves the
 * inbox. The inbox lists the payer's pause although its runtime does not
 * host it (`scope: "cluster"`, the default with a shared store), `?scope=local`
 * narrows to its own agents, and a held action (an approval request) of the
 * other runtime's agent is listed from the stored state the same way.
 * With a NATS transport as well, a resume posted to the inbox reaches the
 * payer's owner, which pays exactly once, and votes posted to the inbox on
 * a held action of the other runtime are decided by its owner.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { NatsTransport } from "../../src/nats/nats-transport.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { ProcessStatus, Runtime, silentLogger, type AgentProcess, type RuntimeOptions, type SuspendedAgent } from "../../src/index.js";
import { PG_URL, testSchemaPerFile } from "../support/postgres.js";
import { until } from "../support/runtimes.js";
import { eventually, headerIdentity, inboxes, LIMIT_CENTS, Payer, signIn, Treasury, treasuryPolicy } from "./support.js";
import { cleanupSteps } from "../support/cleanup.js";

const SERVERS = "127.0.0.1:4222";

const schema = testSchemaPerFile("http_cluster");

const cleanup = cleanupSteps();
const serve = inboxes();

/**
 * A runtime that owns `payers` and `others` (claimed under a fence of its
 * own) in `store`'s table, started, each payer paused on one large payment.
 */
async function owner(store: PostgresStateStore, payers: Payer[], options: Partial<RuntimeOptions> = {}, others: AgentProcess[] = []): Promise<Runtime> {
  const fence = await store.nextFence();
  await store.claim([...payers, ...others].map((agent) => agent.name), fence);
  const runtime = new Runtime({ root: [...payers, ...others], store: store.fenced(fence), logger: silentLogger, keepAlive: false, ...options });
  await runtime.start();
  cleanup.push(() => runtime.stop());
  for (const [i, payer] of payers.entries()) {
    await runtime.send(payer.name, { invoice: `INV-${payer.name}`, cents: LIMIT_CENTS + 1 + i });
    await until(() => payer.status === ProcessStatus.SUSPENDED);
  }
  return runtime;
}

async function sharedStore(): Promise<PostgresStateStore> {
  const store = new PostgresStateStore({ connectionString: PG_URL }, { table: schema.table("state"), logger: silentLogger });
  await store.migrate();
  cleanup.push(() => store.close());
  return store;
}

const names = (items: unknown): string[] => (items as SuspendedAgent[]).map((pause) => pause.name);

describe("the inbox of a runtime with a shared PostgresStateStore", () => {
  it("lists the pauses of agents another runtime owns (scope cluster by default), and only its own with ?scope=local", async () => {
    const p = `h${randomBytes(3).toString("hex")}`;
    const store = await sharedStore();
    const elsewhere = await owner(store, [new Payer(`${p}-payer`)], { approvalPolicy: treasuryPolicy }, [new Treasury(`${p}-treasury`)]);
    elsewhere.ask(`${p}-treasury`, { amountCents: 250_000, to: "acme" }, { type: "pay", timeoutMs: 15_000 }).catch(() => undefined);
    await eventually(async () => (await elsewhere.approvals.list({ status: "pending" })).length === 1, "the held payment");
    const here = await owner(store, [new Payer(`${p}-desk`)]);
    expect(names(here.listSuspended())).toEqual([`${p}-desk`]);

    const server = await serve({ runtime: here, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const cluster = await alice.get("/api/v1/agents/suspended");
    expect(cluster.status).toBe(200);
    expect(cluster.json).toMatchObject({ scope: "cluster", total: 2 });
    expect(names(cluster.json.items).sort()).toEqual([`${p}-desk`, `${p}-payer`]);
    // the other runtime's pause, as its owner knows it
    const [theirs] = elsewhere.listSuspended();
    expect((cluster.json.items as SuspendedAgent[]).find((pause) => pause.name === `${p}-payer`)).toEqual(theirs);

    const local = await alice.get("/api/v1/agents/suspended?scope=local");
    expect(local.json).toMatchObject({ scope: "local", total: 1 });
    expect(names(local.json.items)).toEqual([`${p}-desk`]);
    const filtered = await alice.get(`/api/v1/agents/suspended?agent=${p}-payer`);
    expect([filtered.json.scope, names(filtered.json.items)]).toEqual(["cluster", [`${p}-payer`]]);

    // the other runtime's held payment, read from its stored state; none held here
    const approvals = await alice.get("/api/v1/approvals?status=pending");
    expect(approvals.json).toMatchObject({ scope: "cluster", total: 1, items: [{ agent: `${p}-treasury`, status: "pending", message: { type: "pay", payload: { amountCents: 250_000, to: "acme" } }, mayStillVote: ["ana", "ben"] }] });
    const [held] = await elsewhere.approvals.list({ status: "pending" });
    expect((approvals.json.items as { approvalId: string }[])[0]?.approvalId).toBe(held?.approvalId);

    // listed, but decided only where the agent runs: without a transport a resume cannot reach the payer's owner, and a
    // vote reaches only this runtime's own requests; both are refused with their codes, and nothing changes
    const resume = await alice.post(`/api/v1/agents/${p}-payer/resume`, { suspensionId: theirs?.suspensionId });
    expect([resume.status, resume.json.error?.code]).toEqual([404, "AGENT_NOT_FOUND"]);
    const vote = await (await signIn(server.url, "ana")).post(`/api/v1/approvals/${held?.approvalId ?? ""}/approve`, {});
    expect([vote.status, vote.json.error?.code]).toEqual([404, "APPROVAL_NOT_FOUND"]);
    expect(elsewhere.listSuspended()).toEqual([theirs]);
    expect(await elsewhere.approvals.list({ status: "pending" })).toEqual([held]);
    expect((await alice.get("/api/v1/approvals?status=pending&scope=local")).json).toMatchObject({ scope: "local", total: 0, items: [] });
  });

  it("with a NATS transport too, resumes a pause another runtime owns through the inbox: its owner pays once", async () => {
    const p = `h${randomBytes(3).toString("hex")}`;
    const store = await sharedStore();
    const payer = new Payer(`${p}-payer`);
    const theirTransport = new NatsTransport({ servers: SERVERS, name: `${p}-owner` });
    await owner(store, [payer], { transport: theirTransport });
    const ourTransport = new NatsTransport({ servers: SERVERS, name: `${p}-inbox` });
    const here = await owner(store, [new Payer(`${p}-desk`)], { transport: ourTransport });
    await until(() => ourTransport.hosts(payer.name));

    const server = await serve({ runtime: here, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const listed = (await alice.get(`/api/v1/agents/suspended?agent=${payer.name}`)).json.items as SuspendedAgent[];
    expect(names(listed)).toEqual([payer.name]);

    const stale = await alice.post(`/api/v1/agents/${payer.name}/resume`, { suspensionId: "0190f3a0-0000-7000-8000-000000000000" });
    expect([stale.status, stale.json.error?.code]).toEqual([409, "STALE_APPROVAL"]);
    const resumed = await alice.post(`/api/v1/agents/${payer.name}/resume`, { suspensionId: listed[0]?.suspensionId });
    expect(resumed.status).toBe(200);
    await until(() => payer.status !== ProcessStatus.SUSPENDED);
    expect(payer.executions.get(`INV-${payer.name}`)).toBe(1);
    expect(payer.state.paid).toMatchObject([{ invoice: `INV-${payer.name}`, approvedBy: "alice" }]);
    const after = await alice.get("/api/v1/agents/suspended");
    expect([after.json.scope, names(after.json.items)]).toEqual(["cluster", [`${p}-desk`]]);
  });
  it("with a NATS transport too, approves a held action another runtime owns through the inbox: its owner decides each vote and pays once", async () => {
    const p = `h${randomBytes(3).toString("hex")}`;
    const store = await sharedStore();
    const treasury = new Treasury(`${p}-treasury`);
    const theirTransport = new NatsTransport({ servers: SERVERS, name: `${p}-owner` });
    const elsewhere = await owner(store, [], { transport: theirTransport, approvalPolicy: treasuryPolicy }, [treasury]);
    const ourTransport = new NatsTransport({ servers: SERVERS, name: `${p}-inbox` });
    const here = await owner(store, [new Payer(`${p}-desk`)], { transport: ourTransport });
    await until(() => ourTransport.hosts(treasury.name));
    const paying = here.ask(treasury.name, { amountCents: 250_000, to: "acme" }, { type: "pay", timeoutMs: 15_000 });
    await eventually(async () => (await elsewhere.approvals.list({ status: "pending" })).length === 1, "the held payment");

    const server = await serve({ runtime: here, authenticate: headerIdentity });
    const alice = await signIn(server.url, "alice");
    const listed = await alice.get("/api/v1/approvals?status=pending");
    expect(listed.json).toMatchObject({ scope: "cluster", total: 1, items: [{ agent: treasury.name, status: "pending" }] });
    const approvalId = (listed.json.items as { approvalId: string }[])[0]?.approvalId ?? "";
    expect((await alice.get(`/api/v1/approvals/${approvalId}`)).json).toMatchObject({ approvalId, agent: treasury.name, status: "pending" });

    // the owner's rule decides: alice is no approver of the first stage
    const refused = await alice.post(`/api/v1/approvals/${approvalId}/approve`, {});
    expect([refused.status, refused.json.error?.code]).toEqual([403, "APPROVER_NOT_ALLOWED"]);
    const first = await (await signIn(server.url, "ana")).post(`/api/v1/approvals/${approvalId}/approve`, { reason: "invoice checked" });
    expect([first.status, first.json.status, first.json.stage]).toEqual([200, "pending", 1]);
    expect(treasury.handled.size).toBe(0);
    const last = await (await signIn(server.url, "carol")).post(`/api/v1/approvals/${approvalId}/approve`, {});
    expect([last.status, last.json.status, last.json.decidedBy]).toEqual([200, "approved", "carol"]);
    expect((await paying).payload).toEqual({ paid: 250_000, approvedBy: "carol" });
    expect([...treasury.handled.values()]).toEqual([1]);
    const [view] = await elsewhere.approvals.list();
    expect(view?.votes.map((vote) => vote.approver)).toEqual(["ana", "carol"]);
    const again = await (await signIn(server.url, "ben")).post(`/api/v1/approvals/${approvalId}/approve`, {});
    expect([again.status, again.json.error?.code]).toEqual([409, "STALE_APPROVAL"]);
    expect([...treasury.handled.values()]).toEqual([1]);
  });
});
