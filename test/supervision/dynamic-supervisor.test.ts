import { afterEach, describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  MaxChildrenError,
  ProcessStatus,
  StartFailedError,
  Supervisor,
  type JsonObject,
  type SpawnOptions,
} from "../../src/index.js";
import { Probe, Spawner, harness, stopAll, turns, waitUntil } from "../support/agents.js";

afterEach(stopAll);

async function running(options: ConstructorParameters<typeof DynamicSupervisor>[1] = {}) {
  const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0, ...options });
  const fixed = new Probe("fixed");
  const root = new Supervisor("root", { children: [fixed, dyn] });
  const h = harness(root);
  await h.runtime.start();
  return { ...h, dyn, fixed, root };
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string; name: string } & Error> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error as { code?: string } & Error,
  );
}

describe("DynamicSupervisor spawn", () => {
  it("spawns from a class: registered, started, reachable", async () => {
    const { runtime, dyn } = await running();
    const worker = await dyn.spawn(Probe, "w1", { maxRetries: 1 });
    expect(worker).toBeInstanceOf(Probe);
    expect(worker.name).toBe("w1");
    expect(worker.status).toBe(ProcessStatus.RUNNING);
    expect(worker.startCalls).toBe(1);
    expect(runtime.getAgent("w1")).toBe(worker);
    expect(dyn.children).toEqual([worker]);
    const reply = await runtime.ask("w1", { op: "echo" });
    expect(reply.payload).toEqual({ from: "w1", incarnation: 1 });
  });

  it("spawns from a factory function, handing it the name and options", async () => {
    const { runtime, dyn } = await running();
    const calls: Array<[string, SpawnOptions | undefined]> = [];
    const made: Probe[] = [];
    const factory = (name: string, options?: SpawnOptions): Probe => {
      calls.push([name, options]);
      const probe = new Probe(name, options);
      made.push(probe);
      return probe;
    };
    const worker = await dyn.spawn(factory, "w2", { label: "x", mailboxSize: 5 });
    expect(calls).toEqual([["w2", { label: "x", mailboxSize: 5 }]]);
    expect(worker).toBe(made[0]);
    expect(runtime.getAgent("w2")).toBe(worker);
    expect(worker.status).toBe(ProcessStatus.RUNNING);
  });

  it("spawns the AgentProcess base class itself", async () => {
    const { runtime, dyn } = await running();
    const plain = await dyn.spawn(AgentProcess, "plain");
    expect(plain).toBeInstanceOf(AgentProcess);
    expect(plain.status).toBe(ProcessStatus.RUNNING);
    expect(runtime.getAgent("plain")).toBe(plain);
  });

  it("rejects with MAX_CHILDREN before creating anything, and accepts again after a despawn", async () => {
    const { dyn, runtime } = await running({ maxChildren: 2 });
    let constructed = 0;
    const factory = (name: string): Probe => {
      constructed++;
      return new Probe(name);
    };
    await dyn.spawn(factory, "a");
    await dyn.spawn(factory, "b");
    const error = await rejection(dyn.spawn(factory, "c"));
    expect(error).toBeInstanceOf(MaxChildrenError);
    expect(error.code).toBe("MAX_CHILDREN");
    expect(error.name).toBe("MaxChildrenError");
    expect(error.message).toContain("dyn");
    expect((error as unknown as MaxChildrenError).maxChildren).toBe(2);
    expect(constructed).toBe(2);
    expect(runtime.getAgent("c")).toBeUndefined();
    await dyn.despawn("a");
    await dyn.spawn(factory, "c");
    expect(constructed).toBe(3);
    expect(dyn.children.map((c) => c.name)).toEqual(["b", "c"]);
  });

  it("rejects a name already used in the runtime with DUPLICATE_NAME, without calling the factory", async () => {
    const { dyn } = await running();
    let constructed = 0;
    const factory = (name: string): Probe => {
      constructed++;
      return new Probe(name);
    };
    await dyn.spawn(factory, "w");
    for (const taken of ["w", "fixed", "root", "dyn"]) {
      const error = await rejection(dyn.spawn(factory, taken));
      expect(error.code, taken).toBe("DUPLICATE_NAME");
      expect(error.message).toContain(taken);
    }
    expect(constructed).toBe(1);
  });

  it("rejects before runtime.start() with RUNTIME_NOT_STARTED, and after stop with RUNTIME_STOPPED", async () => {
    const dyn = new DynamicSupervisor("dyn");
    let constructed = 0;
    const factory = (name: string): Probe => {
      constructed++;
      return new Probe(name);
    };
    await expect(dyn.spawn(factory, "early")).rejects.toMatchObject({ code: "RUNTIME_NOT_STARTED" });
    const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
    await expect(dyn.spawn(factory, "early")).rejects.toMatchObject({ code: "RUNTIME_NOT_STARTED" });
    await runtime.start();
    await dyn.spawn(factory, "ok");
    await runtime.stop();
    await expect(dyn.spawn(factory, "late")).rejects.toMatchObject({ code: "RUNTIME_STOPPED" });
    expect(constructed).toBe(1);
  });

  it("rejects bad names and factories with INVALID_ARGUMENT", async () => {
    const { dyn, runtime } = await running();
    await expect(dyn.spawn(Probe, "")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "name" });
    await expect(dyn.spawn(Probe, "has space")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(dyn.spawn(42 as unknown as typeof Probe, "n")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "factory" });
    await expect(dyn.spawn((() => ({})) as unknown as typeof Probe, "n")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "factory" });
    await expect(dyn.spawn(() => new Probe("other"), "n")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "factory" });
    class NotAnAgent {
      constructor(readonly name: string) {}
    }
    await expect(dyn.spawn(NotAnAgent as unknown as typeof Probe, "n")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "factory" });
    const bound = (NotAnAgent as unknown as (...args: unknown[]) => unknown).bind(null) as unknown as typeof Probe;
    await expect(dyn.spawn(bound, "n")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "factory" });
    expect(runtime.getAgent("n")).toBeUndefined();
    expect(runtime.getAgent("other")).toBeUndefined();
    expect(dyn.children).toEqual([]);
    // the refused names stay free
    await dyn.spawn(Probe, "n");
  });

  it("a child whose onStart throws rejects the spawn with START_FAILED and leaves nothing registered", async () => {
    const { dyn, runtime } = await running();
    const failing = (name: string): Probe => {
      const probe = new Probe(name);
      probe.failStarts = 1;
      return probe;
    };
    const error = await rejection(dyn.spawn(failing, "bad"));
    expect(error).toBeInstanceOf(StartFailedError);
    expect(error.code).toBe("START_FAILED");
    expect(runtime.getAgent("bad")).toBeUndefined();
    expect(dyn.children).toEqual([]);
    const good = await dyn.spawn(Probe, "bad");
    expect(good.status).toBe(ProcessStatus.RUNNING);
  });
});

describe("DynamicSupervisor despawn and stop", () => {
  it("despawn stops and removes the child; sending to it fails with AGENT_NOT_FOUND; the name can be reused", async () => {
    const { dyn, runtime } = await running();
    const first = await dyn.spawn(Probe, "w");
    await dyn.despawn("w");
    expect(first.status).toBe(ProcessStatus.STOPPED);
    expect(first.stopCalls).toBe(1);
    expect(dyn.children).toEqual([]);
    expect(runtime.getAgent("w")).toBeUndefined();
    await expect(runtime.send("w", { op: "work" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    await expect(dyn.despawn("w")).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });

    const second = await dyn.spawn(Probe, "w");
    expect(second).not.toBe(first);
    expect(runtime.getAgent("w")).toBe(second);
    const reply = await runtime.ask("w", { op: "echo" });
    expect(reply.payload).toEqual({ from: "w", incarnation: 1 });
    expect(first.incarnation).toBe(1);
  });

  async function stopWithQueue(drain: "current" | "all") {
    const h = await running();
    const worker = await h.dyn.spawn(Probe, "w");
    await h.runtime.send("w", { op: "hang", seq: 0 });
    await waitUntil(() => worker.hanging, "w to take the first message");
    for (let seq = 1; seq <= 3; seq++) await h.runtime.send("w", { op: "work", seq });
    let stopped = false;
    const stopping = h.dyn.stop("w", { drain }).then(() => (stopped = true));
    await turns(10);
    expect(stopped).toBe(false);
    expect(worker.status).toBe(ProcessStatus.STOPPING);
    worker.release();
    await stopping;
    return { ...h, worker };
  }

  it('stop(name, { drain: "current" }) finishes the message in hand and leaves the queue unhandled', async () => {
    const { worker, dyn, runtime } = await stopWithQueue("current");
    expect(worker.handled).toEqual([0]);
    expect(worker.status).toBe(ProcessStatus.STOPPED);
    expect(dyn.children).toEqual([]);
    expect(runtime.getAgent("w")).toBeUndefined();
  });

  it('stop(name, { drain: "all" }) handles every queued message first', async () => {
    const { worker, dyn } = await stopWithQueue("all");
    expect(worker.handled).toEqual([0, 1, 2, 3]);
    expect(worker.status).toBe(ProcessStatus.STOPPED);
    expect(worker.stopCalls).toBe(1);
    expect(dyn.children).toEqual([]);
  });

  it("stop timeoutMs bounds a handler that hangs", async () => {
    const { dyn, clock, runtime } = await running();
    const worker = await dyn.spawn(Probe, "w");
    await runtime.send("w", { op: "hang", seq: 0 });
    await waitUntil(() => worker.hanging, "w to hang");
    let stopped = false;
    const stopping = dyn.stop("w", { drain: "all", timeoutMs: 50 }).then(() => (stopped = true));
    await clock.advance(49);
    await turns(10);
    expect(stopped).toBe(false);
    await clock.advance(1);
    await stopping;
    expect(worker.status).toBe(ProcessStatus.STOPPED);
    expect(worker.stopCalls).toBe(1);
    expect(worker.handled).toEqual([]);
    expect(dyn.children).toEqual([]);
    expect(runtime.getAgent("w")).toBeUndefined();
  });

  it("stop rejects bad options with INVALID_ARGUMENT and leaves the child running", async () => {
    const { dyn } = await running();
    const worker = await dyn.spawn(Probe, "w");
    await expect(dyn.stop("w", { drain: "some" as "all" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "drain" });
    await expect(dyn.stop("w", { timeoutMs: -1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "timeoutMs" });
    await expect(dyn.stop("w", { timeoutMs: 1.5 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", argument: "timeoutMs" });
    expect(worker.status).toBe(ProcessStatus.RUNNING);
    expect(dyn.children).toEqual([worker]);
  });

  it("runtime.stop() stops every dynamic child", async () => {
    const { dyn, runtime } = await running();
    const workers = [await dyn.spawn(Probe, "a"), await dyn.spawn(Probe, "b")];
    await runtime.stop();
    expect(workers.map((w) => w.status)).toEqual([ProcessStatus.STOPPED, ProcessStatus.STOPPED]);
    expect(workers.map((w) => w.stopCalls)).toEqual([1, 1]);
    expect(dyn.status).toBe(ProcessStatus.STOPPED);
  });
});

describe("DynamicSupervisor restarts", () => {
  it("restarts a crashed child (transient) and keeps it", async () => {
    const { dyn, runtime, audit } = await running({ maxRestarts: 3 });
    const worker = await dyn.spawn(Probe, "w");
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => worker.incarnation === 2 && worker.status === ProcessStatus.RUNNING, "w to restart");
    expect(dyn.children).toEqual([worker]);
    expect(runtime.getAgent("w")).toBe(worker);
    expect(audit.ofType("agent.restart", "w")).toHaveLength(1);
    expect(audit.ofType("agent.restart", "w")[0]!.details).toMatchObject({ supervisor: "dyn", incarnation: 2, cause: "boom in w" });
    const reply = await runtime.ask("w", { op: "echo" });
    expect(reply.payload).toEqual({ from: "w", incarnation: 2 });
  });

  it("waits the backoff delay before restarting a dynamic child", async () => {
    const { dyn, runtime, clock } = await running({ backoff: "EXPONENTIAL", backoffBaseMs: 40, maxRestarts: 5 });
    const worker = await dyn.spawn(Probe, "w");
    for (const [i, delay] of [40, 80, 160].entries()) {
      await runtime.send("w", { op: "crash" });
      await waitUntil(() => worker.status === ProcessStatus.CRASHED, "the crash");
      await turns(10);
      await clock.advance(delay - 1);
      await turns(10);
      expect(worker.incarnation).toBe(i + 1);
      await clock.advance(1);
      await waitUntil(() => worker.incarnation === i + 2 && worker.status === ProcessStatus.RUNNING, "the restart");
    }
  });

  it("removes a child that exceeds its own restart intensity; other children are unaffected", async () => {
    const { dyn, runtime, root } = await running({ maxRestarts: 1 });
    const worker = await dyn.spawn(Probe, "w");
    const other = await dyn.spawn(Probe, "o");
    await runtime.send("o", { op: "crash" });
    await waitUntil(() => other.incarnation === 2 && other.status === ProcessStatus.RUNNING, "o to restart");
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => worker.incarnation === 2 && worker.status === ProcessStatus.RUNNING, "w to restart");
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => dyn.children.length === 1, "w to be removed");
    expect(dyn.children).toEqual([other]);
    expect(worker.incarnation).toBe(2);
    expect(runtime.getAgent("w")).toBeUndefined();
    await expect(runtime.send("w", { op: "work" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    expect(other.status).toBe(ProcessStatus.RUNNING);
    expect(dyn.status).toBe(ProcessStatus.RUNNING);
    expect(root.status).toBe(ProcessStatus.RUNNING);
    // the name is free again
    const again = await dyn.spawn(Probe, "w");
    expect(again.status).toBe(ProcessStatus.RUNNING);
  });

  it("a restart whose onStart fails counts against the child's intensity until it is removed", async () => {
    const { dyn, runtime, audit } = await running({ maxRestarts: 2 });
    const worker = await dyn.spawn(Probe, "w");
    worker.failStarts = 100;
    await runtime.send("w", { op: "crash" });
    await waitUntil(() => dyn.children.length === 0, "w to be removed");
    expect(worker.startCalls).toBe(3); // the first start, then two failed restarts
    expect(worker.status).toBe(ProcessStatus.CRASHED);
    expect(audit.ofType("agent.restart", "w")).toEqual([]);
    expect(runtime.getAgent("w")).toBeUndefined();
  });

  it("removes a child that exits normally", async () => {
    const { dyn, runtime } = await running();
    const worker = await dyn.spawn(Probe, "w");
    await runtime.send("w", {}, { type: "civitas.eval.halt" });
    await waitUntil(() => dyn.children.length === 0, "w to be removed");
    expect(worker.status).toBe(ProcessStatus.STOPPED);
    expect(worker.incarnation).toBe(1);
    expect(runtime.getAgent("w")).toBeUndefined();
  });
});

describe("DynamicSupervisor under a restarting parent", () => {
  it("a ONE_FOR_ALL restart of its parent stops and drops its children, freeing their names", async () => {
    const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
    const fixed = new Probe("fixed");
    const { runtime } = harness(new Supervisor("root", { children: [dyn, fixed], strategy: "ONE_FOR_ALL", backoffBaseMs: 0 }));
    await runtime.start();
    const worker = await dyn.spawn(Probe, "w");
    await runtime.send("fixed", { op: "crash" });
    await waitUntil(() => dyn.incarnation === 2 && fixed.incarnation === 2 && fixed.status === ProcessStatus.RUNNING, "the tree to restart");
    expect(worker.status).toBe(ProcessStatus.STOPPED);
    expect(worker.stopCalls).toBe(1);
    expect(dyn.children).toEqual([]);
    expect(dyn.status).toBe(ProcessStatus.RUNNING);
    expect(runtime.getAgent("w")).toBeUndefined();
    const again = await dyn.spawn(Probe, "w");
    expect(again.status).toBe(ProcessStatus.RUNNING);
  });
});

describe("onChildTerminated to the spawning agent", () => {
  async function withBoss(options: ConstructorParameters<typeof DynamicSupervisor>[1] = {}) {
    const h = await running(options);
    const boss = await h.dyn.spawn(Spawner, "boss");
    const ask = async (payload: JsonObject) => (await h.runtime.ask("boss", payload)).payload;
    return { ...h, boss, ask };
  }

  it('is told "despawned" when it despawns its child', async () => {
    const { boss, ask, runtime } = await withBoss();
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
    const kid = runtime.getAgent("kid") as Probe;
    expect(kid.status).toBe(ProcessStatus.RUNNING);
    expect(await ask({ op: "despawn", name: "kid" })).toEqual({ ok: true });
    await waitUntil(() => boss.terminated.length === 1, "the notification");
    expect(boss.terminated).toEqual([{ name: "kid", reason: "despawned" }]);
    expect(kid.status).toBe(ProcessStatus.STOPPED);
    expect(runtime.getAgent("kid")).toBeUndefined();
  });

  it('is told "despawned" when someone else stops its child', async () => {
    const { boss, ask, dyn } = await withBoss();
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
    await dyn.stop("kid", { drain: "all" });
    await waitUntil(() => boss.terminated.length === 1, "the notification");
    expect(boss.terminated).toEqual([{ name: "kid", reason: "despawned" }]);
  });

  it('is told "restarts_exhausted" when its child is removed after too many crashes', async () => {
    const { boss, ask, runtime } = await withBoss({ maxRestarts: 1 });
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
    const kid = runtime.getAgent("kid") as Probe;
    await runtime.send("kid", { op: "crash" });
    await waitUntil(() => kid.incarnation === 2 && kid.status === ProcessStatus.RUNNING, "the restart");
    await turns(10);
    expect(boss.terminated).toEqual([]);
    await runtime.send("kid", { op: "crash" });
    await waitUntil(() => boss.terminated.length === 1, "the notification");
    expect(boss.terminated).toEqual([{ name: "kid", reason: "restarts_exhausted" }]);
    expect(runtime.getAgent("kid")).toBeUndefined();
  });

  for (const [how, payload, type] of [
    ["ErrorAction.STOP", { op: "exit" }, "message"],
    ["civitas.eval.halt", {}, "civitas.eval.halt"],
  ] as const) {
    it(`is told "clean_exit" when its child exits normally (${how})`, async () => {
      const { boss, ask, runtime } = await withBoss();
      expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
      await runtime.send("kid", payload, { type });
      await waitUntil(() => boss.terminated.length === 1, "the notification");
      expect(boss.terminated).toEqual([{ name: "kid", reason: "clean_exit" }]);
      expect(runtime.getAgent("kid")).toBeUndefined();
    });
  }

  it("only the spawner is told, and a despawned name can be spawned again by it", async () => {
    const { boss, ask, dyn, runtime } = await withBoss();
    const bystander = await dyn.spawn(Spawner, "bystander");
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: false, code: "DUPLICATE_NAME" });
    expect(await ask({ op: "despawn", name: "kid" })).toEqual({ ok: true });
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
    expect(await ask({ op: "stop", name: "kid" })).toEqual({ ok: true });
    await waitUntil(() => boss.terminated.length === 2, "both notifications");
    await turns(10);
    expect(boss.terminated).toEqual([
      { name: "kid", reason: "despawned" },
      { name: "kid", reason: "despawned" },
    ]);
    expect(bystander.terminated).toEqual([]);
    expect(runtime.getAgent("kid")).toBeUndefined();
  });

  it('two despawns of the same child in flight together remove it once and report "despawned" once', async () => {
    const { boss, ask, dyn, runtime } = await withBoss();
    expect(await ask({ op: "spawn", name: "kid" })).toEqual({ ok: true });
    const kid = runtime.getAgent("kid") as Probe;
    await Promise.all([dyn.despawn("kid"), dyn.despawn("kid"), dyn.stop("kid", { drain: "all" })]);
    await waitUntil(() => boss.terminated.length === 1, "the notification");
    await turns(10);
    expect(boss.terminated).toEqual([{ name: "kid", reason: "despawned" }]);
    expect(kid.status).toBe(ProcessStatus.STOPPED);
    expect(runtime.getAgent("kid")).toBeUndefined();
    await expect(dyn.despawn("kid")).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
  });

  it("an agent spawned directly on the supervisor (no spawner) produces no notification", async () => {
    const { boss, dyn } = await withBoss();
    await dyn.spawn(Probe, "orphan");
    await dyn.despawn("orphan");
    await turns(10);
    expect(boss.terminated).toEqual([]);
  });

  it("spawn, despawn and stop from an agent under a plain Supervisor reject with NO_DYNAMIC_SUPERVISOR", async () => {
    const lonely = new Spawner("lonely");
    const { runtime } = harness(new Supervisor("root", { children: [lonely, new DynamicSupervisor("dyn")] }));
    await runtime.start();
    expect((await runtime.ask("lonely", { op: "spawn", name: "kid" })).payload).toEqual({ ok: false, code: "NO_DYNAMIC_SUPERVISOR" });
    await expect(lonely.spawn(Probe, "kid")).rejects.toMatchObject({ code: "NO_DYNAMIC_SUPERVISOR", agent: "lonely" });
    await expect(lonely.despawn("kid")).rejects.toMatchObject({ code: "NO_DYNAMIC_SUPERVISOR" });
    await expect(lonely.stop("kid")).rejects.toMatchObject({ code: "NO_DYNAMIC_SUPERVISOR" });
    expect(runtime.getAgent("kid")).toBeUndefined();
  });
});
