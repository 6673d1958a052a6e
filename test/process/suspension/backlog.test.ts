/**
 * The durable backlog of a suspended agent (issue 26, item 7): business
 * messages accepted while it is paused are in the store before `send`
 * resolves, come back in FIFO order after a restart, and leave the store once
 * handled — in the handler's own checkpoint when it takes one.
 */
import path from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  BACKLOG_KEY,
  BacklogWriteError,
  DynamicSupervisor,
  ErrorAction,
  InMemoryStateStore,
  ProcessStatus,
  ReservedStateKeyError,
  Runtime,
  silentLogger,
  type JsonObject,
  type Message,
  type StateStore,
} from "../../../src/index.js";
import { SqliteStateStore } from "../../../src/sqlite/sqlite-state-store.js";
import { scratch } from "../../support/scratch.js";
import { waitUntil } from "../../support/agents.js";

const { tempDir, track } = scratch("civitas-backlog-");
const running: Runtime[] = [];
afterEach(async () => {
  for (const runtime of running.splice(0)) await runtime.stop();
});

/** Records what it handled, in order; checkpoints each one unless told not to. */
class Worker extends AgentProcess<{ handled: string[] }> {
  override state = { handled: [] as string[] };
  checkpointing = true;
  override async handle(message: Message<{ n: string }>): Promise<void> {
    this.state.handled.push(message.payload.n);
    if (this.checkpointing) await this.checkpoint();
  }
}

function sqlite(): SqliteStateStore {
  return track(new SqliteStateStore(path.join(tempDir(), "state.db")));
}

/** Records a copy of every state `store` is asked to write, in order. */
function recordWrites(store: StateStore): JsonObject[] {
  const writes: JsonObject[] = [];
  const set = store.set.bind(store);
  store.set = async (name, state) => {
    writes.push(structuredClone(state));
    return set(name, state);
  };
  return writes;
}

async function startWith(store: StateStore, agent: AgentProcess, options: { durableBacklog?: boolean } = {}): Promise<Runtime> {
  const runtime = new Runtime({ root: agent, store, logger: silentLogger, ...options });
  running.push(runtime);
  await runtime.start();
  return runtime;
}

async function stored(store: StateStore, name = "w"): Promise<JsonObject> {
  const state = await store.get(name);
  if (state === undefined) throw new Error(`no record for ${name}`);
  return state;
}

function backlogIds(state: JsonObject): string[] {
  const backlog = state[BACKLOG_KEY] as { payload: { n: string } }[] | undefined;
  return (backlog ?? []).map((wire) => wire.payload.n);
}

describe("durable backlog", () => {
  it("a send to a suspended agent resolves only once the message is in the store", async () => {
    const store = sqlite();
    const runtime = await startWith(store, new Worker("w"));
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    expect(backlogIds(await stored(store))).toEqual(["a"]);
    await Promise.all([runtime.send("w", { n: "b" }), runtime.send("w", { n: "c" })]);
    expect(backlogIds(await stored(store))).toEqual(["a", "b", "c"]);
  });

  it("messages queued when the pause begins are stored with its marker", async () => {
    const store = sqlite();
    const worker = new Worker("w");
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    worker.handle = async (message: Message<{ n: string }>) => {
      if (message.payload.n === "first") await blocked;
      worker.state.handled.push(message.payload.n);
    };
    const runtime = await startWith(store, worker);
    await runtime.send("w", { n: "first" });
    await runtime.send("w", { n: "q1" });
    await runtime.send("w", { n: "q2" });
    const suspending = runtime.suspend("w", "review");
    release();
    await suspending;
    const state = await stored(store);
    expect(state["_civitas.suspended"]).toBeDefined();
    expect(backlogIds(state)).toEqual(["q1", "q2"]);
  });

  it("after a restart on the same store the backlog is handled first, in order, and leaves the store", async () => {
    const store = sqlite();
    const first = await startWith(store, new Worker("w"));
    await first.suspend("w", "review");
    for (const n of ["a", "b", "c"]) await first.send("w", { n });
    // The process "ends": a fresh runtime on the same store, as after a restart.
    await first.stop();
    running.splice(running.indexOf(first), 1);
    const worker = new Worker("w");
    const second = await startWith(store, worker);
    expect(worker.status).toBe("SUSPENDED");
    expect(worker.state).not.toHaveProperty(BACKLOG_KEY);
    await second.send("w", { n: "d" });
    await second.resume("w", "ana");
    await waitUntil(() => worker.state.handled.length === 4, "four handled");
    expect(worker.state.handled).toEqual(["a", "b", "c", "d"]);
    await waitUntil(() => true, "settle");
    const state = await stored(store);
    expect(state).not.toHaveProperty(BACKLOG_KEY);
    expect(state.handled).toEqual(["a", "b", "c", "d"]);
  });

  it("a handled message leaves the store in the same write as the handler's checkpoint", async () => {
    const store = sqlite();
    const writes = recordWrites(store);
    const worker = new Worker("w");
    const runtime = await startWith(store, worker);
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    await runtime.send("w", { n: "b" });
    const before = writes.length;
    await runtime.resume("w", "ana");
    await waitUntil(() => worker.state.handled.length === 2, "both handled");
    await new Promise((resolve) => setTimeout(resolve, 20));
    const after = writes.slice(before);
    // The resume's write, then one checkpoint per message, each removing the message it handled: no extra writes.
    const checkpoints = after.filter((w) => Array.isArray(w.handled) && (w.handled as string[]).length > 0);
    expect(checkpoints.map((w) => [(w.handled as string[]).join(""), backlogIds(w).join("")])).toEqual([
      ["a", "b"],
      ["ab", ""],
    ]);
    expect(after).toHaveLength(3);
  });

  it("a handler that does not checkpoint gets a write of its own that removes the message, not its unsaved state", async () => {
    const store = sqlite();
    const worker = new Worker("w");
    worker.checkpointing = false;
    const runtime = await startWith(store, worker);
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    await runtime.resume("w", "ana");
    await waitUntil(() => worker.state.handled.length === 1, "handled");
    await new Promise((resolve) => setTimeout(resolve, 20));
    const state = await stored(store);
    expect(state).not.toHaveProperty(BACKLOG_KEY);
    expect(state.handled).toEqual([]); // the in-memory change was never checkpointed
  });

  it("a backlog message whose TTL runs out while the agent is paused is discarded, and leaves the store too", async () => {
    const store = sqlite();
    const worker = new Worker("w");
    const runtime = await startWith(store, worker);
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "short" }, { ttlMs: 1 });
    expect(backlogIds(await stored(store))).toEqual(["short"]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await runtime.resume("w", "ana");
    await waitUntil(() => worker.mailbox.expiredCount === 1, "expired");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(worker.state.handled).toEqual([]);
    expect(await stored(store)).not.toHaveProperty(BACKLOG_KEY);
  });

  it("a despawn drops the backlog with the pause: a new agent of that name replays nothing", async () => {
    const store = sqlite();
    const pool = new DynamicSupervisor("pool");
    const runtime = new Runtime({ root: pool, store, logger: silentLogger });
    running.push(runtime);
    await runtime.start();
    await pool.spawn(Worker, "w");
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    expect(backlogIds(await stored(store))).toEqual(["a"]);
    await pool.despawn("w");
    const state = await stored(store);
    expect(state).not.toHaveProperty(BACKLOG_KEY);
    expect(state).not.toHaveProperty("_civitas.suspended");
    const next = await pool.spawn(Worker, "w");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(next.state.handled).toEqual([]);
  });

  it("what an agent restored into a pause sent itself while starting joins the stored backlog, after the restored messages", async () => {
    const store = sqlite();
    const first = await startWith(store, new Worker("w"));
    await first.suspend("w", "review");
    await first.send("w", { n: "before" });
    await first.stop();
    running.splice(running.indexOf(first), 1);
    class Booting extends Worker {
      override async onStart(): Promise<void> {
        if (this.suspension !== undefined) await this.send("w", { n: "boot" });
      }
    }
    const worker = new Booting("w");
    const second = await startWith(store, worker);
    expect(worker.status).toBe(ProcessStatus.SUSPENDED);
    expect(backlogIds(await stored(store))).toEqual(["before", "boot"]);
    await second.resume("w", "ana");
    await waitUntil(() => worker.state.handled.length === 2, "both handled");
    expect(worker.state.handled).toEqual(["before", "boot"]);
  });

  it("a backlog message whose handler fails and is retried stays in the store until a handler succeeds", async () => {
    const store = sqlite();
    const writes = recordWrites(store);
    class Flaky extends Worker {
      failures = 0;
      override async handle(message: Message<{ n: string }>): Promise<void> {
        if (this.failures++ === 0) throw new Error("transient");
        await super.handle(message);
      }
      override async onError(): Promise<ErrorAction> {
        return ErrorAction.RETRY;
      }
    }
    const worker = new Flaky("w");
    const runtime = await startWith(store, worker);
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    const before = writes.length;
    await runtime.resume("w", "ana");
    await waitUntil(() => worker.state.handled.length === 1, "handled after the retry");
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Every write until the successful checkpoint still holds the message; that checkpoint removes it.
    const after = writes.slice(before);
    const done = after.findIndex((w) => (w.handled as string[]).length === 1);
    expect(done).toBeGreaterThan(0);
    for (const w of after.slice(0, done)) expect(backlogIds(w)).toEqual(["a"]);
    expect(backlogIds(after[done] as JsonObject)).toEqual([]);
    expect(await stored(store)).not.toHaveProperty(BACKLOG_KEY);
  });

  it("a send whose backlog write fails rejects with BACKLOG_WRITE_FAILED and the message is not handled", async () => {
    const store = sqlite();
    const worker = new Worker("w");
    const runtime = await startWith(store, worker);
    await runtime.suspend("w", "review");
    const set = store.set.bind(store);
    store.set = () => Promise.reject(new Error("disk full"));
    const error = await runtime.send("w", { n: "lost" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BacklogWriteError);
    expect((error as BacklogWriteError).code).toBe("BACKLOG_WRITE_FAILED");
    expect((error as BacklogWriteError).name).toBe("BacklogWriteError");
    expect(((error as BacklogWriteError).cause as Error).message).toBe("disk full");
    expect(worker.mailbox.size).toBe(0);
    store.set = set;
    await runtime.send("w", { n: "kept" });
    await runtime.resume("w", "ana");
    await waitUntil(() => worker.state.handled.length === 1, "handled");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(worker.state.handled).toEqual(["kept"]);
  });

  it("the reserved key is never in the agent's state, and a state that sets it is refused", async () => {
    const store = sqlite();
    const worker = new Worker("w");
    await startWith(store, worker);
    (worker.state as JsonObject)[BACKLOG_KEY] = [];
    const error = await worker.checkpoint().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReservedStateKeyError);
    expect((error as ReservedStateKeyError).code).toBe("RESERVED_STATE_KEY");
    expect((error as ReservedStateKeyError).name).toBe("ReservedStateKeyError");
  });

  it("durableBacklog: false keeps the backlog in memory only", async () => {
    const store = sqlite();
    const runtime = await startWith(store, new Worker("w"), { durableBacklog: false });
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    expect(await stored(store)).not.toHaveProperty(BACKLOG_KEY);
    const agentOff = new Worker("x", { durableBacklog: false });
    const other = sqlite();
    const second = await startWith(other, agentOff);
    await second.suspend("x", "review");
    await second.send("x", { n: "a" });
    expect(await stored(other, "x")).not.toHaveProperty(BACKLOG_KEY);
  });

  it("is off by default on a store that is not durable", async () => {
    const store = new InMemoryStateStore();
    const runtime = await startWith(store, new Worker("w"));
    await runtime.suspend("w", "review");
    await runtime.send("w", { n: "a" });
    expect(await stored(store)).not.toHaveProperty(BACKLOG_KEY);
  });
});

/**
 * A store that can be "killed": from then on every call hangs, as if the
 * process died, so nothing the old runtime does afterwards reaches the file.
 */
class KillableStore implements StateStore {
  readonly durable = true;
  dead = false;
  constructor(readonly inner: SqliteStateStore) {}
  private hang<T>(call: () => Promise<T>): Promise<T> {
    return this.dead ? new Promise<T>(() => undefined) : call();
  }
  get(name: string): Promise<JsonObject | undefined> {
    return this.hang(() => this.inner.get(name));
  }
  set(name: string, state: JsonObject): Promise<void> {
    return this.hang(() => this.inner.set(name, state));
  }
  delete(name: string): Promise<void> {
    return this.hang(() => this.inner.delete(name));
  }
  list(): Promise<string[]> {
    return this.hang(() => this.inner.list());
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

type Command = "send" | "suspend" | "resume" | "kill" | "settle";

describe("durable backlog (property)", () => {
  it("over any sequence of send, suspend, resume and kill: what was accepted while paused is handled once, and nothing twice or out of order", { timeout: 120_000 }, async () => {
    const commands = fc.array(fc.constantFrom<Command>("send", "send", "send", "suspend", "resume", "kill", "settle"), { minLength: 1, maxLength: 20 });
    await fc.assert(
      fc.asyncProperty(commands, async (script) => {
        const file = path.join(tempDir(), "state.db");
        const handles: SqliteStateStore[] = [];
        let store!: KillableStore;
        let worker!: Worker;
        let runtime!: Runtime;
        const boot = async (): Promise<void> => {
          const inner = new SqliteStateStore(file);
          handles.push(inner);
          store = new KillableStore(inner);
          worker = new Worker("w");
          runtime = new Runtime({ root: worker, store, logger: silentLogger, keepAlive: false });
          await runtime.start();
        };
        const idle = () => waitUntil(() => worker.mailbox.size === 0, "mailbox empty");
        const accepted: string[] = [];
        const whilePaused: string[] = [];
        try {
          await boot();
          let next = 0;
          for (const command of script) {
            if (command === "send") {
              const n = `m${next++}`;
              const paused = worker.status === ProcessStatus.SUSPENDED;
              await runtime.send("w", { n });
              accepted.push(n);
              if (paused) whilePaused.push(n);
            } else if (command === "suspend") await runtime.suspend("w", "review");
            else if (command === "resume") await runtime.resume("w", "ana");
            else if (command === "settle") {
              if (worker.status === ProcessStatus.RUNNING) await idle();
            }
            else {
              store.dead = true; // kill -9: the old runtime is abandoned, its writes never land
              await boot();
            }
          }
          if (worker.status === ProcessStatus.SUSPENDED) await runtime.resume("w", "ana");
          await waitUntil(() => worker.mailbox.size === 0, "drained");
          await new Promise((resolve) => setTimeout(resolve, 10));
          const record = await store.get("w");
          const handled = (record?.handled as string[] | undefined) ?? [];
          expect(record ?? {}).not.toHaveProperty(BACKLOG_KEY);
          expect(new Set(handled).size).toBe(handled.length);
          // In the order accepted: handled is a subsequence of accepted.
          const positions = handled.map((n) => accepted.indexOf(n));
          expect(positions.every((p, i) => p >= 0 && (i === 0 || p > (positions[i - 1] ?? -1)))).toBe(true);
          for (const n of whilePaused) expect(handled).toContain(n);
          await runtime.stop();
        } finally {
          for (const handle of handles) await handle.close();
        }
      }),
      { numRuns: Number(process.env.CIVITAS_PROPERTY_RUNS ?? 0) || 30 },
    );
  });
});
