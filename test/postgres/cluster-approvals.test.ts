/**
 * The cluster's approval requests from the shared PostgreSQL store: two
 * runtimes share one table (each through its own fenced view), one holds
 * payments for approval, the other lists them with `approvals.list({ scope:
 * "cluster" })`, read by `PostgresStateStore.listApprovalStates()` in one
 * query on the partial index of the rows that hold requests.
 */
import { describe, expect, it } from "vitest";
import { AgentProcess, APPROVALS_KEY, Runtime, silentLogger, type ApprovalPolicy, type ApprovalView, type Logger, type Message } from "../../src/index.js";
import { uuidv7 } from "../../src/message/ids.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { PG_URL, testSchemaPerFile } from "../support/postgres.js";
import { cleanupSteps } from "../support/cleanup.js";

const approvalPolicy: ApprovalPolicy = ({ message }) =>
  message.type === "pay" ? { decision: "require_approval", reason: "every payment", rule: { stages: [{ name: "finance", approvers: ["ana"], min: 1 }] } } : { decision: "allow" };

class Treasury extends AgentProcess {
  override async handle(message: Message): Promise<Message | void> {
    return this.reply({ paid: message.payload.amountCents ?? null });
  }
}

class Desk extends AgentProcess {
  override async handle(): Promise<void> {}
}

const schema = testSchemaPerFile("cluster_approvals");
const cleanup = cleanupSteps();

async function sharedStore(table: string): Promise<PostgresStateStore> {
  const store = new PostgresStateStore({ connectionString: PG_URL }, { table, logger: silentLogger });
  cleanup.push(() => store.close());
  await store.migrate();
  return store;
}

async function runtimeOn(store: PostgresStateStore, agents: AgentProcess[], options: { approvalPolicy?: ApprovalPolicy; logger?: Logger } = {}): Promise<Runtime> {
  const fence = await store.nextFence();
  await store.claim(agents.map((agent) => agent.name), fence);
  const runtime = new Runtime({ root: agents, store: store.fenced(fence), logger: silentLogger, keepAlive: false, ...options });
  await runtime.start();
  cleanup.push(() => runtime.stop());
  return runtime;
}

async function pending(runtime: Runtime, count: number): Promise<ApprovalView[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const views = await runtime.approvals.list({ status: "pending" });
    if (views.length === count) return views;
    if (Date.now() > deadline) throw new Error(`expected ${count} pending requests, got ${views.length}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("approvals.list({ scope: \"cluster\" }) with a shared PostgresStateStore", () => {
  it("lists the requests of every agent in the table, wherever it runs, filtered by status and agent, as their owner shows them", async () => {
    const p = `c${uuidv7().slice(-8)}`;
    const store = await sharedStore(schema.table("state"));
    const owner = await runtimeOn(store, [new Treasury(`${p}-treasury`), new Treasury(`${p}-vault`)], { approvalPolicy });
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (message: string) => void warnings.push(message) };
    const other = await runtimeOn(store, [new Desk(`${p}-desk`)], { logger });
    for (const [agent, amountCents] of [[`${p}-treasury`, 100], [`${p}-treasury`, 200], [`${p}-vault`, 300]] as const) {
      owner.ask(agent, { amountCents }, { type: "pay", timeoutMs: 15_000 }).catch(() => undefined);
    }
    const held = await pending(owner, 3);
    const approved = held.find((view) => view.agent === `${p}-treasury`)!;
    await owner.approvals.approve(approved.approvalId, "ana");
    // released and handled: the stored request is consumed (stored before the handler ran)
    for (const deadline = Date.now() + 5000; !(await other.approvals.list({ scope: "cluster", status: "approved" }))[0]?.consumed; ) {
      if (Date.now() > deadline) throw new Error("the approved request was not stored consumed");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const theirs = await owner.approvals.list();

    // a decoy: a user value that merely contains the key's text is read (the index's pre-filter) but holds no request
    await store.set(`${p}-decoy`, { note: { [APPROVALS_KEY]: [{ approvalId: "not-a-request" }] } });

    expect(await other.approvals.list()).toEqual([]);
    const cluster = await other.approvals.list({ scope: "cluster" });
    expect(cluster.map((view) => view.approvalId)).toEqual(theirs.map((view) => view.approvalId));
    for (const view of theirs) expect(cluster.find((listed) => listed.approvalId === view.approvalId)).toEqual(view);
    expect(cluster.map((view) => [view.approvalId, view.agent, view.status])).toEqual(theirs.map((view) => [view.approvalId, view.agent, view.status]));
    expect(cluster.map((view) => `${view.agent}:${view.status}`).sort()).toEqual([`${p}-treasury:approved`, `${p}-treasury:pending`, `${p}-vault:pending`]);
    const vault = held.find((view) => view.agent === `${p}-vault`)!;
    expect((await other.approvals.list({ scope: "cluster", status: "pending" })).map((view) => view.approvalId)).toEqual(held.filter((view) => view !== approved).map((view) => view.approvalId));
    expect((await other.approvals.list({ scope: "cluster", status: "approved" })).map((view) => view.approvalId)).toEqual([approved.approvalId]);
    expect((await other.approvals.list({ scope: "cluster", agent: `${p}-vault` })).map((view) => view.approvalId)).toEqual([vault.approvalId]);
    expect(await other.approvals.list({ scope: "cluster", status: "denied" })).toEqual([]);
    expect(warnings).toEqual([]);

    // the store's own query: the rows that hold requests (and the decoy's), each narrowed by status or id
    expect((await store.listApprovalStates()).map((row) => row.name)).toEqual([`${p}-decoy`, `${p}-treasury`, `${p}-vault`]);
    expect((await store.listApprovalStates({ status: "approved" })).map((row) => row.name)).toEqual([`${p}-treasury`]);
    expect((await store.listApprovalStates({ approvalId: vault.approvalId })).map((row) => row.name)).toEqual([`${p}-vault`]);
    const [row] = await store.listApprovalStates({ approvalId: vault.approvalId });
    expect((row?.state[APPROVALS_KEY] as { approvalId: string }[]).map((record) => record.approvalId)).toEqual([vault.approvalId]);

    // a runtime that holds one of the agents shows it from memory, the rest from the store
    const mixed = await owner.approvals.list({ scope: "cluster" });
    expect(mixed).toEqual(theirs);
  });

  it("a stored request that cannot be read is left out with a warning; the others are listed", async () => {
    const p = `c${uuidv7().slice(-8)}`;
    const store = await sharedStore(schema.table("state"));
    const warnings: string[] = [];
    const reader = await runtimeOn(store, [new Desk(`${p}-desk`)], { logger: { ...silentLogger, warn: (message: string) => void warnings.push(message) } });
    await store.set(`${p}-broken`, { [APPROVALS_KEY]: [{ approvalId: "x", agent: "someone-else" }] });
    expect(await reader.approvals.list({ scope: "cluster" })).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining(`'${p}-broken'`)]);
  });

  it("the partial index exists on a new table, is what the listing query can use, and migrate() adds it to a table made without it", async () => {
    const table = schema.table("state");
    const store = await sharedStore(table);
    const bare = table.split(".")[1]!;
    const indexes = async (): Promise<string[]> => (await schema.pool.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2", [schema.name, bare])).rows.map((r) => r.indexdef);
    expect((await indexes()).filter((def) => def.includes("_approvals_idx"))).toEqual([expect.stringContaining(`WHERE (strpos(state, '"_civitas.approvals":[{'::text) > 0)`)]);

    const client = await schema.pool.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN SELECT name, version, state FROM ${table} WHERE strpos(state, '"_civitas.approvals":[{') > 0 AND ($1::text IS NULL OR strpos(state, $1::text) > 0)`, [null]);
      expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toContain(`${bare}_approvals_idx`);
    } finally {
      client.release();
    }

    // a table made before the index: used as it is (a listing reads every row), migrate() adds the index
    await schema.pool.query(`DROP INDEX "${schema.name}"."${bare}_approvals_idx"`);
    const older = new PostgresStateStore({ connectionString: PG_URL }, { table, logger: silentLogger });
    cleanup.push(() => older.close());
    await older.set("a", { n: 1 });
    expect(await older.listApprovalStates()).toEqual([]);
    expect((await indexes()).some((def) => def.includes("_approvals_idx"))).toBe(false);
    await older.migrate();
    expect((await indexes()).filter((def) => def.includes("_approvals_idx"))).toHaveLength(1);
    await store.migrate(); // idempotent
    expect((await indexes()).filter((def) => def.includes("_approvals_idx"))).toHaveLength(1);
  });
});
