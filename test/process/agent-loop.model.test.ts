/**
 * Model-based test of ONE agent's message loop under a DynamicSupervisor.
 *
 * A `Scripted` agent ("w", mailboxSize 4, maxRetries 2) is spawned under a
 * DynamicSupervisor (maxRestarts 2 within 100 ms, CONSTANT backoff of 10 ms)
 * on a TestClock. Every message carries a scripted fate (ok / skip /
 * retry-once / retry-always / escalate / stop) and may hold in `handle()` on
 * a gate (on every attempt) until a later `Release` command opens it.
 * Commands:
 *
 * - `Send`: a batch of 1-3 messages, sent in one go (the loop sees a
 *   backlog) or spaced (each handled before the next is sent); with the
 *   small mailbox, sends wait for room (backpressure) across commands;
 * - `Release`: the held handler returns (and its fate applies);
 * - `Stop`: `DynamicSupervisor.stop(name, { drain: "current" | "all" })`,
 *   optionally followed by a respawn of the name: while a handler is held
 *   (the stop stays pending across commands), while the agent waits out a
 *   restart backoff, while it is already stopping (joins the removal) or
 *   once it is gone (AGENT_NOT_FOUND); also with a short `timeoutMs`, which
 *   an `Advance` makes the stop give up on a held handler;
 * - `ReleaseAbandoned`: a handler a timed-out stop gave up on returns (its
 *   result, failure included, must be dropped);
 * - `Burst`: a batch sent and a stop asked for in the same tick (the stop
 *   races the loop's wake-up), optionally followed by a respawn;
 * - `Spawn`: respawns the name (DUPLICATE_NAME while the old one is there);
 * - `CrashRestart`: an escalating message, then one backoff step;
 * - `Advance`: moves the clock in backoff steps (restarts after a crash, a
 *   stop's deadline, or past the restart window).
 *
 * The model (SPEC §3, §4, §6; docs/supervision.md "When a message fails",
 * "How children end", "Stopping with a drain", "shutdownTimeoutMs";
 * docs/messaging.md "Mailboxes") predicts, after every command once the
 * runtime is quiet: the exact sequence of handle() calls (instance, message,
 * attempt), the held handlers, the queued messages (order and attempts), the
 * outcome of every send, stop and spawn (pending / ok / error code), the
 * status transitions of every instance, incarnation, registration and
 * restart timer. Business messages are FIFO; a full lane makes sends wait,
 * first come first served; RETRY re-enqueues at the back with attempt+1 up to
 * maxRetries, then crashes; SKIP drops; STOP is a clean exit (the child is
 * removed: waiting sends fail with MAILBOX_CLOSED, later ones with
 * AGENT_NOT_FOUND); ESCALATE crashes and the supervisor restarts the child
 * after its backoff, mailbox kept, until the child exceeds its restart
 * intensity (then it is removed); a drain "all" handles exactly the business
 * messages queued when the stop began (a retry again at once, before the
 * rest; STOP, ESCALATE or an exhausted retry end the drain), a drain
 * "current" only the message in flight. Never two handlers of one agent at
 * once; only legal transitions.
 *
 * Two choices the docs leave open are pinned to what the runtime does: a
 * stop of a child that waits out a restart backoff (CRASHED) drains nothing,
 * whatever `drain` says (draining would mean restarting it); and a RETRY past
 * maxRetries during a drain ends the drain, as a crash would.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  ErrorAction,
  isLegalTransition,
  ProcessStatus,
  Runtime,
  silentLogger,
  Supervisor,
  type Message,
  type SpawnOptions,
} from "../../src/index.js";
import { TestClock } from "../../src/entries/testing.js";
import { queuedBusiness } from "../../src/mailbox/mailbox-internals.js";
import { gate, turns, waitUntil } from "../support/agents.js";
import { track, type Tracked } from "../support/outcome.js";
import { checkAgainstModel, differences, outcomeOf, settleAndCompare as settleModel } from "../support/model-run.js";

const NAME = "w";
const MAILBOX = 4;
const MAX_RETRIES = 2;
const MAX_RESTARTS = 2;
const WINDOW_MS = 100;
const BACKOFF_MS = 10;
/** Far beyond any clock advance of a run: a held handler never times a stop out. */
const SHUTDOWN_MS = 3_600_000;
/** A stop's own `timeoutMs`, shorter than one clock step. */
const STOP_TIMEOUT_MS = 5;
const SPAWN_OPTIONS: SpawnOptions = { mailboxSize: MAILBOX, maxRetries: MAX_RETRIES, shutdownTimeoutMs: SHUTDOWN_MS };

type Fate = "ok" | "skip" | "retry-once" | "retry-always" | "escalate" | "stop";
type Action = ErrorAction | undefined;

/** What `onError` answers for `fate` at `attempt` (`undefined`: handle() succeeds). */
function actionOf(fate: Fate, attempt: number): Action {
  switch (fate) {
    case "ok":
      return undefined;
    case "skip":
      return ErrorAction.SKIP;
    case "retry-once":
      return attempt === 0 ? ErrorAction.RETRY : undefined;
    case "retry-always":
      return ErrorAction.RETRY;
    case "escalate":
      return ErrorAction.ESCALATE;
    case "stop":
      return ErrorAction.STOP;
  }
}

// ---- the agent ---------------------------------------------------------------

/** Shared by every instance of the name: what the test sees of the loop. */
interface Recorder {
  /** Every handle() call, `${instance}:${id}@${attempt}`, in call order. */
  readonly calls: string[];
  /** handle() calls running now, per instance. */
  readonly active: Map<number, number>;
  /** Times handle() was entered while another call of the same instance was running. */
  overlaps: number;
  /** The handlers blocked on their gates now (the agent's own, and ones a timed-out stop gave up on), by key. */
  readonly held: Map<string, () => void>;
  /** Set for the teardown: nothing holds any more. */
  noHold: boolean;
}

class ScriptedFailure extends Error {
  constructor(readonly action: ErrorAction) {
    super(`scripted failure: ${action}`);
  }
}

class Scripted extends AgentProcess {
  constructor(
    name: string,
    options: SpawnOptions | undefined,
    readonly rec: Recorder,
    readonly instance: number,
  ) {
    super(name, options);
  }

  override async handle(message: Message): Promise<void> {
    const { id, fate, hold } = message.payload as { id: number; fate: Fate; hold: boolean };
    const rec = this.rec;
    const active = (rec.active.get(this.instance) ?? 0) + 1;
    rec.active.set(this.instance, active);
    if (active > 1) rec.overlaps++;
    const key = `${this.instance}:${id}@${message.attempt}`;
    rec.calls.push(key);
    try {
      await Promise.resolve();
      if (hold && !rec.noHold) {
        const g = gate();
        rec.held.set(key, () => g.open());
        await g.promise;
      }
    } finally {
      rec.active.set(this.instance, rec.active.get(this.instance)! - 1);
    }
    const action = actionOf(fate, message.attempt);
    if (action !== undefined) throw new ScriptedFailure(action);
  }

  override async onError(error: unknown): Promise<ErrorAction> {
    return error instanceof ScriptedFailure ? error.action : ErrorAction.ESCALATE;
  }
}

// ---- the model ---------------------------------------------------------------

interface Msg {
  readonly id: number;
  readonly fate: Fate;
  readonly hold: boolean;
  readonly attempt: number;
}

/** "absent": not a child (removed for good); "backoff": CRASHED, waiting out the restart delay. */
type Life = "running" | "backoff" | "stopping" | "absent";

interface ModelStop {
  drainAll: boolean;
  /** Messages at the front of the queue the drain still takes (queued when the stop began, plus retries). */
  remaining: number;
  /** The stop calls waiting for this removal. */
  readonly ops: number[];
  /** When the stop gives up on the handler in flight (its `timeoutMs`), if it has one. */
  readonly deadline: number | undefined;
}

interface Model {
  now: number;
  life: Life;
  /** Status of the current (latest) instance. */
  status: ProcessStatus;
  /** Instances spawned so far; the current one is the last. */
  instance: number;
  incarnation: number;
  /** The business lane, oldest first. */
  queue: Msg[];
  /** Sends waiting for room, oldest first. */
  putters: Array<{ op: number; msg: Msg }>;
  held: Msg | undefined;
  /** Keys of handlers still held that a timed-out stop gave up on (their instance is gone). */
  readonly abandoned: string[];
  dueAt: number;
  /** Restart times recorded by the child's restart intensity. */
  restarts: number[];
  stop: ModelStop | undefined;
  readonly calls: string[];
  readonly transitions: string[];
  /** What every send / stop / spawn started so far must have come to: "pending", "ok" or an error code. */
  readonly outcomes: Map<number, string>;
  nextId: number;
  nextOp: number;
}

const keyOf = (m: Model, msg: Msg): string => `${m.instance}:${msg.id}@${msg.attempt}`;
const textOf = (msg: Msg): string => `${msg.id}@${msg.attempt}`;

function transition(m: Model, to: ProcessStatus): void {
  m.transitions.push(`${m.instance}:${m.status}>${to}`);
  m.status = to;
}

/** A waiting send gets in (docs/messaging.md: puts wait for room, first come first served). */
function admit(m: Model): boolean {
  const putter = m.putters.shift();
  if (putter === undefined) return false;
  m.queue.push(putter.msg);
  m.outcomes.set(putter.op, "ok");
  return true;
}

function put(m: Model, op: number, msg: Msg): void {
  while (m.queue.length < MAILBOX && admit(m)) {
    // the room goes to sends that waited first
  }
  if (m.queue.length >= MAILBOX || m.putters.length > 0) {
    m.putters.push({ op, msg });
    m.outcomes.set(op, "pending");
    return;
  }
  m.queue.push(msg);
  m.outcomes.set(op, "ok");
}

/** The loop takes the oldest business message; the room it frees goes to the oldest waiting send. */
function take(m: Model): Msg | undefined {
  for (;;) {
    const msg = m.queue.shift();
    if (msg === undefined) {
      if (!admit(m)) return undefined;
      continue;
    }
    if (m.queue.length < MAILBOX) admit(m);
    return msg;
  }
}

/** The child is gone for good: its mailbox closes (waiting sends fail), its name is freed. */
function removeChild(m: Model): void {
  m.life = "absent";
  m.queue = [];
  for (const p of m.putters) m.outcomes.set(p.op, "MAILBOX_CLOSED");
  m.putters = [];
  m.held = undefined;
  m.stop = undefined;
}

function crash(m: Model): void {
  transition(m, ProcessStatus.CRASHED);
  m.restarts = m.restarts.filter((t) => m.now - t < WINDOW_MS);
  m.restarts.push(m.now);
  if (m.restarts.length > MAX_RESTARTS) {
    removeChild(m); // restarts_exhausted
    return;
  }
  m.life = "backoff";
  m.dueAt = m.now + BACKOFF_MS;
}

/** A handler returned while RUNNING: SPEC §4 ErrorAction. */
function afterRunning(m: Model, msg: Msg): void {
  const action = actionOf(msg.fate, msg.attempt);
  if (action === undefined || action === ErrorAction.SKIP) return;
  if (action === ErrorAction.RETRY && msg.attempt < MAX_RETRIES) {
    m.queue.push({ ...msg, attempt: msg.attempt + 1 }); // to the back, past the capacity if need be
    return;
  }
  if (action === ErrorAction.STOP) {
    transition(m, ProcessStatus.STOPPING);
    transition(m, ProcessStatus.STOPPED);
    removeChild(m); // clean_exit
    return;
  }
  crash(m); // ESCALATE, or a RETRY past maxRetries
}

/** A handler returned while STOPPING (docs/supervision.md "Stopping with a drain"). */
function afterStopping(m: Model, msg: Msg): void {
  const stop = m.stop!;
  const action = actionOf(msg.fate, msg.attempt);
  if (action === undefined || action === ErrorAction.SKIP) return;
  if (action === ErrorAction.RETRY && msg.attempt < MAX_RETRIES) {
    const retry = { ...msg, attempt: msg.attempt + 1 };
    if (stop.drainAll) {
      m.queue.unshift(retry); // handled again at once, before the rest of the queue
      stop.remaining++;
    } else {
      m.queue.push(retry); // left in the mailbox, which the removal closes
    }
    return;
  }
  // STOP, ESCALATE or a RETRY past maxRetries (a crash): on its way out the agent cannot crash; the drain ends.
  stop.drainAll = false;
}

function endStop(m: Model): void {
  const stop = m.stop!;
  transition(m, ProcessStatus.STOPPED);
  for (const op of stop.ops) m.outcomes.set(op, "ok");
  removeChild(m); // despawned
}

/** Calls handle() for `msg`; true when it holds on its gate. */
function call(m: Model, msg: Msg): boolean {
  m.calls.push(keyOf(m, msg));
  if (msg.hold) {
    m.held = msg;
    return true;
  }
  return false;
}

/** Runs the loop until it is quiet: idle, held, crashed, or gone. */
function pump(m: Model): void {
  while (m.held === undefined) {
    if (m.life === "running") {
      const msg = take(m);
      if (msg === undefined) return;
      if (call(m, msg)) return;
      afterRunning(m, msg);
    } else if (m.life === "stopping") {
      const stop = m.stop!;
      if (!stop.drainAll || stop.remaining === 0) {
        endStop(m);
        return;
      }
      const msg = take(m)!;
      stop.remaining--;
      if (call(m, msg)) return;
      afterStopping(m, msg);
    } else {
      return;
    }
  }
}

function release(m: Model): void {
  const msg = m.held!;
  m.held = undefined;
  if (m.life === "running") afterRunning(m, msg);
  else afterStopping(m, msg);
  pump(m);
}

function modelSpawn(m: Model): string {
  if (m.life !== "absent") return "DUPLICATE_NAME";
  m.instance++;
  m.incarnation = 1;
  m.status = ProcessStatus.INITIALIZING;
  transition(m, ProcessStatus.RUNNING);
  m.life = "running";
  m.queue = [];
  m.putters = [];
  m.restarts = [];
  return "ok";
}

/** `DynamicSupervisor.stop`; `inFlight`: a message the loop had taken (handle() called, not returned) when the stop began. */
function modelStop(m: Model, op: number, drain: "current" | "all", inFlight?: Msg, timeoutMs?: number): void {
  switch (m.life) {
    case "absent":
      m.outcomes.set(op, "AGENT_NOT_FOUND");
      return;
    case "backoff":
      // CRASHED: nothing runs that could drain; the pending restart is cancelled.
      removeChild(m);
      m.outcomes.set(op, "ok");
      return;
    case "stopping":
      m.stop!.ops.push(op); // joins the removal in flight
      m.outcomes.set(op, "pending");
      return;
    case "running":
      transition(m, ProcessStatus.STOPPING);
      m.life = "stopping";
      m.stop = { drainAll: drain === "all", remaining: m.queue.length, ops: [op], deadline: timeoutMs === undefined ? undefined : m.now + timeoutMs };
      m.outcomes.set(op, "pending");
      if (inFlight !== undefined) {
        if (inFlight.hold) m.held = inFlight;
        else afterStopping(m, inFlight);
      }
      pump(m);
      return;
  }
}

/** One backoff step of the clock: a stop past its deadline gives up on its handler; a restart that is due happens. */
function modelTick(m: Model): void {
  m.now += BACKOFF_MS;
  const deadline = m.stop?.deadline;
  if (m.life === "stopping" && deadline !== undefined && deadline <= m.now) {
    // docs/supervision.md "shutdownTimeoutMs": the stop goes on without the handler, whose result is dropped.
    if (m.held !== undefined) m.abandoned.push(keyOf(m, m.held));
    m.held = undefined;
    endStop(m);
  }
  if (m.life === "backoff" && m.dueAt <= m.now) {
    transition(m, ProcessStatus.INITIALIZING);
    transition(m, ProcessStatus.RUNNING);
    m.incarnation++;
    m.life = "running";
    pump(m);
  }
}

// ---- the real side -------------------------------------------------------------

interface Real {
  readonly runtime: Runtime;
  readonly clock: TestClock;
  readonly dyn: DynamicSupervisor;
  readonly rec: Recorder;
  /** Every instance ever spawned under the name, in order. */
  readonly instances: Scripted[];
  readonly ops: Map<number, Tracked<unknown>>;
  /** Status changes of the name, `${instance}:${from}>${to}`. */
  readonly transitions: string[];
  readonly illegal: string[];
  /** `rec.calls.length` when the name last went STOPPING. */
  callsAtStopping: number | undefined;
}

type Cmd = fc.AsyncCommand<Model, Real>;

function spawnReal(r: Real): Promise<Scripted> {
  const factory = (name: string, options?: SpawnOptions): Scripted => {
    const agent = new Scripted(name, options, r.rec, r.instances.length + 1);
    r.instances.push(agent);
    return agent;
  };
  return r.dyn.spawn(factory, NAME, SPAWN_OPTIONS);
}

/** Differences between the runtime and the model (empty when they agree). */
function mismatches(m: Model, r: Real): string[] {
  const { out, same } = differences();
  same("handled", r.rec.calls, m.calls);
  same("held", [...r.rec.held.keys()].sort(), [...(m.held === undefined ? [] : [keyOf(m, m.held)]), ...m.abandoned].sort());
  same("transitions", r.transitions, m.transitions);
  same("instances", r.instances.length, m.instance);
  const agent = r.instances.at(-1);
  if (agent !== undefined) {
    same("status", agent.status, m.status);
    same("incarnation", agent.incarnation, m.incarnation);
    same("registered", r.runtime.getAgent(NAME) === agent, m.life !== "absent");
    same("closed", agent.mailbox.closed, m.life === "absent");
    if (m.life !== "absent") {
      same(
        "queued",
        queuedBusiness(agent.mailbox).map((q) => `${String(q.payload.id)}@${q.attempt}`),
        m.queue.map(textOf),
      );
    }
  }
  same("children", r.dyn.children.length, m.life === "absent" ? 0 : 1);
  for (const [op, want] of m.outcomes) {
    const t = r.ops.get(op);
    same(`op ${op}`, t === undefined ? "missing" : outcomeOf(t), want);
  }
  if (m.life === "backoff") same("restart due", r.clock.nextDueMs, m.dueAt);
  same("clock", r.clock.now(), m.now);
  if (r.rec.overlaps !== 0) out.push(`${r.rec.overlaps} overlapping handle() calls`);
  if (r.illegal.length > 0) out.push(`illegal transitions: ${r.illegal.join(", ")}`);
  return out;
}

/** Waits (a bounded number of event-loop turns) until the runtime matches the model, lets it run on, and checks it still does. */
async function settleAndCompare(m: Model, r: Real, extraTurns = 6): Promise<void> {
  await settleModel(() => mismatches(m, r), extraTurns);
}

// ---- commands ------------------------------------------------------------------

interface MsgSpec {
  readonly fate: Fate;
  readonly hold: boolean;
}

const specText = (s: MsgSpec): string => `${s.fate}${s.hold ? "+hold" : ""}`;

/** Sends a batch: all in one go (a backlog), or each once the previous one is done with. */
class Send implements Cmd {
  constructor(
    readonly specs: readonly MsgSpec[],
    readonly spaced: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const sendOne = (spec: MsgSpec): void => {
      const msg: Msg = { id: m.nextId++, fate: spec.fate, hold: spec.hold, attempt: 0 };
      const op = m.nextOp++;
      r.ops.set(op, track(r.runtime.send(NAME, { id: msg.id, fate: msg.fate, hold: msg.hold })));
      if (m.life === "absent") m.outcomes.set(op, "AGENT_NOT_FOUND");
      else put(m, op, msg);
    };
    if (this.spaced) {
      for (const spec of this.specs) {
        sendOne(spec);
        pump(m);
        await settleAndCompare(m, r, 2);
      }
    } else {
      for (const spec of this.specs) sendOne(spec);
      pump(m);
      await settleAndCompare(m, r);
    }
  }
  toString(): string {
    return `send${this.spaced ? " spaced" : ""}(${this.specs.map(specText).join(", ")})`;
  }
}

class Release implements Cmd {
  check(m: Readonly<Model>): boolean {
    return m.held !== undefined;
  }
  async run(m: Model, r: Real): Promise<void> {
    const key = keyOf(m, m.held!);
    const open = r.rec.held.get(key);
    expect(open, `${key} is held`).toBeDefined();
    r.rec.held.delete(key);
    open!();
    release(m);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "release";
  }
}

/** Spawns the name again (DUPLICATE_NAME while the old agent is still a child, stopping included). */
async function respawn(m: Model, r: Real): Promise<void> {
  const op = m.nextOp++;
  r.ops.set(op, track(spawnReal(r)));
  m.outcomes.set(op, modelSpawn(m));
  await settleAndCompare(m, r);
}

/** `DynamicSupervisor.stop`, then (when `respawn`) a spawn of the same name. */
class Stop implements Cmd {
  constructor(
    readonly drain: "current" | "all",
    readonly respawn: boolean,
    readonly timeoutMs?: number,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    const options = this.timeoutMs === undefined ? { drain: this.drain } : { drain: this.drain, timeoutMs: this.timeoutMs };
    r.ops.set(op, track(r.dyn.stop(NAME, options)));
    modelStop(m, op, this.drain, undefined, this.timeoutMs);
    await settleAndCompare(m, r);
    if (this.respawn) await respawn(m, r);
  }
  toString(): string {
    return `stop(drain ${this.drain}${this.timeoutMs === undefined ? "" : `, timeoutMs ${this.timeoutMs}`})${this.respawn ? ", spawn" : ""}`;
  }
}

/** Lets the oldest handler a timed-out stop gave up on return: whatever it does is dropped. */
class ReleaseAbandoned implements Cmd {
  check(m: Readonly<Model>): boolean {
    return m.abandoned.length > 0;
  }
  async run(m: Model, r: Real): Promise<void> {
    const key = m.abandoned.shift()!;
    const open = r.rec.held.get(key);
    expect(open, `${key} is held`).toBeDefined();
    r.rec.held.delete(key);
    open!();
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "release abandoned";
  }
}

/**
 * Sends a batch and asks for a stop in the same tick. With the agent idle the
 * stop races the loop's wake-up (the docs do not say who wins): where the
 * stop took effect is read off the runtime (how many of the batch had been
 * handed to handle() when the status went STOPPING: none, or the first, which
 * is then the message in flight); from there on the model decides what is
 * handled. With a handler held, nothing of the batch may have been taken.
 */
class Burst implements Cmd {
  constructor(
    readonly specs: readonly MsgSpec[],
    readonly drain: "current" | "all",
    readonly respawn: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const before = r.rec.calls.length;
    r.callsAtStopping = undefined;
    for (const spec of this.specs) {
      const msg: Msg = { id: m.nextId++, fate: spec.fate, hold: spec.hold, attempt: 0 };
      const op = m.nextOp++;
      r.ops.set(op, track(r.runtime.send(NAME, { id: msg.id, fate: msg.fate, hold: msg.hold })));
      if (m.life === "absent") m.outcomes.set(op, "AGENT_NOT_FOUND");
      else put(m, op, msg);
    }
    const op = m.nextOp++;
    r.ops.set(op, track(r.dyn.stop(NAME, { drain: this.drain })));
    let inFlight: Msg | undefined;
    if (m.life === "running") {
      await waitUntil(() => r.callsAtStopping !== undefined, "the stop to take effect", 200);
      const taken = r.callsAtStopping! - before;
      // Held: the loop is busy and takes nothing. Idle: the stop may find the first message taken, never more.
      expect(taken).toBeLessThanOrEqual(m.held === undefined ? 1 : 0);
      if (taken === 1) {
        inFlight = take(m)!;
        m.calls.push(keyOf(m, inFlight));
      }
    }
    modelStop(m, op, this.drain, inFlight);
    await settleAndCompare(m, r);
    if (this.respawn) await respawn(m, r);
  }
  toString(): string {
    return `burst(${this.specs.map(specText).join(", ")}; stop(drain ${this.drain}))${this.respawn ? ", spawn" : ""}`;
  }
}

class Spawn implements Cmd {
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await respawn(m, r);
  }
  toString(): string {
    return "spawn";
  }
}

/** Advances the clock in backoff-sized steps, letting the runtime settle after each. */
class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    for (let left = this.ms; left > 0; left -= BACKOFF_MS) {
      await r.clock.advance(BACKOFF_MS);
      modelTick(m);
      await settleAndCompare(m, r, 2);
    }
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
}

/** An escalating message, then one backoff step of the clock: a crash and (if still within its intensity) the restart. */
class CrashRestart implements Cmd {
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await new Send([{ fate: "escalate", hold: false }], false).run(m, r);
    await new Advance(BACKOFF_MS).run(m, r);
  }
  toString(): string {
    return "crash+restart";
  }
}

const fate = fc.constantFrom<Fate>("ok", "ok", "ok", "skip", "retry-once", "retry-always", "escalate", "stop");
const spec = fc.record({ fate, hold: fc.constantFrom(false, false, true) });
const drain = fc.constantFrom<"current" | "all">("current", "all");
const advance = fc.constantFrom(BACKOFF_MS, BACKOFF_MS, WINDOW_MS + BACKOFF_MS).map((ms) => new Advance(ms));
const send = fc.tuple(fc.array(spec, { minLength: 1, maxLength: 3 }), fc.boolean()).map(([specs, spaced]) => new Send(specs, spaced));
const commands = [
  send,
  send,
  send,
  fc.constant(new Release()),
  fc.constant(new Release()),
  fc.tuple(drain, fc.boolean()).map(([d, again]) => new Stop(d, again)),
  fc.tuple(drain, fc.boolean()).map(([d, again]) => new Stop(d, again, STOP_TIMEOUT_MS)),
  fc.constant(new ReleaseAbandoned()),
  fc.tuple(fc.array(spec, { minLength: 1, maxLength: 3 }), drain, fc.boolean()).map(([specs, d, again]) => new Burst(specs, d, again)),
  fc.constant(new Spawn()),
  fc.constant(new Spawn()),
  fc.constant(new CrashRestart()),
  advance,
  advance,
];

async function setup(): Promise<{ model: Model; real: Real }> {
  const clock = new TestClock();
  const dyn = new DynamicSupervisor("dyn", {
    maxRestarts: MAX_RESTARTS,
    restartWindowMs: WINDOW_MS,
    backoff: "CONSTANT",
    backoffBaseMs: BACKOFF_MS,
  });
  const runtime = new Runtime({ root: new Supervisor("root", { children: [dyn] }), clock, logger: silentLogger });
  const real: Real = {
    runtime,
    clock,
    dyn,
    rec: { calls: [], active: new Map(), overlaps: 0, held: new Map(), noHold: false },
    instances: [],
    ops: new Map(),
    transitions: [],
    illegal: [],
    callsAtStopping: undefined,
  };
  runtime.on("agent.status", (name, from, to) => {
    if (!isLegalTransition(from, to)) real.illegal.push(`${name}: ${from} -> ${to}`);
    if (name !== NAME) return;
    real.transitions.push(`${real.instances.length}:${from}>${to}`);
    if (to === ProcessStatus.STOPPING) real.callsAtStopping = real.rec.calls.length;
  });
  await runtime.start();
  const model: Model = {
    now: clock.now(),
    life: "absent",
    status: ProcessStatus.INITIALIZING,
    instance: 0,
    incarnation: 0,
    queue: [],
    putters: [],
    held: undefined,
    abandoned: [],
    dueAt: 0,
    restarts: [],
    stop: undefined,
    calls: [],
    transitions: [],
    outcomes: new Map(),
    nextId: 0,
    nextOp: 0,
  };
  const op = model.nextOp++;
  real.ops.set(op, track(spawnReal(real)));
  model.outcomes.set(op, modelSpawn(model));
  await settleAndCompare(model, real);
  return { model, real };
}

/** Stops the runtime, moving the test clock on until the stop is done (a handler may still hold). */
async function stopRuntime(r: Real): Promise<void> {
  r.rec.noHold = true;
  for (const open of r.rec.held.values()) open();
  r.rec.held.clear();
  let done = false;
  const stopping = r.runtime.stop().finally(() => (done = true));
  for (let i = 0; i < 50 && !done; i++) await r.clock.advance(SHUTDOWN_MS);
  await stopping;
}

/** The end of a run: release what still holds (checking the model on the way), then stop the runtime. */
async function finish(m: Model, r: Real): Promise<void> {
  while (m.held !== undefined) await new Release().run(m, r);
  await stopRuntime(r);
  await turns(3);
  expect([...r.ops].filter(([, t]) => t.state === "pending").map(([op]) => op)).toEqual([]);
  expect(r.instances.filter((a) => a.status === ProcessStatus.RUNNING)).toHaveLength(0);
  expect(r.rec.overlaps).toBe(0);
  expect(r.illegal).toEqual([]);
}

describe("agent message loop under a DynamicSupervisor (model-based)", () => {
  it("matches the model through sends, held handlers, releases, drains, respawns, crashes and restarts", async () => {
    await checkAgainstModel({ commands, maxCommands: 50, numRuns: 200, setup, check: finish, cleanUp: stopRuntime });
  });
});
