/**
 * The durable backlog of a suspended agent on PostgreSQL (issue 26, item 7):
 * concurrent sends to the paused agent all reach the row before they
 * resolve, in order (the agent's writes go one at a time, so a slower
 * statement on another pool connection never lands after a newer one), a new
 * runtime on the same table hands them back in order, and the row holds no
 * backlog once they are handled. The SIGKILL tests run on SQLite
 * (test/process/suspension/backlog-crash.test.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentProcess, BACKLOG_KEY, Runtime, silentLogger, type Message } from "../../src/index.js";
import { PostgresStateStore } from "../../src/entries/postgres.js";
import { createTestSchema, type TestSchema } from "../support/postgres.js";
import { waitUntil } from "../support/agents.js";

class Worker extends AgentProcess<{ handled: string[] }> {
  override state = { handled: [] as string[] };
  override async handle(message: Message<{ n: string }>): Promise<void> {
    this.state.handled.push(message.payload.n);
    await this.checkpoint();
  }
}

let schema: TestSchema;
beforeEach(async () => {
  schema = await createTestSchema("backlog");
});
afterEach(async () => {
  await schema.drop();
});

describe("durable backlog on PostgreSQL", () => {
  it("concurrent sends to a paused agent are all in the row, in order, and come back after a restart", async () => {
    const table = `${schema.name}.state`;
    const first = new PostgresStateStore({ pool: schema.pool }, { table });
    await first.migrate();
    const runtime = new Runtime({ root: new Worker("w"), store: first, logger: silentLogger });
    await runtime.start();
    await runtime.suspend("w", "review");
    const names = Array.from({ length: 20 }, (_, i) => `m${i}`);
    await Promise.all(names.map((n) => runtime.send("w", { n })));
    const stored = await first.get("w");
    expect((stored?.[BACKLOG_KEY] as { payload: { n: string } }[]).map((w) => w.payload.n)).toEqual(names);
    await runtime.stop();

    const second = new PostgresStateStore({ pool: schema.pool }, { table });
    const worker = new Worker("w");
    const again = new Runtime({ root: worker, store: second, logger: silentLogger });
    await again.start();
    try {
      expect(worker.status).toBe("SUSPENDED");
      await again.resume("w", "ana");
      await waitUntil(() => worker.state.handled.length === names.length, "all handled", 50_000);
      expect(worker.state.handled).toEqual(names);
      await waitUntil(() => worker.mailbox.size === 0, "drained");
      const row = await second.get("w");
      expect(row?.handled).toEqual(names);
      expect(row).not.toHaveProperty(BACKLOG_KEY);
    } finally {
      await again.stop();
    }
  });
});
