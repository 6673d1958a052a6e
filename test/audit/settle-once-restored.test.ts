/**
 * A kill between a decision's receipt and the write clearing the pause's
 * marker brings the pause back under the same id (the receipt is written
 * before the effect). With a sink that reads back what it recorded (the JSONL
 * and PostgreSQL sinks), the next start completes the decision on record
 * (issue 21: before, it waited for the next decision) and writes no second
 * receipt: a later decision of that pause is STALE_APPROVAL, and
 * verifySuspension stays `verified`.
 *
 * The kill is reproduced by writing the stored record back as it was before
 * the resume's marker-clearing write, then starting a new runtime (new sink,
 * same log, same store) on it.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditLogSource } from "../../src/audit/audit-source.js";
import { JsonlAuditSink } from "../../src/audit/jsonl-audit-sink.js";
import { PostgresAuditSink } from "../../src/postgres/postgres-audit-sink.js";
import { verifySuspension } from "../../src/audit/verify-suspension.js";
import { AgentProcess, ProcessStatus, Runtime, silentLogger, type AuditSink, type AuthorizeResume, type RuntimeOptions, type StateStore } from "../../src/index.js";
import type { SuspensionMarker } from "../../src/state/suspension-marker.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { createTestSchema, type TestSchema } from "../support/postgres.js";
import { KEY, tempDir } from "../support/audit-log.js";

class Payer extends AgentProcess {
  readonly resumes: string[] = [];
  readonly denials: string[] = [];
  override async onResume(approver: string): Promise<void> {
    this.resumes.push(approver);
  }
  override async onDeny(decider: string, _marker: SuspensionMarker, reason: string): Promise<void> {
    this.denials.push(`${decider}:${reason}`);
  }
}

let schema: TestSchema;
beforeAll(async () => {
  schema = await createTestSchema("settleonce");
});
afterAll(async () => {
  await schema.drop();
});

type ClosableSink = AuditSink & { close(): Promise<void> };

interface Backend {
  store: StateStore;
  /** A new sink on the log (one per runtime incarnation). */
  sink(): ClosableSink;
  log(sink: ClosableSink): Promise<AuditLogSource>;
  cleanup(): Promise<void>;
}

const backends: [string, () => Backend][] = [
  [
    "SQLite store and JSONL sink",
    () => {
      const { dir, cleanup } = tempDir();
      const file = path.join(dir, "audit.jsonl");
      const store = new SqliteStateStore(path.join(dir, "state.db"));
      return {
        store,
        sink: () => new JsonlAuditSink(file, { key: KEY }),
        log: () => Promise.resolve(file),
        cleanup: async () => {
          await store.close();
          cleanup();
        },
      };
    },
  ],
  [
    "PostgreSQL store and sink",
    () => {
      const store = new PostgresStateStore({ pool: schema.pool }, { table: schema.table("state") });
      const table = schema.table("audit"); // a fresh name per call: one chain for both runtimes
      return {
        store,
        sink: () => new PostgresAuditSink({ pool: schema.pool, key: KEY, table }),
        log: (sink) => (sink as PostgresAuditSink).rows(),
        cleanup: () => store.close(),
      };
    },
  ],
];

/**
 * Suspends `payer` and decides its pause with `decide`, then puts the stored
 * record back as it was before the decision's marker-clearing write (the kill),
 * and starts a new runtime on the same store and log. The restored pause's id.
 */
async function decidedThenKilled(b: Backend, decide: (runtime: Runtime, suspensionId: string) => Promise<void>): Promise<string> {
  const sink = b.sink();
  const runtime = new Runtime({ root: [new Payer("payer")], store: b.store, auditSink: sink, logger: silentLogger, keepAlive: false });
  try {
    await runtime.start();
    await runtime.suspend("payer", "approve");
    const paused = await b.store.get("payer");
    const suspensionId = (paused?.["_civitas.suspended"] as unknown as SuspensionMarker).suspensionId;
    await decide(runtime, suspensionId);
    expect((await b.store.get("payer"))?.["_civitas.suspended"]).toBeUndefined();
    await runtime.stop();
    await b.store.set("payer", paused!); // the marker-clearing write never happened
    return suspensionId;
  } finally {
    await runtime.stop();
    await sink.close();
  }
}

/**
 * The restart after the kill: starts a new runtime (a fresh Payer "payer", a
 * new sink on the same log, the backend's store, and `options`), runs `body`
 * on it, then stops it, closes the sink and cleans the backend up.
 */
async function afterRestart(b: Backend, options: Partial<RuntimeOptions>, body: (restarted: { runtime: Runtime; agent: Payer; sink: ClosableSink }) => Promise<void>): Promise<void> {
  const agent = new Payer("payer");
  const sink = b.sink();
  const runtime = new Runtime({ root: [agent], store: b.store, auditSink: sink, logger: silentLogger, keepAlive: false, ...options });
  try {
    await runtime.start();
    await body({ runtime, agent, sink });
  } finally {
    await runtime.stop();
    await sink.close();
    await b.cleanup();
  }
}

for (const [label, make] of backends) {
  describe(`a pause whose decision is on record comes back after a kill: ${label}`, () => {
    it("the next start completes the recorded approval (its approver, onResume once) without a second agent.resume; a later approval is STALE_APPROVAL", async () => {
      const b = make();
      const id = await decidedThenKilled(b, (runtime, suspensionId) => runtime.resume("payer", "alice", { suspensionId }));
      const asked: string[] = [];
      const authorizeResume = (_agent: string, approver: string): boolean => (asked.push(approver), true);
      await afterRestart(b, { authorizeResume }, async ({ runtime, agent, sink }) => {
        // The restarted owner's authorizeResume saw the decision it carried out.
        expect(asked).toEqual(["alice"]);
        expect(agent.status).toBe(ProcessStatus.RUNNING);
        expect(agent.resumes).toEqual(["alice"]);
        expect(runtime.listSuspended()).toEqual([]);
        if (b.store instanceof PostgresStateStore) expect(await runtime.listSuspended({ scope: "cluster" })).toEqual([]);
        expect((await b.store.get("payer"))?.["_civitas.suspended"]).toBeUndefined();
        await expect(runtime.resume("payer", "bob", { suspensionId: id })).rejects.toMatchObject({ code: "STALE_APPROVAL" });
        expect(agent.resumes).toEqual(["alice"]);
        const verified = await verifySuspension(await b.log(sink), "payer", { key: KEY });
        expect(verified.failures).toEqual([]);
        expect(verified.status).toBe("verified");
        expect(verified.suspensions).toHaveLength(1);
      });
    });

    it("the next start asks its own authorizeResume about the recorded approver: refused, the decision is set aside (agent.settlement.refused) and the next one decides", async () => {
      const b = make();
      const id = await decidedThenKilled(b, (runtime, suspensionId) => runtime.resume("payer", "alice", { suspensionId }));
      const asked: string[] = [];
      const authorizeResume: AuthorizeResume = (_agent, approver, _marker, context) => {
        asked.push(`${approver} ${context?.decision ?? "approve"}`);
        return approver !== "alice";
      };
      await afterRestart(b, { authorizeResume }, async ({ runtime: refusingRuntime, agent: refusing, sink }) => {
        expect(asked).toEqual(["alice approve"]);
        expect(refusing.status).toBe(ProcessStatus.SUSPENDED);
        expect(refusing.resumes).toEqual([]);
        expect(refusingRuntime.listSuspended().map((s) => s.suspensionId)).toEqual([id]);
        expect(await verifySuspension(await b.log(sink), "payer", { key: KEY })).toMatchObject({ status: "pending", failures: [] });
        await refusingRuntime.deny("payer", "bob", { suspensionId: id, reason: "not alice" });
        expect(refusing.denials).toEqual(["bob:not alice"]);
        expect(asked).toEqual(["alice approve", "bob deny"]);
        const verified = await verifySuspension(await b.log(sink), "payer", { key: KEY });
        expect(verified.failures).toEqual([]);
        expect(verified).toMatchObject({ status: "verified", suspensions: [expect.objectContaining({ suspensionId: id, decision: "denied", decidedBy: "bob" })] });
      });
    });

    it("a decision whose cleared marker could not be stored is recorded as carried out: the next start clears the pause without running onResume again", async () => {
      const b = make();
      let failClear = false;
      const flaky: StateStore = {
        durable: true,
        get: (name) => b.store.get(name),
        set: (name, state) => {
          if (failClear && state["_civitas.suspended"] === undefined) {
            failClear = false;
            return Promise.reject(new Error("simulated: disk full"));
          }
          return b.store.set(name, state);
        },
        delete: (name) => b.store.delete(name),
        list: () => b.store.list(),
        close: () => Promise.resolve(),
      };
      const first = new Payer("payer");
      const firstSink = b.sink();
      const before = new Runtime({ root: [first], store: flaky, auditSink: firstSink, logger: silentLogger, keepAlive: false });
      let id = "";
      let paused: Awaited<ReturnType<StateStore["get"]>>;
      try {
        await before.start();
        await before.suspend("payer", "approve");
        paused = await b.store.get("payer");
        id = (paused?.["_civitas.suspended"] as unknown as SuspensionMarker).suspensionId;
        failClear = true;
        await before.resume("payer", "alice", { suspensionId: id });
        expect(first.resumes).toEqual(["alice"]);
        // The clearing write failed: the store still holds the pause (a kill now brings it back).
        expect((await b.store.get("payer"))?.["_civitas.suspended"]).toMatchObject({ suspensionId: id });
      } finally {
        await before.stop();
        await firstSink.close();
      }
      await b.store.set("payer", paused!); // killed before any later write stored the cleared marker

      await afterRestart(b, {}, async ({ runtime, agent, sink }) => {
        expect(agent.status).toBe(ProcessStatus.RUNNING);
        expect(agent.resumes).toEqual([]);
        expect(runtime.listSuspended()).toEqual([]);
        expect((await b.store.get("payer"))?.["_civitas.suspended"]).toBeUndefined();
        await expect(runtime.resume("payer", "bob", { suspensionId: id })).rejects.toMatchObject({ code: "STALE_APPROVAL" });
        const log = await b.log(sink);
        const verified = await verifySuspension(log, "payer", { key: KEY });
        expect(verified).toMatchObject({ status: "verified", failures: [], suspensions: [expect.objectContaining({ suspensionId: id, decision: "approved", decidedBy: "alice" })] });
      });
    });

    it("the next start completes the recorded denial (onDeny once); a later approval is STALE_APPROVAL", async () => {
      const b = make();
      const id = await decidedThenKilled(b, (runtime, suspensionId) => runtime.deny("payer", "dora", { suspensionId, reason: "over budget" }));
      await afterRestart(b, {}, async ({ runtime, agent, sink }) => {
        expect(agent.status).toBe(ProcessStatus.RUNNING);
        expect(agent.denials).toEqual(["dora:over budget"]);
        expect(runtime.listSuspended()).toEqual([]);
        if (b.store instanceof PostgresStateStore) expect(await runtime.listSuspended({ scope: "cluster" })).toEqual([]);
        await expect(runtime.resume("payer", "bob", { suspensionId: id })).rejects.toMatchObject({ code: "STALE_APPROVAL" });
        expect(agent.resumes).toEqual([]);
        expect(agent.denials).toEqual(["dora:over budget"]);
        const verified = await verifySuspension(await b.log(sink), "payer", { key: KEY });
        expect(verified.failures).toEqual([]);
        expect(verified.status).toBe("verified");
      });
    });
  });
}
