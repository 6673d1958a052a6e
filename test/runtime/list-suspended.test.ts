/**
 * runtime.listSuspended: the local list is synchronous and from memory; the
 * cluster scope is a Promise answered by a shared store, and a store that
 * cannot answer for the cluster is refused with a coded rejection, never a throw.
 * (The cluster scope against PostgreSQL and agents in other processes: test/nats/cluster-control.test.ts.)
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AgentProcess, ClusterScopeUnsupportedError, InMemoryStateStore, Runtime, silentLogger, type Message, type StateStore } from "../../src/index.js";
import { PostgresStateStore } from "../../src/postgres/postgres-state-store.js";
import { SqliteStateStore } from "../../src/sqlite/sqlite-state-store.js";
import { UNREACHABLE_URL } from "../support/postgres.js";
import { cleanupSteps } from "../support/cleanup.js";

class Idle extends AgentProcess {
  override async handle(_message: Message): Promise<void> {}
}

const cleanup = cleanupSteps();

async function started(store: StateStore): Promise<Runtime> {
  const runtime = new Runtime({ root: [new Idle("a"), new Idle("b")], store, logger: silentLogger, keepAlive: false });
  await runtime.start();
  cleanup.push(() => runtime.stop());
  return runtime;
}

describe("listSuspended()", () => {
  it("without options or with scope \"local\" returns this runtime's pauses synchronously", async () => {
    const runtime = await started(new InMemoryStateStore());
    await runtime.suspend("b", "hold", { expiresInMs: 60_000 });
    const local = runtime.listSuspended();
    expect(Array.isArray(local)).toBe(true);
    expect(local).toMatchObject([{ name: "b", reason: "hold" }]);
    expect(local[0]!.expiresAt).toBe(runtime.getAgent("b")!.suspension!.expiresAt);
    expect(runtime.listSuspended({ scope: "local" })).toEqual(local);
    expect(runtime.listSuspended({})).toEqual(local);
  });

  it("refuses a scope other than \"local\" or \"cluster\", and options that are not an object, with INVALID_ARGUMENT", async () => {
    const runtime = await started(new InMemoryStateStore());
    for (const options of [{ scope: "galaxy" }, { scope: null }, null, 3]) {
      let thrown: unknown;
      try {
        runtime.listSuspended(options as never);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ name: "InvalidArgumentError", code: "INVALID_ARGUMENT" });
    }
  });
});

describe("listSuspended({ scope: \"cluster\" }) with a store that cannot answer for the cluster", () => {
  it.each([
    ["InMemoryStateStore", (): StateStore => new InMemoryStateStore()],
    [
      "SqliteStateStore",
      (): StateStore => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "civitas-list-"));
        const store = new SqliteStateStore(path.join(dir, "state.db"));
        cleanup.push(async () => {
          await store.close();
          fs.rmSync(dir, { recursive: true, force: true });
        });
        return store;
      },
    ],
  ])("%s: returns a Promise that rejects with CLUSTER_SCOPE_UNSUPPORTED naming the store it needs", async (storeName, make) => {
    const runtime = await started(make());
    await runtime.suspend("a", "hold");
    let answer: Promise<unknown> | undefined;
    expect(() => (answer = runtime.listSuspended({ scope: "cluster" }))).not.toThrow();
    expect(answer).toBeInstanceOf(Promise);
    const error = await answer!.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterScopeUnsupportedError);
    expect(error).toMatchObject({ name: "ClusterScopeUnsupportedError", code: "CLUSTER_SCOPE_UNSUPPORTED", store: storeName });
    expect((error as Error).message).toContain("PostgresStateStore");
    expect((error as Error).message).toContain(storeName);
    expect(runtime.listSuspended().map((s) => s.name)).toEqual(["a"]);
  });

  it("a PostgresStateStore whose server is unreachable rejects with STORE_UNAVAILABLE, never hangs", async () => {
    const store = new PostgresStateStore({ connectionString: UNREACHABLE_URL }, { logger: silentLogger, connectionTimeoutMs: 1000 });
    cleanup.push(() => store.close());
    const runtime = new Runtime({ root: [new Idle("a")], store, logger: silentLogger, keepAlive: false });
    const error = await runtime.listSuspended({ scope: "cluster" }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_UNAVAILABLE" });
  });
});
