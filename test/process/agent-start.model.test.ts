/**
 * Model-based test of ONE agent's start and stop phases, with suspend and
 * resume racing them (the message loop itself is agent-loop.model.test.ts).
 *
 * A `Starter` agent ("w", shutdownTimeoutMs 20 ms = two clock steps) is
 * spawned under a DynamicSupervisor (CONSTANT backoff of 10 ms, an intensity
 * it never exceeds), itself a child of a ONE_FOR_ALL root beside a sibling
 * that crashes on demand, on a TestClock, with an in-memory store (whose reads
 * take a few microtask turns) and an audit sink. Its `onStart` follows a
 * script set before each start: return at once, throw at once, or hold on a
 * gate until `ReleaseStart` lets it return or throw. Commands:
 *
 * - `Spawn`: spawns the name (DUPLICATE_NAME while it is a child,
 *   RUNTIME_STOPPED while its supervisor is being stopped), the store
 *   optionally seeded first with a pause stored before it was announced
 *   (`announced: false`: the start announces it, onSuspend + `agent.suspend`
 *   receipt; that onSuspend may hold, and it confirms the pause with
 *   `this.suspend(sameReason)`); with a stop asked for in the same tick,
 *   before `onStart` has begun;
 * - `ReleaseStart`: the held `onStart` returns, or throws;
 * - `ReleaseAnnounce`: the held `onSuspend` of a restored pause returns;
 * - `Send`: a business message (ok or escalating, optionally held in `handle()`);
 * - `Release`: the held handler returns;
 * - `Stop`: `DynamicSupervisor.stop(name, { drain, timeoutMs? })` before and
 *   during `onStart` (of a spawn or of a restart), during a restored pause's
 *   announcement, during a held handler, during a restart backoff, during
 *   another stop (joins it), once gone (AGENT_NOT_FOUND);
 * - `CrashRestart`: an escalating message with the next start's script, then
 *   one clock step: the restart after the backoff runs that script;
 * - `ParentRestart`: the sibling crashes; the root stops the DynamicSupervisor
 *   (which stops the child, whatever phase it is in) and starts it again,
 *   empty: a restart during a stop, a stop during a restart;
 * - `Suspend` / `Resume`: `runtime.suspend(name, reason)` /
 *   `runtime.resume(name, approver)`, at any of these points;
 * - `Advance`: one or two clock steps (10 ms each): a restart that is due, a
 *   stop's deadline (`timeoutMs` 5 ms, else shutdownTimeoutMs), the deadline
 *   a stop gives a held `onStart` (shutdownTimeoutMs, whatever the stop's own
 *   `timeoutMs`), onSuspend's deadline;
 * - `ReleaseAbandoned`: an `onStart`, handler or onSuspend the runtime gave
 *   up on returns (nothing of it may show).
 * Every run ends with `runtime.stop()` with whatever holds still held; it
 * must finish within 20 clock steps and leave no call pending.
 *
 * The model (SPEC §4, §5, §6, §11.7; docs/supervision.md "Agent statuses",
 * "How children end", "Dynamic supervisors", "Stopping with a drain",
 * "shutdownTimeoutMs"; docs/durable-suspension.md "Suspending", "The marker",
 * "Resuming", "Supervision and the marker's lifecycle") predicts after every
 * command, once the runtime is quiet: the exact sequence of hook and handle()
 * calls, the audit receipts (`agent.suspend`, `agent.suspend.update`,
 * `agent.resume`), the status transitions, what is held, what is queued, the
 * pause, the outcome of every spawn, stop, send, suspend and resume, the
 * registration, and that the agent's own code (onStart, handle) never runs
 * twice at once. A stop during `onStart` waits for it (bounded by
 * shutdownTimeoutMs, not by the stop's own timeoutMs), then stops without
 * taking anything queued first (with drain "current"); past the bound, or
 * when onStart throws, the start fails (START_FAILED: a spawn rejects with
 * it, a restart counts as a crash), the agent ends CRASHED after onStop,
 * and a removal goes on. A restored pause is announced before the agent takes
 * anything; a resume sent while a spawn starts lifts it once announced; a
 * resume with a pause owing its receipt records that receipt first;
 * runtime.suspend and runtime.resume act in the order sent, at the loop's
 * boundaries.
 *
 * Choices the docs leave open, pinned to what the runtime does today:
 * - a stop during a restored pause's announcement does not wait for it: its
 *   onSuspend may still hold while onStop runs and the child is removed; the
 *   spawn resolves once the announcement is done (or past onSuspend's
 *   deadline), even though the child is gone by then;
 * - a drain "all" of a stop that came during onStart drains what is queued
 *   when onStart returns (the stop takes effect then);
 * - a suspend or resume still queued when the child is removed for good
 *   rejects with MAILBOX_CLOSED.
 *
 * The second property, `runtime.stop()` during `runtime.start()` (a static
 * child), is exact: see expectedFailedStart and checkStartedThenStopped.
 */
import fc from "fast-check";
import { queuedBusiness } from "../../src/mailbox/mailbox-internals.js";
import { describe, expect, it } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  ErrorAction,
  InMemoryStateStore,
  isLegalTransition,
  ProcessStatus,
  Runtime,
  silentLogger,
  Supervisor,
  SUSPENSION_KEY,
  type AuditEvent,
  type Message,
  type SpawnOptions,
} from "../../src/index.js";
import { TestClock } from "../../src/entries/testing.js";
import { turns } from "../support/agents.js";
import { track, type Tracked } from "../support/outcome.js";
import { checkAgainstModel, differences, outcomeOf, settleAndCompare as settleModel } from "../support/model-run.js";

const NAME = "w";
const STEP_MS = 10;
const BACKOFF_MS = 10;
/** Two clock steps: what a stop gives a held onStart, a held handler (no timeoutMs), and onSuspend. */
const SHUTDOWN_MS = 20;
/** A stop's own `timeoutMs`, shorter than one clock step. */
const STOP_TIMEOUT_MS = 5;
const SPAWN_OPTIONS: SpawnOptions = { mailboxSize: 100, maxRetries: 0, shutdownTimeoutMs: SHUTDOWN_MS };
const STORED_ID = "0190f0f0-0000-7000-8000-000000000001";
const STORED_REASON = "stored";

type StartMode = "ok" | "throw" | "hold";
type Fate = "ok" | "escalate";

// ---- the agent ---------------------------------------------------------------

interface Recorder {
  /** Hook and handle() calls, `${instance}:${what}`, in call order. */
  readonly log: string[];
  /** Audit receipts about the pause of the name, in order. */
  readonly receipts: string[];
  /** The agent's own code running now (onStart, handle), per instance. */
  readonly active: Map<number, number>;
  overlaps: number;
  /** Gates held now, by key; the argument says whether the held code then throws. */
  readonly held: Map<string, (fail: boolean) => void>;
  /** The script of the next onStart (consumed by it). */
  nextStart: StartMode;
  /** Whether the onSuspend announcing a restored pause holds (set per spawn). */
  holdSuspend: boolean;
  noHold: boolean;
}

class ScriptedFailure extends Error {}

function hold(rec: Recorder, key: string): Promise<boolean> {
  if (rec.noHold) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => rec.held.set(key, resolve));
}

class Starter extends AgentProcess {
  constructor(
    name: string,
    options: SpawnOptions | undefined,
    readonly rec: Recorder,
    readonly instance: number,
  ) {
    super(name, options);
  }

  private enter(): void {
    const active = (this.rec.active.get(this.instance) ?? 0) + 1;
    this.rec.active.set(this.instance, active);
    if (active > 1) this.rec.overlaps++;
  }

  private leave(): void {
    this.rec.active.set(this.instance, this.rec.active.get(this.instance)! - 1);
  }

  override async onStart(): Promise<void> {
    const rec = this.rec;
    const mode = rec.nextStart;
    rec.nextStart = "ok";
    rec.log.push(`${this.instance}:onStart@${this.incarnation}`);
    this.enter();
    let fail = mode === "throw";
    try {
      await Promise.resolve();
      if (mode === "hold") fail = await hold(rec, `${this.instance}:start@${this.incarnation}`);
    } finally {
      this.leave();
    }
    if (fail) throw new ScriptedFailure("onStart failed");
  }

  override async handle(message: Message): Promise<void> {
    const { id, fate, hold: holds } = message.payload as { id: number; fate: Fate; hold: boolean };
    const key = `${this.instance}:${id}`;
    this.rec.log.push(key);
    this.enter();
    try {
      await Promise.resolve();
      if (holds) await hold(this.rec, key);
    } finally {
      this.leave();
    }
    if (fate === "escalate") throw new ScriptedFailure("escalate");
  }

  override async onError(): Promise<ErrorAction> {
    return ErrorAction.ESCALATE;
  }

  override async onSuspend(reason: string): Promise<void> {
    this.rec.log.push(`${this.instance}:onSuspend:${reason}`);
    // Told of a restored pause, it confirms it (same reason: no update): nothing may run before the announcement is done.
    if (reason === STORED_REASON) this.suspend(reason);
    // Only the announcement of the pause a spawn restores ("stored") may hold.
    if (this.rec.holdSuspend && reason === STORED_REASON) await hold(this.rec, `${this.instance}:suspend`);
  }

  override async onResume(approver: string): Promise<void> {
    this.rec.log.push(`${this.instance}:onResume:${approver}`);
  }

  override async onStop(): Promise<void> {
    this.rec.log.push(`${this.instance}:onStop`);
  }
}

// ---- the model ---------------------------------------------------------------

interface Msg {
  readonly id: number;
  readonly fate: Fate;
  readonly hold: boolean;
}

type Control = { readonly kind: "suspend"; readonly op: number; readonly reason: string; readonly sent: number } | { readonly kind: "resume"; readonly op: number; readonly approver: string; readonly sent: number };

/** "absent": not a child; "backoff": CRASHED, waiting out the restart delay; "alive": any other status. */
type Life = "alive" | "backoff" | "absent";

interface ModelStart {
  /** The spawn this start answers, if it is not a restart. */
  readonly op: number | undefined;
  /** "onStart": onStart holds; "announce": a restored pause's onSuspend holds. */
  stage: "onStart" | "announce";
  /** When a stop gives up on the held onStart (set once a stop came). */
  abandonAt: number | undefined;
  /** Stops waiting for onStart to return. */
  readonly stops: Array<{ op: number; drain: "current" | "all"; timeoutMs: number | undefined }>;
  /** onSuspend's deadline, once it runs. */
  announceAt: number;
  /** Whether that onSuspend holds on its gate. */
  holding: boolean;
  /** The instance it belongs to. */
  readonly instance: number;
  readonly incarnation: number;
}

interface ModelStop {
  drainAll: boolean;
  remaining: number;
  readonly ops: number[];
  readonly deadline: number;
}

interface Marker {
  reason: string;
  /** Its announcement (onSuspend and receipt) is done. */
  announced: boolean;
  /** Resumes sent up to this number do not lift it (undefined: any does). */
  readonly after: number | undefined;
}

interface Model {
  now: number;
  life: Life;
  status: ProcessStatus;
  instance: number;
  incarnation: number;
  queue: Msg[];
  prio: Control[];
  held: Msg | undefined;
  /** Starts in flight, also ones whose child is gone (an announcement still holding). */
  starts: ModelStart[];
  stop: ModelStop | undefined;
  marker: Marker | undefined;
  /** A suspend taken from the mailbox, applied at the next boundary. */
  request: { reason: string; readonly ops: number[]; readonly askedBy: number } | undefined;
  dueAt: number;
  /** Keys of held code the model no longer waits for (a stop gave up on it). */
  readonly abandoned: string[];
  nextStart: StartMode;
  /** Whether the onSuspend of a restored pause holds (set per spawn). */
  holdAnnounce: boolean;
  /** The DynamicSupervisor is being stopped by its parent (a sibling's crash), waiting for the child's stop. */
  parentStopping: boolean;
  readonly log: string[];
  readonly receipts: string[];
  readonly transitions: string[];
  readonly outcomes: Map<number, string>;
  sent: number;
  nextId: number;
  nextOp: number;
}

/** Records what a call came to; the parent's own stop of the child (op -1) is nobody's call. */
function settle(m: Model, op: number, outcome: string): void {
  if (op >= 0) m.outcomes.set(op, outcome);
}

function transition(m: Model, to: ProcessStatus): void {
  m.transitions.push(`${m.instance}:${m.status}>${to}`);
  m.status = to;
}

/** The start in flight of the current instance, if any (not one that only announces for a removed child). */
function currentStart(m: Model): ModelStart | undefined {
  return m.starts.find((s) => s.instance === m.instance && s.incarnation === m.incarnation);
}

function endStart(m: Model, start: ModelStart, outcome: string): void {
  m.starts.splice(m.starts.indexOf(start), 1);
  if (start.op !== undefined) m.outcomes.set(start.op, outcome);
}

/**
 * The child is gone for good: its mailbox closes, queued requests fail, its
 * name is freed. `cancels`: removed by its DynamicSupervisor (a stop, or a
 * stop of a child waiting out a backoff), which cancels a pause it holds on
 * the record; a failed spawn or the parent's stop of the supervisor does not.
 */
function removeChild(m: Model, cancels: boolean): void {
  m.life = "absent";
  m.parentStopping = false; // the parent's stop of the DynamicSupervisor is done: it starts again, empty
  m.queue = [];
  for (const c of m.prio) m.outcomes.set(c.op, "MAILBOX_CLOSED");
  m.prio = [];
  for (const op of m.request?.ops ?? []) m.outcomes.set(op, "MAILBOX_CLOSED");
  m.request = undefined;
  // Removed for good while paused: the pause is cancelled on the record (its missing receipt first).
  if (cancels && m.marker !== undefined) {
    if (!m.marker.announced) m.receipts.push("agent.suspend");
    m.receipts.push("agent.suspend.cancelled");
  }
  m.marker = undefined;
  m.held = undefined;
  m.stop = undefined;
}

/** onStart was called (the log), the script says what it does now. */
function callOnStart(m: Model, start: ModelStart, mode: StartMode): void {
  m.log.push(`${m.instance}:onStart@${m.incarnation}`);
  if (mode === "hold") return; // stage "onStart", held
  if (mode === "throw") startFailed(m, start);
  else onStartReturned(m, start);
}

/** The start fails (onStart threw, or a stop gave up on it): CRASHED, onStop, START_FAILED. */
function startFailed(m: Model, start: ModelStart): void {
  transition(m, ProcessStatus.CRASHED);
  m.log.push(`${m.instance}:onStop`);
  endStart(m, start, "START_FAILED");
  if (start.stops.length > 0) {
    for (const s of start.stops) settle(m, s.op, "ok");
    removeChild(m, start.stops.some((s) => s.op >= 0));
    return;
  }
  if (start.op !== undefined) {
    removeChild(m, false); // a failed spawn leaves nothing registered
    return;
  }
  m.life = "backoff"; // a failed restart counts as another crash
  m.dueAt = m.now + BACKOFF_MS;
}

function onStartReturned(m: Model, start: ModelStart): void {
  const restored = m.marker;
  transition(m, restored === undefined ? ProcessStatus.RUNNING : ProcessStatus.SUSPENDED);
  const stops = start.stops.splice(0);
  if (restored !== undefined && !restored.announced) {
    m.log.push(`${m.instance}:onSuspend:${restored.reason}`);
    m.request ??= { reason: restored.reason, ops: [], askedBy: 0 }; // the agent confirms the pause (this.suspend)
    start.stage = "announce";
    start.announceAt = m.now + SHUTDOWN_MS;
    start.holding = m.holdAnnounce;
    if (!start.holding) announced(m, start, true);
  } else {
    endStart(m, start, "ok");
  }
  // The stops that waited take effect now.
  for (const [i, s] of stops.entries()) {
    if (i === 0) beginStop(m, s.op, s.drain, s.timeoutMs);
    else if (m.life === "alive" && m.stop !== undefined) m.stop.ops.push(s.op);
    else settle(m, s.op, "ok");
  }
  pump(m);
}

/** The restored pause's onSuspend is done (or past its deadline): the receipt, then the start ends. */
function announced(m: Model, start: ModelStart, notified: boolean): void {
  m.receipts.push("agent.suspend");
  const mine = start.instance === m.instance && start.incarnation === m.incarnation && m.life === "alive";
  if (mine && m.marker !== undefined) m.marker.announced = notified;
  endStart(m, start, "ok");
}

function beginStop(m: Model, op: number, drain: "current" | "all", timeoutMs: number | undefined): void {
  transition(m, ProcessStatus.STOPPING);
  const suspended = m.marker !== undefined;
  m.stop = { drainAll: drain === "all" && !suspended, remaining: m.queue.length, ops: [op], deadline: m.now + (timeoutMs ?? SHUTDOWN_MS) };
  settle(m, op, "pending");
}

function endStop(m: Model): void {
  const stop = m.stop!;
  m.log.push(`${m.instance}:onStop`);
  transition(m, ProcessStatus.STOPPED);
  for (const op of stop.ops) settle(m, op, "ok");
  removeChild(m, stop.ops.some((op) => op >= 0));
}

function crash(m: Model): void {
  transition(m, ProcessStatus.CRASHED);
  m.log.push(`${m.instance}:onStop`);
  m.life = "backoff";
  m.dueAt = m.now + BACKOFF_MS;
}

/** Applies a suspend taken from the mailbox, at the loop's boundary. */
function applyRequest(m: Model): void {
  const request = m.request!;
  m.request = undefined;
  if (m.status === ProcessStatus.RUNNING) {
    transition(m, ProcessStatus.SUSPENDED);
    m.marker = { reason: request.reason, announced: true, after: request.askedBy };
    m.log.push(`${m.instance}:onSuspend:${request.reason}`);
    m.receipts.push("agent.suspend");
  } else if (m.marker !== undefined && m.marker.reason !== request.reason) {
    m.marker.reason = request.reason;
    m.receipts.push("agent.suspend.update");
  }
  for (const op of request.ops) m.outcomes.set(op, "ok");
}

function control(m: Model, c: Control): void {
  if (c.kind === "suspend") {
    if (m.request === undefined) m.request = { reason: c.reason, ops: [c.op], askedBy: c.sent };
    else {
      m.request.reason = c.reason;
      m.request.ops.push(c.op);
    }
    return;
  }
  const marker = m.marker;
  if (m.status !== ProcessStatus.SUSPENDED || marker === undefined || (marker.after !== undefined && c.sent <= marker.after)) {
    m.outcomes.set(c.op, "ok"); // a no-op
    return;
  }
  if (!marker.announced) m.receipts.push("agent.suspend"); // the pause's missing receipt first
  m.receipts.push("agent.resume");
  m.marker = undefined;
  transition(m, ProcessStatus.RUNNING);
  m.log.push(`${m.instance}:onResume:${c.kind === "resume" ? c.approver : ""}`);
  m.outcomes.set(c.op, "ok");
}

/** Runs the loop until it is quiet. */
function pump(m: Model): void {
  for (;;) {
    if (m.life !== "alive" || m.held !== undefined) return;
    // The loop begins once the start is done; a stop begins it at once (also while a restored pause is announced).
    if (m.status !== ProcessStatus.STOPPING && currentStart(m) !== undefined) return;
    if (m.status === ProcessStatus.STOPPING) {
      const stop = m.stop!;
      if (stop.drainAll && m.request === undefined) {
        const c = m.prio.shift();
        if (c !== undefined) {
          control(m, c);
          continue;
        }
        if (stop.remaining > 0) {
          const msg = m.queue.shift()!;
          stop.remaining--;
          m.log.push(`${m.instance}:${msg.id}`);
          if (msg.hold) {
            m.held = msg;
            return;
          }
          if (msg.fate === "escalate") stop.drainAll = false;
          continue;
        }
      }
      endStop(m);
      return;
    }
    if (m.request !== undefined) {
      applyRequest(m);
      continue;
    }
    const c = m.prio.shift();
    if (c !== undefined) {
      control(m, c);
      continue;
    }
    if (m.status !== ProcessStatus.RUNNING) return;
    const msg = m.queue.shift();
    if (msg === undefined) return;
    m.log.push(`${m.instance}:${msg.id}`);
    if (msg.hold) {
      m.held = msg;
      return;
    }
    if (msg.fate === "escalate") {
      crash(m);
      return;
    }
  }
}

function release(m: Model): void {
  const msg = m.held!;
  m.held = undefined;
  if (msg.fate === "escalate") {
    if (m.status === ProcessStatus.STOPPING) m.stop!.drainAll = false;
    else crash(m);
  }
  pump(m);
}

function modelSpawn(m: Model, op: number, mode: StartMode, restored: boolean): void {
  if (m.life !== "absent") {
    m.outcomes.set(op, "DUPLICATE_NAME");
    return;
  }
  m.instance++;
  m.incarnation = 1;
  m.status = ProcessStatus.INITIALIZING;
  m.life = "alive";
  m.queue = [];
  m.prio = [];
  m.marker = restored ? { reason: STORED_REASON, announced: false, after: undefined } : undefined;
  m.outcomes.set(op, "pending");
  const start: ModelStart = { op, stage: "onStart", abandonAt: undefined, stops: [], announceAt: 0, holding: false, instance: m.instance, incarnation: m.incarnation };
  m.starts.push(start);
  callOnStart(m, start, mode);
}

function modelStop(m: Model, op: number, drain: "current" | "all", timeoutMs: number | undefined): void {
  if (m.life === "absent") {
    m.outcomes.set(op, "AGENT_NOT_FOUND");
    return;
  }
  if (m.life === "backoff") {
    removeChild(m, true);
    settle(m, op, "ok");
    return;
  }
  const start = currentStart(m);
  if (start !== undefined && start.stage === "onStart") {
    // INITIALIZING: the stop waits for onStart, which gets shutdownTimeoutMs from now.
    start.abandonAt ??= m.now + SHUTDOWN_MS;
    start.stops.push({ op, drain, timeoutMs });
    settle(m, op, "pending");
    return;
  }
  if (m.status === ProcessStatus.STOPPING) {
    m.stop!.ops.push(op);
    settle(m, op, "pending");
    return;
  }
  // Also while a restored pause is being announced: the stop does not wait for it (a paused agent drains nothing).
  beginStop(m, op, drain, timeoutMs);
  pump(m);
}

/**
 * A sibling of the DynamicSupervisor crashes: the ONE_FOR_ALL root stops it
 * (its children are stopped, drain "current", each bounded by its
 * shutdownTimeoutMs; a start in flight is abandoned after it), then starts it
 * again, empty (docs/supervision.md "Dynamic supervisors": "When a parent
 * supervisor restarts a DynamicSupervisor ..., it stops its children and
 * starts again empty").
 */
function modelParentRestart(m: Model): void {
  if (m.life === "absent") return;
  if (m.life === "backoff") {
    removeChild(m, false); // the pending restart is cancelled
    return;
  }
  m.parentStopping = true;
  modelStop(m, -1, "current", undefined);
}

function modelTick(m: Model): void {
  m.now += STEP_MS;
  for (const start of [...m.starts]) {
    if (start.stage === "announce" && start.announceAt <= m.now) {
      m.abandoned.push(`${start.instance}:suspend`);
      start.holding = false;
      announced(m, start, false);
      pump(m);
    }
  }
  const start = currentStart(m);
  if (start !== undefined && start.stage === "onStart" && start.abandonAt !== undefined && start.abandonAt <= m.now) {
    m.abandoned.push(`${m.instance}:start@${m.incarnation}`);
    startFailed(m, start);
  }
  if (m.life === "alive" && m.status === ProcessStatus.STOPPING && m.stop!.deadline <= m.now) {
    if (m.held !== undefined) m.abandoned.push(`${m.instance}:${m.held.id}`);
    m.held = undefined;
    endStop(m);
  }
  if (m.life === "backoff" && m.dueAt <= m.now) {
    m.life = "alive";
    transition(m, ProcessStatus.INITIALIZING);
    m.incarnation++;
    const mode = m.nextStart;
    m.nextStart = "ok";
    const restart: ModelStart = { op: undefined, stage: "onStart", abandonAt: undefined, stops: [], announceAt: 0, holding: false, instance: m.instance, incarnation: m.incarnation };
    m.starts.push(restart);
    callOnStart(m, restart, mode);
  }
}

// ---- the real side -------------------------------------------------------------

/**
 * An in-memory store whose reads take a few more turns of the microtask
 * queue: a stop asked for in the same tick as a spawn then really comes
 * before onStart has begun (while the start restores the state).
 */
class SlowReadStore extends InMemoryStateStore {
  override async get(name: string): ReturnType<InMemoryStateStore["get"]> {
    for (let i = 0; i < 5; i++) await Promise.resolve();
    return super.get(name);
  }
}

interface Real {
  readonly runtime: Runtime;
  readonly clock: TestClock;
  readonly dyn: DynamicSupervisor;
  readonly store: SlowReadStore;
  readonly rec: Recorder;
  readonly instances: Starter[];
  readonly ops: Map<number, Tracked<unknown>>;
  readonly transitions: string[];
  readonly illegal: string[];
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** Keys of everything the model says holds now. */
function heldKeys(m: Model): string[] {
  const keys = [...m.abandoned];
  if (m.held !== undefined) keys.push(`${m.instance}:${m.held.id}`);
  for (const s of m.starts) {
    if (s.stage === "onStart") keys.push(`${s.instance}:start@${s.incarnation}`);
    else if (s.holding) keys.push(`${s.instance}:suspend`);
  }
  return keys.sort();
}

function mismatches(m: Model, r: Real): string[] {
  const { out, same } = differences();
  same("log", r.rec.log, m.log);
  same("receipts", r.rec.receipts, m.receipts);
  same("held", [...r.rec.held.keys()].sort(), heldKeys(m));
  same("transitions", r.transitions, m.transitions);
  same("instances", r.instances.length, m.instance);
  const agent = r.instances.at(-1);
  if (agent !== undefined) {
    same("status", agent.status, m.status);
    same("incarnation", agent.incarnation, m.incarnation);
    same("registered", r.runtime.getAgent(NAME) === agent, m.life !== "absent");
    same("closed", agent.mailbox.closed, m.life === "absent");
    if (m.life !== "absent") {
      same("queued", queuedBusiness(agent.mailbox).map((q) => q.payload.id), m.queue.map((q) => q.id));
      same("paused", agent.suspension?.reason, m.marker?.reason);
    }
  }
  same("children", r.dyn.children.length, m.life === "absent" ? 0 : 1);
  for (const [op, want] of m.outcomes) {
    const t = r.ops.get(op);
    same(`op ${op}`, t === undefined ? "missing" : outcomeOf(t), want);
  }
  same("clock", r.clock.now(), m.now);
  if (r.rec.overlaps !== 0) out.push(`${r.rec.overlaps} overlapping calls of the agent's own code`);
  if (r.illegal.length > 0) out.push(`illegal transitions: ${r.illegal.join(", ")}`);
  return out;
}

async function settleAndCompare(m: Model, r: Real, extraTurns = 6): Promise<void> {
  await settleModel(() => mismatches(m, r), extraTurns);
}

function spawnReal(r: Real): Promise<Starter> {
  const factory = (name: string, options?: SpawnOptions): Starter => {
    const agent = new Starter(name, options, r.rec, r.instances.length + 1);
    r.instances.push(agent);
    return agent;
  };
  return r.dyn.spawn(factory, NAME, SPAWN_OPTIONS);
}

function storedPause(): Record<string, unknown> {
  return { [SUSPENSION_KEY]: { reason: STORED_REASON, since: new Date(0).toISOString(), approver: null, suspensionId: STORED_ID, announced: false } };
}

// ---- commands ------------------------------------------------------------------

class Spawn implements Cmd {
  constructor(
    readonly mode: StartMode,
    readonly restored: boolean,
    readonly holdAnnounce: boolean,
    readonly stopToo: "current" | "all" | undefined,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    if (m.parentStopping) {
      r.ops.set(op, track(spawnReal(r)));
      m.outcomes.set(op, "RUNTIME_STOPPED"); // the DynamicSupervisor is stopping
    } else if (m.life === "absent") {
      // Only while the name is free: the store then holds no pause of a live agent.
      await (this.restored ? r.store.set(NAME, storedPause() as never) : r.store.delete(NAME));
      r.rec.nextStart = this.mode;
      r.rec.holdSuspend = this.holdAnnounce;
      m.holdAnnounce = this.holdAnnounce;
      r.ops.set(op, track(spawnReal(r)));
      let stopOp: number | undefined;
      if (this.stopToo !== undefined) {
        stopOp = m.nextOp++;
        r.ops.set(stopOp, track(r.dyn.stop(NAME, { drain: this.stopToo })));
      }
      modelSpawnWithStop(m, op, this.mode, this.restored, stopOp, this.stopToo);
    } else {
      r.ops.set(op, track(spawnReal(r)));
      m.outcomes.set(op, "DUPLICATE_NAME");
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `spawn(onStart ${this.mode}${this.restored ? `, restored pause${this.holdAnnounce ? " (onSuspend holds)" : ""}` : ""}${this.stopToo === undefined ? "" : `; stop(drain ${this.stopToo}) in the same tick`})`;
  }
}

/** The spawn, and a stop asked for in the same tick: the stop comes before onStart has begun. */
function modelSpawnWithStop(m: Model, op: number, mode: StartMode, restored: boolean, stopOp: number | undefined, drain: "current" | "all" | undefined): void {
  if (stopOp === undefined) {
    modelSpawn(m, op, mode, restored);
    return;
  }
  // Hold the start in the model until the stop is registered, then let the script play.
  modelSpawn(m, op, "hold", restored);
  const start = currentStart(m)!;
  modelStop(m, stopOp, drain!, undefined);
  if (mode === "hold") return;
  if (mode === "throw") startFailed(m, start);
  else onStartReturned(m, start);
}

class ReleaseStart implements Cmd {
  constructor(readonly fail: boolean) {}
  check(m: Readonly<Model>): boolean {
    return m.starts.some((s) => s.stage === "onStart");
  }
  async run(m: Model, r: Real): Promise<void> {
    const start = m.starts.find((s) => s.stage === "onStart")!;
    const key = `${start.instance}:start@${start.incarnation}`;
    const open = r.rec.held.get(key);
    expect(open, `${key} is held`).toBeDefined();
    r.rec.held.delete(key);
    open!(this.fail);
    if (this.fail) startFailed(m, start);
    else onStartReturned(m, start);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return this.fail ? "onStart throws" : "onStart returns";
  }
}

class ReleaseAnnounce implements Cmd {
  check(m: Readonly<Model>): boolean {
    return m.starts.some((s) => s.stage === "announce" && s.holding);
  }
  async run(m: Model, r: Real): Promise<void> {
    const start = m.starts.find((s) => s.stage === "announce" && s.holding)!;
    const key = `${start.instance}:suspend`;
    const open = r.rec.held.get(key);
    expect(open, `${key} is held`).toBeDefined();
    r.rec.held.delete(key);
    open!(false);
    start.holding = false;
    announced(m, start, true);
    pump(m);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "onSuspend returns";
  }
}

class Send implements Cmd {
  constructor(
    readonly fate: Fate,
    readonly hold: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const msg: Msg = { id: m.nextId++, fate: this.fate, hold: this.hold };
    const op = m.nextOp++;
    r.ops.set(op, track(r.runtime.send(NAME, { id: msg.id, fate: msg.fate, hold: msg.hold })));
    if (m.life === "absent") m.outcomes.set(op, "AGENT_NOT_FOUND");
    else {
      m.queue.push(msg);
      m.outcomes.set(op, "ok");
      pump(m);
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `send(${this.fate}${this.hold ? "+hold" : ""})`;
  }
}

class Release implements Cmd {
  check(m: Readonly<Model>): boolean {
    return m.held !== undefined;
  }
  async run(m: Model, r: Real): Promise<void> {
    const key = `${m.instance}:${m.held!.id}`;
    const open = r.rec.held.get(key);
    expect(open, `${key} is held`).toBeDefined();
    r.rec.held.delete(key);
    open!(false);
    release(m);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "release handler";
  }
}

class ReleaseAbandoned implements Cmd {
  check(m: Readonly<Model>): boolean {
    return m.abandoned.length > 0;
  }
  async run(m: Model, r: Real): Promise<void> {
    const key = m.abandoned.shift()!;
    const open = r.rec.held.get(key);
    expect(open, `${key} is held`).toBeDefined();
    r.rec.held.delete(key);
    open!(false);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "release abandoned";
  }
}

class Stop implements Cmd {
  constructor(
    readonly drain: "current" | "all",
    readonly timeoutMs: number | undefined,
  ) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    r.ops.set(op, track(r.dyn.stop(NAME, this.timeoutMs === undefined ? { drain: this.drain } : { drain: this.drain, timeoutMs: this.timeoutMs })));
    modelStop(m, op, this.drain, this.timeoutMs);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `stop(drain ${this.drain}${this.timeoutMs === undefined ? "" : `, timeoutMs ${this.timeoutMs}`})`;
  }
}

/** An escalating message, the next start's script set first, then one clock step: the restart (after the backoff) runs it. */
class CrashRestart implements Cmd {
  constructor(readonly mode: StartMode) {}
  check(m: Readonly<Model>): boolean {
    return m.life === "alive" && m.status === ProcessStatus.RUNNING && m.held === undefined && currentStart(m) === undefined;
  }
  async run(m: Model, r: Real): Promise<void> {
    r.rec.nextStart = this.mode;
    m.nextStart = this.mode;
    await new Send("escalate", false).run(m, r);
    await new Advance().run(m, r); // the backoff: the restart begins
  }
  toString(): string {
    return `crash+restart (onStart ${this.mode})`;
  }
}

class Suspend implements Cmd {
  constructor(readonly reason: string) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    r.ops.set(op, track(r.runtime.suspend(NAME, this.reason)));
    if (m.life === "absent") m.outcomes.set(op, "AGENT_NOT_FOUND");
    else {
      m.prio.push({ kind: "suspend", op, reason: this.reason, sent: ++m.sent });
      m.outcomes.set(op, "pending");
      pump(m);
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return `suspend(${this.reason})`;
  }
}

class Resume implements Cmd {
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    r.ops.set(op, track(r.runtime.resume(NAME, "alice")));
    if (m.life === "absent") m.outcomes.set(op, "AGENT_NOT_FOUND");
    else {
      m.prio.push({ kind: "resume", op, approver: "alice", sent: ++m.sent });
      m.outcomes.set(op, "pending");
      pump(m);
    }
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "resume(alice)";
  }
}

/** A crash of the DynamicSupervisor's sibling: the ONE_FOR_ALL root restarts both. */
class ParentRestart implements Cmd {
  check(m: Readonly<Model>): boolean {
    return !m.parentStopping;
  }
  async run(m: Model, r: Real): Promise<void> {
    const op = m.nextOp++;
    r.ops.set(op, track(r.runtime.send("crasher", {})));
    m.outcomes.set(op, "ok");
    modelParentRestart(m);
    await settleAndCompare(m, r);
  }
  toString(): string {
    return "sibling crash (the root restarts the DynamicSupervisor)";
  }
}

/** Moves the clock on in steps of 10 ms, letting the runtime settle after each (two steps: a whole shutdownTimeoutMs). */
class Advance implements Cmd {
  constructor(readonly steps = 1) {}
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    for (let i = 0; i < this.steps; i++) {
      await r.clock.advance(STEP_MS);
      modelTick(m);
      await settleAndCompare(m, r);
    }
  }
  toString(): string {
    return `advance(${STEP_MS * this.steps})`;
  }
}

const startMode = fc.constantFrom<StartMode>("ok", "hold", "hold", "throw");
const drain = fc.constantFrom<"current" | "all">("current", "all");
const commands = [
  fc.tuple(startMode, fc.boolean(), fc.boolean(), fc.constantFrom<"current" | "all" | undefined>(undefined, undefined, "current", "all")).map(([mode, restored, holdAnnounce, stopToo]) => new Spawn(mode, restored, restored && holdAnnounce, stopToo)),
  fc.boolean().map((fail) => new ReleaseStart(fail)),
  fc.constant(new ReleaseStart(false)),
  fc.constant(new ReleaseAnnounce()),
  fc.tuple(fc.constantFrom<Fate>("ok", "ok", "escalate"), fc.boolean()).map(([fate, h]) => new Send(fate, h)),
  fc.constant(new Release()),
  fc.tuple(drain, fc.constantFrom(undefined, STOP_TIMEOUT_MS)).map(([d, t]) => new Stop(d, t)),
  fc.constant(new ReleaseAbandoned()),
  startMode.map((mode) => new CrashRestart(mode)),
  startMode.map((mode) => new CrashRestart(mode)),
  fc.constantFrom("r1", "r2").map((reason) => new Suspend(reason)),
  fc.constant(new Resume()),
  fc.constant(new Advance()),
  fc.constant(new Advance(2)),
  fc.constant(new ParentRestart()),
  fc.constant(new ParentRestart()),
];

class Crasher extends AgentProcess {
  override async handle(): Promise<void> {
    throw new Error("sibling crash");
  }
}

async function setup(): Promise<{ model: Model; real: Real }> {
  const clock = new TestClock();
  const dyn = new DynamicSupervisor("dyn", { maxRestarts: 1000, restartWindowMs: 100, backoff: "CONSTANT", backoffBaseMs: BACKOFF_MS });
  const store = new SlowReadStore();
  const rec: Recorder = { log: [], receipts: [], active: new Map(), overlaps: 0, held: new Map(), nextStart: "ok", holdSuspend: false, noHold: false };
  const auditSink = {
    emit(event: AuditEvent): void {
      if (event.agent === NAME && (event.event.startsWith("agent.suspend") || event.event === "agent.resume")) rec.receipts.push(event.event);
    },
  };
  const root = new Supervisor("root", { strategy: "ONE_FOR_ALL", maxRestarts: 1000, restartWindowMs: 100, backoffBaseMs: 0, children: [dyn, new Crasher("crasher")] });
  const runtime = new Runtime({ root, clock, store, auditSink, logger: silentLogger });
  const real: Real = { runtime, clock, dyn, store, rec, instances: [], ops: new Map(), transitions: [], illegal: [] };
  runtime.on("agent.status", (name, from, to) => {
    if (!isLegalTransition(from, to)) real.illegal.push(`${name}: ${from} -> ${to}`);
    if (name === NAME) real.transitions.push(`${real.instances.length}:${from}>${to}`);
  });
  await runtime.start();
  const model: Model = {
    now: clock.now(),
    life: "absent",
    status: ProcessStatus.INITIALIZING,
    instance: 0,
    incarnation: 0,
    queue: [],
    prio: [],
    held: undefined,
    starts: [],
    stop: undefined,
    marker: undefined,
    request: undefined,
    dueAt: 0,
    abandoned: [],
    nextStart: "ok",
    holdAnnounce: false,
    parentStopping: false,
    log: [],
    receipts: [],
    transitions: [],
    outcomes: new Map(),
    sent: 0,
    nextId: 0,
    nextOp: 0,
  };
  return { model, real };
}

/** Stops the runtime, moving the test clock on until the stop is done. */
async function stopRuntime(r: Real): Promise<void> {
  let done = false;
  const stopping = r.runtime.stop().finally(() => (done = true));
  for (let i = 0; i < 20 && !done; i++) {
    await r.clock.advance(STEP_MS);
    await turns(2);
  }
  // Bounded: every hold is given at most shutdownTimeoutMs (two steps), onStop too.
  expect(done, "runtime.stop() finishes within 20 clock steps").toBe(true);
  await stopping;
}

/**
 * The end of a run: `runtime.stop()` with what holds still held (a start, a
 * handler, an announcement: it is bounded by shutdownTimeoutMs), then
 * everything is released; no call may still be pending, nothing RUNNING.
 */
async function finish(r: Real): Promise<void> {
  await stopRuntime(r);
  r.rec.noHold = true;
  for (const open of r.rec.held.values()) open(false);
  r.rec.held.clear();
  await turns(6);
  expect([...r.ops].filter(([, t]) => t.state === "pending").map(([op]) => op)).toEqual([]);
  expect(r.instances.filter((a) => a.status === ProcessStatus.RUNNING || a.status === ProcessStatus.SUSPENDED)).toHaveLength(0);
  expect(r.rec.overlaps).toBe(0);
  expect(r.illegal).toEqual([]);
}

describe("agent start and stop phases under a DynamicSupervisor (model-based)", () => {
  it("matches the model through held, throwing and abandoned starts, stops before and during them, restored announcements, restarts and suspend/resume", async () => {
    await checkAgainstModel({ commands, maxCommands: 20, numRuns: 500, setup, cleanUp: finish });
  });
});

// ---- runtime.stop() during runtime.start() ---------------------------------------

type During = "send" | "suspend" | "resume";

interface StartStopScript {
  /** What onStart does: returns at once, or holds until released (or never). */
  readonly mode: "ok" | "hold";
  /** The store holds a pause stored before it was announced; its onSuspend may hold (past its deadline). */
  readonly restored: boolean;
  readonly holdAnnounce: boolean;
  /** Calls made while the start is in flight, before runtime.stop(). */
  readonly during: readonly During[];
  /** What the held onStart does after runtime.stop(), and after how many clock steps (both within shutdownTimeoutMs). */
  readonly release: "ok" | "throw" | "never";
  readonly releaseAfterSteps: 0 | 1;
}

/**
 * What a `runtime.stop()` that comes while `runtime.start()` is in flight
 * must come to (docs/supervision.md "shutdownTimeoutMs"): the start finishes
 * first, a held onStart bounded by shutdownTimeoutMs; past it, or when it
 * throws, the start fails (START_FAILED) and the agent ends CRASHED after
 * onStop, having taken nothing; suspend and resume requests nobody acted on
 * reject with RUNTIME_STOPPED. `undefined`: the start succeeded, see
 * {@link checkStartedThenStopped}.
 */
function expectedFailedStart(s: StartStopScript): { log: string[]; status: ProcessStatus; start: string; controls: string; receipts: string[] } | undefined {
  if (s.mode !== "hold" || s.release === "ok") return undefined;
  return { log: ["1:onStart@1", "1:onStop"], status: ProcessStatus.CRASHED, start: "START_FAILED", controls: "RUNTIME_STOPPED", receipts: [] };
}

async function runStartStop(s: StartStopScript): Promise<void> {
  const clock = new TestClock();
  const store = new InMemoryStateStore();
  if (s.restored) await store.set(NAME, storedPause() as never);
  const rec: Recorder = { log: [], receipts: [], active: new Map(), overlaps: 0, held: new Map(), nextStart: s.mode, holdSuspend: s.holdAnnounce, noHold: false };
  const auditSink = {
    emit(event: AuditEvent): void {
      if (event.agent === NAME && (event.event.startsWith("agent.suspend") || event.event === "agent.resume")) rec.receipts.push(event.event);
    },
  };
  const agent = new Starter(NAME, SPAWN_OPTIONS, rec, 1);
  const runtime = new Runtime({ root: new Supervisor("root", { children: [agent] }), clock, store, auditSink, logger: silentLogger });
  const illegal: string[] = [];
  runtime.on("agent.status", (name, from, to) => {
    if (!isLegalTransition(from, to)) illegal.push(`${name}: ${from} -> ${to}`);
  });
  const starting = track(runtime.start());
  await turns(4);
  const sends: Array<Tracked<unknown>> = [];
  const controls: Array<Tracked<unknown>> = [];
  for (const [i, what] of s.during.entries()) {
    if (what === "send") sends.push(track(runtime.send(NAME, { id: i, fate: "ok", hold: false })));
    else controls.push(track<unknown>(what === "suspend" ? runtime.suspend(NAME, "r1") : runtime.resume(NAME, "alice")));
  }
  await turns(4);
  const stopping = track(runtime.stop());
  const key = `1:start@1`;
  for (let step = 0; step < 20 && stopping.state === "pending"; step++) {
    if (step === s.releaseAfterSteps && s.mode === "hold" && s.release !== "never") {
      const open = rec.held.get(key);
      expect(open, `${key} is held`).toBeDefined();
      rec.held.delete(key);
      open!(s.release === "throw");
    }
    await turns(6);
    if (stopping.state !== "pending") break;
    await clock.advance(STEP_MS);
    await turns(4);
  }
  expect(stopping.state, "runtime.stop() finishes within 20 clock steps").toBe("resolved");
  rec.noHold = true;
  for (const open of rec.held.values()) open(false);
  await turns(6);
  const got = { log: rec.log, status: agent.status, start: outcomeOf(starting), controls: controls.map(outcomeOf), sends: sends.map(outcomeOf), receipts: rec.receipts, overlaps: rec.overlaps, illegal };
  const failed = expectedFailedStart(s);
  if (failed !== undefined) {
    expect(got).toEqual({ ...failed, controls: controls.map(() => failed.controls), sends: sends.map(() => "ok"), overlaps: 0, illegal: [] });
    return;
  }
  checkStartedThenStopped(s, got);
}

/**
 * A start that finished in time (onStart returned within shutdownTimeoutMs of
 * the stop, a restored pause announced, its onSuspend bounded by its
 * deadline): the agent ran onStart, announced a restored pause first of all,
 * and ended STOPPED with onStop last; every call settled (a request acted on
 * resolves, one that was not rejects with RUNTIME_STOPPED), nothing ran twice
 * at once.
 *
 * As docs/supervision.md ("A stopped agent whose onStart finished in time
 * takes nothing that was queued") and the TSDoc of Runtime.stop ("queued
 * messages stay unhandled") say: after a runtime.stop() that came during
 * onStart, no message loop begins, so nothing queued is handled (no business
 * message, no suspend or resume acted on: no receipt beyond the restored
 * pause's announcement). Until the fix on branch wip/phases the start began
 * the loop anyway and took a prefix of what was queued.
 */
function checkStartedThenStopped(s: StartStopScript, got: { log: string[]; status: ProcessStatus; start: string; controls: string[]; sends: string[]; receipts: string[]; overlaps: number; illegal: string[] }): void {
  const head = s.restored ? ["1:onStart@1", `1:onSuspend:${STORED_REASON}`] : ["1:onStart@1"];
  expect(got.log.slice(0, head.length)).toEqual(head);
  expect(got.log.at(-1)).toBe("1:onStop");
  expect(got.log.filter((e) => e === "1:onStop" || e.startsWith("1:onStart"))).toHaveLength(2);
  expect(got.log).toEqual([...head, "1:onStop"]);
  expect(got.receipts).toEqual(s.restored ? ["agent.suspend"] : []);
  expect(got.controls.every((c) => c === "RUNTIME_STOPPED"), got.controls.join()).toBe(true);
  expect({ status: got.status, start: got.start, sends: got.sends, overlaps: got.overlaps, illegal: got.illegal }).toEqual({
    status: ProcessStatus.STOPPED,
    start: "ok",
    sends: got.sends.map(() => "ok"),
    overlaps: 0,
    illegal: [],
  });
}

const startStopScript: fc.Arbitrary<StartStopScript> = fc
  .record({
    mode: fc.constantFrom<"ok" | "hold">("hold", "hold", "ok"),
    restored: fc.boolean(),
    holdAnnounce: fc.boolean(),
    during: fc.array(fc.constantFrom<During>("send", "suspend", "resume"), { maxLength: 3 }),
    release: fc.constantFrom<"ok" | "throw" | "never">("ok", "throw", "never"),
    releaseAfterSteps: fc.constantFrom<0 | 1>(0, 1),
  })
  // onStart returning at once is only a start in flight at the stop when a restored pause's onSuspend holds.
  .map((s) => ({ ...s, mode: s.restored && s.holdAnnounce ? s.mode : "hold", holdAnnounce: s.restored && s.holdAnnounce }))
  .map((s) => ({ ...s, release: s.mode === "hold" ? s.release : "ok" }));

describe("runtime.stop() during runtime.start() (property)", () => {
  it("finishes the start first (a held onStart bounded by shutdownTimeoutMs, then START_FAILED), and settles every call", async () => {
    await fc.assert(
      fc.asyncProperty(startStopScript, async (s) => runStartStop(s)),
      { numRuns: 100 },
    );
  });
});
