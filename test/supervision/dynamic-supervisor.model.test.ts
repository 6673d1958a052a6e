/**
 * Model-based test of the DynamicSupervisor: random command sequences drive
 * a real runtime (on a TestClock, so backoff is deterministic) holding a
 * DynamicSupervisor with a small `maxChildren` and `maxRestarts`, and a
 * `Spawner` child ("boss") that spawns siblings with `this.spawn`. Commands:
 * spawns (from outside and by the boss, also racing each other), sends,
 * crashes (ESCALATE), normal exits (`civitas.eval.halt`, `ErrorAction.STOP`),
 * despawns (outside and by the boss), `stop({ drain: "all" })`, despawns
 * racing each other or a crash, and clock advances past the backoff.
 *
 * A small model (which children exist, running or waiting out a backoff, their
 * restart times and incarnations, what the boss must have been told) is
 * compared with the runtime after every command settles; the run ends with
 * a late clock advance and `runtime.stop()`.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { DynamicSupervisor, ProcessStatus, Supervisor, type Runtime } from "../../src/index.js";
import type { JsonObject } from "../../src/message/json.js";
import type { ChildTerminationReason } from "../../src/process/dynamic-host.js";
import type { TestClock } from "../../src/testing/test-clock.js";
import { Probe, Spawner, harness, stopAll, turns } from "../support/agents.js";
import { track, type Tracked } from "../support/outcome.js";
import { checkAgainstModel, settleAndCompare as settleModel } from "../support/model-run.js";

afterEach(stopAll);

const MAX_CHILDREN = 4; // the boss takes one place
const MAX_RESTARTS = 1;
const WINDOW_MS = 1000;
const BACKOFF_MS = 100;
const NAMES = ["k0", "k1", "k2", "k3"] as const;
type Name = (typeof NAMES)[number];

// ---- the model ---------------------------------------------------------------

interface ModelKid {
  readonly by: "boss" | "outside";
  state: "running" | "backoff";
  dueAt: number;
  incarnation: number;
  /** Restart times recorded by the child's restart intensity. */
  restarts: number[];
}

interface Model {
  now: number;
  /** The children other than the boss, in spawn order. */
  readonly kids: Map<Name, ModelKid>;
  /** What the boss must have been told, in order. */
  readonly reports: Array<{ name: string; reason: ChildTerminationReason }>;
}

interface Real {
  readonly runtime: Runtime;
  readonly clock: TestClock;
  readonly dyn: DynamicSupervisor;
  readonly boss: Spawner;
  /** The current instance of each child name. */
  readonly current: Map<Name, Probe>;
  /** Every instance removed for good. */
  readonly removed: Set<Probe>;
  /** Every agent ever created, with the `work` seqs sent to it. */
  readonly sent: Map<Probe, number[]>;
  /** Every promise a command started. */
  readonly promises: Array<Tracked<unknown>>;
  nextSeq: number;
}

type Cmd = fc.AsyncCommand<Model, Real>;

function capacityLeft(m: Model): number {
  return MAX_CHILDREN - 1 - m.kids.size;
}

/** The error code a spawn of `name` must reject with, or undefined when it must succeed. */
function spawnError(m: Model, name: Name): string | undefined {
  if (capacityLeft(m) <= 0) return "MAX_CHILDREN";
  if (m.kids.has(name)) return "DUPLICATE_NAME";
  return undefined;
}

function modelSpawn(m: Model, name: Name, by: ModelKid["by"]): void {
  m.kids.set(name, { by, state: "running", dueAt: 0, incarnation: 1, restarts: [] });
}

function modelRemove(m: Model, name: Name, reason: ChildTerminationReason): void {
  const kid = m.kids.get(name);
  if (kid === undefined) return;
  m.kids.delete(name);
  if (kid.by === "boss") m.reports.push({ name, reason });
}

/** A crash of a running child: restarted after the backoff, or removed once it exceeds its intensity. */
function modelCrash(m: Model, name: Name): void {
  const kid = m.kids.get(name)!;
  kid.restarts = kid.restarts.filter((t) => m.now - t < WINDOW_MS);
  kid.restarts.push(m.now);
  if (kid.restarts.length > MAX_RESTARTS) {
    modelRemove(m, name, "restarts_exhausted");
    return;
  }
  kid.state = "backoff";
  kid.dueAt = m.now + BACKOFF_MS;
}

function modelAdvance(m: Model, ms: number): void {
  m.now += ms;
  for (const kid of m.kids.values()) {
    if (kid.state === "backoff" && kid.dueAt <= m.now) {
      kid.state = "running";
      kid.incarnation++;
    }
  }
}

function isRunning(m: Model, name: Name): boolean {
  return m.kids.get(name)?.state === "running";
}

// ---- the real side -------------------------------------------------------------

function started<T>(r: Real, promise: Promise<T>): Tracked<T> {
  const tracked = track(promise);
  r.promises.push(tracked);
  return tracked;
}

function codeOf(error: unknown): string {
  return error instanceof CivitasError ? error.code : String(error);
}

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    return codeOf(error);
  }
}

async function askBoss(r: Real, payload: JsonObject): Promise<string> {
  const reply = await started(r, r.runtime.ask("boss", payload)).promise;
  const { ok, code } = reply.payload;
  return ok === true ? "ok" : String(code);
}

/** Registers the instance now holding `name` (after a successful spawn). */
function adopt(r: Real, name: Name): void {
  const agent = r.runtime.getAgent(name);
  expect(agent).toBeInstanceOf(Probe);
  const probe = agent as Probe;
  r.current.set(name, probe);
  if (!r.sent.has(probe)) r.sent.set(probe, []);
}

/** Records the instances the model no longer holds as removed for good. */
function retire(m: Model, r: Real): void {
  for (const [name, probe] of r.current) {
    if (!m.kids.has(name)) {
      r.current.delete(name);
      r.removed.add(probe);
    }
  }
}

/** Differences between the runtime and the model (empty when they agree). */
function mismatches(m: Model, r: Real): string[] {
  const out: string[] = [];
  const names = r.dyn.children.map((c) => c.name);
  const want = ["boss", ...m.kids.keys()];
  if (JSON.stringify(names) !== JSON.stringify(want)) out.push(`children ${JSON.stringify(names)}, model ${JSON.stringify(want)}`);
  if (names.length > MAX_CHILDREN) out.push(`${names.length} children, more than maxChildren`);
  if (r.boss.status !== ProcessStatus.RUNNING || r.runtime.getAgent("boss") !== r.boss) out.push("the boss is not running");
  for (const name of NAMES) {
    const kid = m.kids.get(name);
    const agent = r.runtime.getAgent(name);
    if (kid === undefined) {
      if (agent !== undefined) out.push(`${name} is registered, the model has no such child`);
      continue;
    }
    const probe = r.current.get(name);
    if (agent === undefined || agent !== probe) {
      out.push(`${name} is not registered as its current instance`);
      continue;
    }
    const status = kid.state === "running" ? ProcessStatus.RUNNING : ProcessStatus.CRASHED;
    if (agent.status !== status) out.push(`${name} is ${agent.status}, model ${status}`);
    if (agent.incarnation !== kid.incarnation) out.push(`${name} incarnation ${agent.incarnation}, model ${kid.incarnation}`);
  }
  for (const probe of r.removed) {
    if (probe.status === ProcessStatus.RUNNING) out.push(`removed ${probe.name} (incarnation ${probe.incarnation}) is RUNNING`);
  }
  for (const [probe, seqs] of r.sent) {
    if (probe.overlaps !== 0) out.push(`${probe.name}: ${probe.overlaps} overlapping handle() calls`);
    if (JSON.stringify(probe.handled) !== JSON.stringify(seqs)) out.push(`${probe.name} handled ${JSON.stringify(probe.handled)}, sent ${JSON.stringify(seqs)}`);
  }
  if (JSON.stringify(r.boss.terminated) !== JSON.stringify(m.reports)) {
    out.push(`boss told ${JSON.stringify(r.boss.terminated)}, model ${JSON.stringify(m.reports)}`);
  }
  if (r.clock.now() !== m.now) out.push(`clock ${r.clock.now()}, model ${m.now}`);
  return out;
}

/** Waits until the runtime agrees with the model, lets it run on a little, and checks it still does. */
async function settleAndCompare(m: Model, r: Real): Promise<void> {
  retire(m, r);
  await settleModel(() => mismatches(m, r), 10);
}

// ---- commands ------------------------------------------------------------------

class SpawnOutside implements Cmd {
  constructor(readonly name: Name) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const want = spawnError(m, this.name);
    const got = await outcome(started(r, r.dyn.spawn(Probe, this.name)).promise);
    expect(got).toBe(want ?? "ok");
    if (want === undefined) {
      modelSpawn(m, this.name, "outside");
      adopt(r, this.name);
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `dyn.spawn(${this.name})`;
  }
}

class SpawnByBoss implements Cmd {
  constructor(readonly name: Name) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const want = spawnError(m, this.name);
    expect(await askBoss(r, { op: "spawn", name: this.name })).toBe(want ?? "ok");
    if (want === undefined) {
      modelSpawn(m, this.name, "boss");
      adopt(r, this.name);
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `boss.spawn(${this.name})`;
  }
}

/** An outside spawn and a spawn by the boss of one name at once: the outside one goes first. */
class RacingSpawns implements Cmd {
  constructor(readonly name: Name) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const wantOutside = spawnError(m, this.name);
    const outside = outcome(started(r, r.dyn.spawn(Probe, this.name)).promise);
    const byBoss = askBoss(r, { op: "spawn", name: this.name });
    const [gotOutside, gotBoss] = await Promise.all([outside, byBoss]);
    expect(gotOutside).toBe(wantOutside ?? "ok");
    if (wantOutside === undefined) {
      modelSpawn(m, this.name, "outside");
      adopt(r, this.name);
    }
    expect(gotBoss).toBe(spawnError(m, this.name));
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `race(dyn.spawn(${this.name}), boss.spawn(${this.name}))`;
  }
}

class Send implements Cmd {
  constructor(
    readonly name: Name,
    readonly count: number,
  ) {}
  check(m: Readonly<Model>): boolean {
    return isRunning(m, this.name);
  }
  async run(m: Model, r: Real): Promise<void> {
    const probe = r.current.get(this.name)!;
    for (let i = 0; i < this.count; i++) {
      const seq = r.nextSeq++;
      r.sent.get(probe)!.push(seq);
      await started(r, r.runtime.send(this.name, { op: "work", seq })).promise;
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `send(${this.name}, ×${this.count})`;
  }
}

class Crash implements Cmd {
  constructor(readonly name: Name) {}
  check(m: Readonly<Model>): boolean {
    return isRunning(m, this.name);
  }
  async run(m: Model, r: Real): Promise<void> {
    await started(r, r.runtime.send(this.name, { op: "crash" })).promise;
    modelCrash(m, this.name);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `crash(${this.name})`;
  }
}

class Exit implements Cmd {
  constructor(
    readonly name: Name,
    readonly how: "halt" | "stop-action",
  ) {}
  check(m: Readonly<Model>): boolean {
    return isRunning(m, this.name);
  }
  async run(m: Model, r: Real): Promise<void> {
    const sending = this.how === "halt" ? r.runtime.send(this.name, {}, { type: "civitas.eval.halt" }) : r.runtime.send(this.name, { op: "exit" });
    await started(r, sending).promise;
    modelRemove(m, this.name, "clean_exit");
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `exit(${this.name}, ${this.how})`;
  }
}

class Despawn implements Cmd {
  constructor(
    readonly name: Name,
    readonly how: "dyn.despawn" | "boss.despawn" | "boss.stop",
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const want = m.kids.has(this.name) ? "ok" : "AGENT_NOT_FOUND";
    const got =
      this.how === "dyn.despawn"
        ? await outcome(started(r, r.dyn.despawn(this.name)).promise)
        : await askBoss(r, { op: this.how === "boss.despawn" ? "despawn" : "stop", name: this.name });
    expect(got).toBe(want);
    modelRemove(m, this.name, "despawned");
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `${this.how}(${this.name})`;
  }
}

/** Queues `count` messages, then `stop({ drain: "all" })`: every queued message is handled first. */
class StopDrainAll implements Cmd {
  constructor(
    readonly name: Name,
    readonly count: number,
  ) {}
  check(m: Readonly<Model>): boolean {
    return m.kids.has(this.name);
  }
  async run(m: Model, r: Real): Promise<void> {
    const probe = r.current.get(this.name)!;
    const running = isRunning(m, this.name);
    if (running) {
      for (let i = 0; i < this.count; i++) {
        const seq = r.nextSeq++;
        r.sent.get(probe)!.push(seq);
        await started(r, r.runtime.send(this.name, { op: "work", seq })).promise;
      }
    }
    expect(await outcome(started(r, r.dyn.stop(this.name, { drain: "all" })).promise)).toBe("ok");
    expect(probe.handled).toEqual(r.sent.get(probe));
    modelRemove(m, this.name, "despawned");
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `stop(${this.name}, drain all, after ×${this.count})`;
  }
}

/** Removals of one child racing each other: all resolve, the spawner hears once. */
class RacingDespawns implements Cmd {
  constructor(readonly name: Name) {}
  check(m: Readonly<Model>): boolean {
    return m.kids.has(this.name);
  }
  async run(m: Model, r: Real): Promise<void> {
    const results = await Promise.all([
      outcome(started(r, r.dyn.despawn(this.name)).promise),
      outcome(started(r, r.dyn.stop(this.name, { drain: "all" })).promise),
      askBoss(r, { op: "despawn", name: this.name }),
      outcome(started(r, r.dyn.despawn(this.name)).promise),
    ]);
    expect(results[0]).toBe("ok");
    expect(results[1]).toBe("ok");
    expect(results[3]).toBe("ok");
    // The boss's request arrives later: it joins the removal or finds the child gone.
    expect(["ok", "AGENT_NOT_FOUND"]).toContain(results[2]);
    modelRemove(m, this.name, "despawned");
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `race(despawn ×3, stop drain all)(${this.name})`;
  }
}

/** A crash message and a despawn at once: the despawn wins, the child is never restarted. */
class CrashWhileDespawn implements Cmd {
  constructor(readonly name: Name) {}
  check(m: Readonly<Model>): boolean {
    return isRunning(m, this.name);
  }
  async run(m: Model, r: Real): Promise<void> {
    const sending = started(r, r.runtime.send(this.name, { op: "crash" })).promise;
    const despawning = started(r, r.dyn.despawn(this.name)).promise;
    expect(await outcome(sending)).toMatch(/^(ok|MAILBOX_CLOSED|AGENT_NOT_FOUND)$/);
    expect(await outcome(despawning)).toBe("ok");
    modelRemove(m, this.name, "despawned");
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `race(crash, despawn)(${this.name})`;
  }
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await r.clock.advance(this.ms);
    modelAdvance(m, this.ms);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
}

const name = fc.constantFrom(...NAMES);
const commands = [
  name.map((n) => new SpawnOutside(n)),
  name.map((n) => new SpawnByBoss(n)),
  name.map((n) => new SpawnByBoss(n)),
  name.map((n) => new RacingSpawns(n)),
  fc.tuple(name, fc.integer({ min: 1, max: 3 })).map(([n, c]) => new Send(n, c)),
  name.map((n) => new Crash(n)),
  name.map((n) => new Crash(n)),
  name.map((n) => new Crash(n)),
  fc.tuple(name, fc.constantFrom("halt" as const, "stop-action" as const)).map(([n, h]) => new Exit(n, h)),
  fc.tuple(name, fc.constantFrom("dyn.despawn" as const, "boss.despawn" as const, "boss.stop" as const)).map(([n, h]) => new Despawn(n, h)),
  fc.tuple(name, fc.integer({ min: 0, max: 3 })).map(([n, c]) => new StopDrainAll(n, c)),
  name.map((n) => new RacingDespawns(n)),
  name.map((n) => new CrashWhileDespawn(n)),
  fc.constantFrom(40, BACKOFF_MS, 250, WINDOW_MS + 100).map((ms) => new Advance(ms)),
  fc.constantFrom(40, BACKOFF_MS, 250, WINDOW_MS + 100).map((ms) => new Advance(ms)),
];

async function setup(): Promise<{ model: Model; real: Real }> {
  const dyn = new DynamicSupervisor("dyn", {
    maxChildren: MAX_CHILDREN,
    maxRestarts: MAX_RESTARTS,
    restartWindowMs: WINDOW_MS,
    backoff: "CONSTANT",
    backoffBaseMs: BACKOFF_MS,
  });
  const { runtime, clock } = harness(new Supervisor("root", { children: [dyn] }));
  await runtime.start();
  const boss = await dyn.spawn(Spawner, "boss");
  const model: Model = { now: clock.now(), kids: new Map(), reports: [] };
  const real: Real = { runtime, clock, dyn, boss, current: new Map(), removed: new Set(), sent: new Map([[boss, []]]), promises: [], nextSeq: 0 };
  return { model, real };
}

/** The end of a run: a late advance (no removed child may come back), then runtime.stop(). */
async function finish(m: Model, r: Real): Promise<void> {
  await r.clock.advance(WINDOW_MS + BACKOFF_MS);
  modelAdvance(m, WINDOW_MS + BACKOFF_MS);
  await settleAndCompare(m, r);
  const everyone = [r.boss, ...r.sent.keys()];
  let done = false;
  const stopping = started(r, r.runtime.stop()).promise.finally(() => (done = true));
  for (let i = 0; i < 20 && !done; i++) await r.clock.advance(60_000);
  await stopping;
  await turns(5);
  expect(r.promises.filter((p) => p.state === "pending")).toHaveLength(0);
  expect(everyone.filter((a) => a.status === ProcessStatus.RUNNING).map((a) => a.name)).toEqual([]);
  expect(r.dyn.status).toBe(ProcessStatus.STOPPED);
  // Spawners are not told when the runtime stops.
  expect(r.boss.terminated).toEqual(m.reports);
  expect([...r.sent].filter(([p]) => p.overlaps !== 0).map(([p]) => p.name)).toEqual([]);
}

describe("DynamicSupervisor (model-based)", () => {
  it("matches the model through random spawns, crashes, exits, despawns, drains and clock advances", async () => {
    await checkAgainstModel({ commands, maxCommands: 50, numRuns: 200, setup, check: finish, cleanUp: (real) => real.runtime.stop() });
  });
});
