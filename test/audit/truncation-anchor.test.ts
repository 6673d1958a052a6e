import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_ANCHOR_KEY } from "../../src/audit/audit-anchor.js";
import type { AuditLogSource } from "../../src/audit/audit-source.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { AgentProcess, Runtime, silentLogger, type AuditSink, type StateStore } from "../../src/index.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { createTestSchema, type TestSchema } from "../support/postgres.js";
import { KEY, tempDir } from "../support/audit-log.js";

class Payer extends AgentProcess {}

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema("anchor");
});
afterAll(async () => {
  await schema.drop();
});

interface Backend {
  store: StateStore;
  sink: AuditSink & { close(): Promise<void> };
  /** The log, cut to its first `rows` rows when given. */
  log(rows?: number): Promise<AuditLogSource>;
  cleanup(): Promise<void>;
}

const backends: [string, () => Promise<Backend>][] = [
  [
    "SQLite store and JSONL sink",
    async () => {
      const { dir, cleanup } = tempDir();
      const file = path.join(dir, "audit.jsonl");
      const store = new SqliteStateStore(path.join(dir, "state.db"));
      const sink = new JsonlAuditSink(file, { key: KEY });
      return {
        store,
        sink,
        log: async (rows) => {
          if (rows === undefined) return file;
          const lines = fs.readFileSync(file, "utf8").split("\n").slice(0, rows);
          const cut = path.join(dir, `cut-${rows}.jsonl`);
          fs.writeFileSync(cut, lines.map((l) => `${l}\n`).join(""));
          return cut;
        },
        cleanup: async () => {
          await store.close();
          await sink.close();
          cleanup();
        },
      };
    },
  ],
  [
    "PostgreSQL store and sink",
    async () => {
      const store = new PostgresStateStore({ pool: schema.pool }, { table: schema.table("state") });
      const sink = new PostgresAuditSink({ pool: schema.pool, key: KEY, table: schema.table("audit") });
      return {
        store,
        sink,
        log: async (rows) => {
          const all = await sink.rows(); // verified from the sink's rows directly
          return all.slice(0, rows);
        },
        cleanup: async () => {
          await sink.close();
          await store.close();
        },
      };
    },
  ],
];

for (const [label, make] of backends) {
  describe(`truncation anchors: ${label}`, () => {
    it("the stored pause records the audit head of its receipt, and a log cut before it is failed/truncated", async () => {
      const b = await make();
      const runtime = new Runtime({ root: [new Payer("payer")], store: b.store, auditSink: b.sink, logger: silentLogger, keepAlive: false });
      try {
        await runtime.start();
        await runtime.suspend("payer", "approve");
        const rowsAtSuspend = (await verifySuspension(await b.log(), "payer", { key: KEY })).suspensions.length;
        expect(rowsAtSuspend).toBe(1);
        const anchor = (await b.store.get("payer"))?.[AUDIT_ANCHOR_KEY] as { seq: number; hash: string };
        expect(anchor).toMatchObject({ seq: expect.any(Number) as number, hash: expect.stringMatching(/^[0-9a-f]{64}$/) as string });

        const whole = await verifySuspension(await b.log(), "payer", { key: KEY, store: b.store });
        expect(whole.status).toBe("pending");
        expect(whole.reason).toBeUndefined();

        // Cut the suspend receipt off the end: without the store the log looks complete, with it the cut shows.
        const cut = await b.log(anchor.seq);
        expect((await verifySuspension(cut, "payer", { key: KEY })).status).toBe("verified");
        const checked = await verifySuspension(cut, "payer", { key: KEY, store: b.store });
        expect(checked.status).toBe("failed");
        expect(checked.reason).toBe("truncated");
        expect(checked.failures.join("\n")).toMatch(/^truncated: /m);

        await runtime.resume("payer", "alice");
        const settled = (await b.store.get("payer"))?.[AUDIT_ANCHOR_KEY] as { seq: number; hash: string };
        expect(settled.seq).toBeGreaterThan(anchor.seq);
        expect((await verifySuspension(await b.log(), "payer", { key: KEY, store: b.store })).status).toBe("verified");
        // Cut the resume receipt: the log alone says "pending" (a live pause); the store says it was settled.
        const beforeResume = await verifySuspension(await b.log(settled.seq), "payer", { key: KEY, store: b.store });
        expect(beforeResume).toMatchObject({ status: "failed", reason: "truncated" });
      } finally {
        await runtime.stop();
        await b.cleanup();
      }
    });
  });
}
