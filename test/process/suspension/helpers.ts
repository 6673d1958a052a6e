/**
 * Shared rig for the durable-suspension tests: a runtime on a TestClock, a
 * recording state store, a capturing logger, an audit sink, optional tracing,
 * and a journal of every `agent.status` change (checked for legality after
 * each test by {@link teardown}).
 */
import { expect, vi } from "vitest";
import {
  AgentProcess,
  DynamicSupervisor,
  InMemoryStateStore,
  isLegalTransition,
  MemoryAuditSink,
  ProcessStatus,
  Runtime,
  Supervisor,
  SUSPENSION_KEY,
  type AuditEvent,
  type AuthorizeResume,
  type JsonObject,
  type JsonValue,
  type LogFields,
  type Logger,
  type Message,
  type RuntimeOptions,
  type StateStore,
  type SuspensionMarker,
} from "../../../src/index.js";
import type { TracerProvider } from "@opentelemetry/api";
import { TestClock, settle } from "../../../src/testing/test-clock.js";
import { LIFECYCLE_ID_KEY } from "../../../src/entries/testing.js";
import { testTracing, type TestTracing } from "../../support/tracing.js";

import { gate, turns, waitUntil, type Gate } from "../../support/agents.js";
import { rejectsWithCode } from "../../support/outcome.js";


// ---- store ------------------------------------------------------------------

/** One call of `store.set`, with a deep copy of what was passed. */
export interface SetCall {
  readonly name: string;
  readonly state: JsonObject;
}

/**
 * An {@link InMemoryStateStore} that records every `set` (deep copy, in call
 * order), can be told to fail its sets, and can hold a set on a gate.
 */
export class RecordingStore implements StateStore {
  readonly durable = false;
  readonly inner = new InMemoryStateStore();
  readonly sets: SetCall[] = [];
  /** While true, every `set` rejects (and stores nothing). */
  failSets = false;
  /** When set, each `set` waits for it before storing. */
  setGate: Gate | undefined;
  /** Called synchronously at the start of every `set`. */
  onSet: ((name: string, state: JsonObject) => void) | undefined;

  async get(name: string): Promise<JsonObject | undefined> {
    return this.inner.get(name);
  }

  async set(name: string, state: JsonObject): Promise<void> {
    this.sets.push({ name, state: structuredClone(state) });
    this.onSet?.(name, state);
    if (this.setGate !== undefined) await this.setGate.promise;
    if (this.failSets) throw new Error("disk full");
    await this.inner.set(name, state);
  }

  async delete(name: string): Promise<void> {
    await this.inner.delete(name);
  }

  async list(): Promise<string[]> {
    return this.inner.list();
  }

  async close(): Promise<void> {
    await this.inner.close();
  }

  /** The sets for `name`. */
  setsOf(name: string): SetCall[] {
    return this.sets.filter((s) => s.name === name);
  }

  /** The stored marker of `name` (or `undefined`), read through the real store. */
  async marker(name: string): Promise<JsonValue | undefined> {
    return (await this.inner.get(name))?.[SUSPENSION_KEY];
  }
}

// ---- logger -----------------------------------------------------------------

export interface LogLine {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly message: string;
  readonly fields: LogFields | undefined;
}

export function capturingLogger(lines: LogLine[]): Logger {
  return {
    debug: (message, fields) => lines.push({ level: "debug", message, fields }),
    info: (message, fields) => lines.push({ level: "info", message, fields }),
    warn: (message, fields) => lines.push({ level: "warn", message, fields }),
    error: (message, fields) => lines.push({ level: "error", message, fields }),
  };
}

// ---- audit ------------------------------------------------------------------

/** A MemoryAuditSink that also writes `audit:<event>` into a timeline. */
export class TimelineAudit extends MemoryAuditSink {
  constructor(private readonly timeline: string[]) {
    super();
  }

  override emit(event: AuditEvent): void {
    this.timeline.push(`audit:${event.event}`);
    super.emit(event);
  }
}

// ---- statuses ---------------------------------------------------------------

export interface StatusChange {
  readonly agent: string;
  readonly from: ProcessStatus;
  readonly to: ProcessStatus;
}

/** Asserts every recorded status change is legal, and that SUSPENDED → CRASHED never happened. */
export function expectLegal(changes: readonly StatusChange[]): void {
  for (const { agent, from, to } of changes) {
    expect(isLegalTransition(from, to), `${agent}: ${from} -> ${to} is not a legal transition`).toBe(true);
    expect(from === ProcessStatus.SUSPENDED && to === ProcessStatus.CRASHED, `${agent}: SUSPENDED -> CRASHED`).toBe(false);
  }
}

/** The status changes of one agent, as `FROM>TO` strings. */
export function pathOf(changes: readonly StatusChange[], agent: string): string[] {
  return changes.filter((c) => c.agent === agent).map((c) => `${c.from}>${c.to}`);
}

// ---- rig --------------------------------------------------------------------

export interface Rig {
  readonly runtime: Runtime;
  readonly clock: TestClock;
  readonly audit: MemoryAuditSink;
  readonly store: RecordingStore;
  readonly statuses: StatusChange[];
  readonly logs: LogLine[];
  readonly tracing: TestTracing | undefined;
}

export interface RigOptions {
  store?: RecordingStore;
  clock?: TestClock;
  audit?: MemoryAuditSink;
  tracing?: boolean;
  /** A tracer provider of the test's own (instead of `tracing`). */
  tracerProvider?: TracerProvider;
  authorizeResume?: AuthorizeResume;
  /** Extra listeners run when a status changes (after it is recorded). */
  onStatus?: (change: StatusChange) => void;
}

const live: Rig[] = [];

/** Builds (does not start) a runtime for `root`. {@link teardown} stops it and checks its transitions. */
export function rig(root: RuntimeOptions["root"], options: RigOptions = {}): Rig {
  const clock = options.clock ?? new TestClock();
  const audit = options.audit ?? new MemoryAuditSink();
  const store = options.store ?? new RecordingStore();
  const logs: LogLine[] = [];
  const tracing = options.tracing === true ? testTracing() : undefined;
  const runtime = new Runtime({
    root,
    clock,
    store,
    auditSink: audit,
    logger: capturingLogger(logs),
    ...(tracing === undefined ? {} : { tracerProvider: tracing.provider }),
    ...(options.tracerProvider === undefined ? {} : { tracerProvider: options.tracerProvider }),
    ...(options.authorizeResume === undefined ? {} : { authorizeResume: options.authorizeResume }),
  });
  const statuses: StatusChange[] = [];
  runtime.on("agent.status", (agent, from, to) => {
    const change = { agent, from, to };
    statuses.push(change);
    options.onStatus?.(change);
  });
  const r: Rig = { runtime, clock, audit, store, statuses, logs, tracing };
  live.push(r);
  return r;
}

/** A {@link rig} for `root`, started. */
export async function startedRig(root: RuntimeOptions["root"], options: RigOptions = {}): Promise<Rig> {
  const r = rig(root, options);
  await r.runtime.start();
  return r;
}

/** Stops every rig built since the last teardown (moving its clock on so no hang holds the stop) and checks its transitions. */
export async function teardown(): Promise<void> {
  const rigs = live.splice(0);
  await Promise.all(
    rigs.map(async (r) => {
      let done = false;
      const stopping = r.runtime.stop().then(
        () => (done = true),
        () => (done = true),
      );
      for (let i = 0; i < 50 && !done; i++) await r.clock.advance(60_000);
      await stopping;
      await r.tracing?.close();
    }),
  );
  for (const r of rigs) expectLegal(r.statuses);
}

// ---- agents -----------------------------------------------------------------

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Asserts `value` is an ISO-8601 UTC time with milliseconds. */
export function expectIsoMs(value: unknown): void {
  expect(typeof value).toBe("string");
  expect(value as string).toMatch(ISO_MS);
}

/**
 * An agent driven by `payload.op`:
 * - `{ seq }` (no op) records `seq` in `handled`;
 * - `{ op: "suspend", reason?, seq? }` calls `this.suspend(reason)` and keeps going (records `seq`);
 * - `{ op: "block", seq? }` waits for `blocker` (if set) before recording;
 * - `{ op: "echo", seq? }` replies `{ seq }`.
 * `civitas.eval.correction` messages are recorded in `corrections`.
 * Every handle / hook is written into `timeline`.
 */
export class Pausable extends AgentProcess {
  readonly handled: number[] = [];
  readonly corrections: number[] = [];
  readonly suspends: string[] = [];
  readonly resumes: string[] = [];
  startCalls = 0;
  stopCalls = 0;
  entered = 0;
  active = 0;
  overlaps = 0;
  throwOnSuspend = false;
  blocker: Gate | undefined;
  timeline: string[] = [];

  override async onStart(): Promise<void> {
    this.startCalls++;
    this.timeline.push(`onStart:${this.name}`);
  }

  override async onStop(): Promise<void> {
    this.stopCalls++;
    this.timeline.push(`onStop:${this.name}`);
  }

  override async handle(message: Message): Promise<Message | void> {
    this.entered++;
    if (this.active > 0) this.overlaps++;
    this.active++;
    try {
      const { op, seq, reason } = message.payload;
      this.timeline.push(`handle:${String(seq ?? op)}`);
      if (op === "suspend") this.suspend(typeof reason === "string" ? reason : "self");
      if (op === "block" && this.blocker !== undefined) await this.blocker.promise;
      if (typeof seq === "number") this.handled.push(seq);
      if (op === "echo") return this.reply({ seq: seq ?? null });
    } finally {
      this.active--;
    }
  }

  override async onCorrection(message: Message): Promise<void> {
    const seq = message.payload.seq;
    this.timeline.push(`correction:${String(seq)}`);
    if (typeof seq === "number") this.corrections.push(seq);
  }

  override async onSuspend(reason: string): Promise<void> {
    this.suspends.push(reason);
    this.timeline.push(`onSuspend:${reason}`);
    if (this.throwOnSuspend) throw new Error("onSuspend failed");
  }

  override async onResume(approver: string): Promise<void> {
    this.resumes.push(approver);
    this.timeline.push(`onResume:${approver}`);
  }

  /** `[decider, suspensionId, reason]` of every `onDeny`. */
  readonly denies: Array<[string, string, string]> = [];

  override async onDeny(decider: string, marker: SuspensionMarker, reason: string): Promise<void> {
    this.denies.push([decider, marker.suspensionId, reason]);
    this.timeline.push(`onDeny:${decider}`);
  }
}

/** Options of {@link suspendedRig}: the rig's, and the agent's name, options and pause reason. */
export interface SuspendedRigOptions extends RigOptions {
  /** The agent's name. @defaultValue "a" */
  name?: string;
  /** The agent's own options. */
  agentOptions?: ConstructorParameters<typeof Pausable>[1];
  /** The reason given to `runtime.suspend`. @defaultValue "hold" */
  reason?: string;
}

/** A started {@link rig} of one {@link Pausable}, paused by `runtime.suspend(name, reason)`; asserts it is SUSPENDED. */
export async function suspendedRig(options: SuspendedRigOptions = {}): Promise<Rig & { readonly agent: Pausable }> {
  const { name = "a", agentOptions, reason = "hold", ...rigOptions } = options;
  const agent = new Pausable(name, agentOptions);
  const r = rig([agent], rigOptions);
  await r.runtime.start();
  await r.runtime.suspend(name, reason);
  expect(agent.status).toBe(ProcessStatus.SUSPENDED);
  return { agent, ...r };
}

/** A started {@link rig} of one {@link Pausable} named `name`, not paused. */
export async function pausableRig(name = "a", options: RigOptions = {}): Promise<Rig & { readonly agent: Pausable }> {
  const agent = new Pausable(name);
  return { agent, ...(await startedRig([agent], options)) };
}

/**
 * Watches a parked agent (a {@link suspendedRig}'s) for what a refused
 * decision must not do: wake its loop (anything sent to it would make it
 * poll its priority lane), queue a control message, write a receipt or the
 * store. Call it before the decision; the check it returns waits `settleTurns`
 * microtask turns, then expects nothing of that and the agent still SUSPENDED.
 */
export function watchNothingSent(r: Rig & { readonly agent: Pausable }): (settleTurns: number) => Promise<void> {
  const pollPriority = vi.spyOn(r.agent.mailbox, "pollPriority");
  const poll = vi.spyOn(r.agent.mailbox, "poll");
  const prioBefore = r.agent.mailbox.prioritySize;
  const eventsBefore = r.audit.events.length;
  const setsBefore = r.store.sets.length;
  return async (settleTurns) => {
    await turns(settleTurns);
    expect(pollPriority).not.toHaveBeenCalled();
    expect(poll).not.toHaveBeenCalled();
    expect(r.agent.mailbox.prioritySize).toBe(prioBefore);
    expect(r.audit.events.length).toBe(eventsBefore);
    expect(r.store.sets.length).toBe(setsBefore);
    expect(r.agent.status).toBe(ProcessStatus.SUSPENDED);
  };
}

/** A {@link suspendedRig} whose `authorizeResume` throws `boom` ("policy engine down"). */
export async function suspendedRigWithThrowingAuthorizer(): Promise<Rig & { readonly agent: Pausable; readonly boom: Error }> {
  const boom = new Error("policy engine down");
  const r = await suspendedRig({
    authorizeResume: () => {
      throw boom;
    },
  });
  return { ...r, boom };
}

/**
 * Checks that `decision` (a resume or deny of the paused "a") is refused with
 * RESUME_REFUSED carrying `cause` (what the authorizeResume hook threw or
 * rejected with), and that "a" stays SUSPENDED.
 */
export async function expectRefusedWithCause(agent: Pausable, decision: Promise<unknown>, cause: unknown): Promise<void> {
  const error = await rejectsWithCode(decision, "RESUME_REFUSED");
  expect(error.cause).toBe(cause);
  expect(agent.status).toBe(ProcessStatus.SUSPENDED);
}

/**
 * Checks that a resume of the paused "a" by `approver` is refused with
 * INVALID_APPROVER and that "a" stays SUSPENDED; returns the rig.
 */
export async function refusedApprover(approver: string): Promise<Rig & { readonly agent: Pausable }> {
  const r = await suspendedRig();
  await rejectsWithCode(r.runtime.resume("a", approver), "INVALID_APPROVER");
  expect(r.agent.status).toBe(ProcessStatus.SUSPENDED);
  return r;
}

/**
 * The business agent of the lifecycle model tests: records the id of each
 * message (`LIFECYCLE_ID_KEY` of its payload) in its state and checkpoints,
 * so every business message is a store write; with `yieldFirst` it yields to
 * the event loop first (so its handling overlaps more of what runs around it).
 */
export class Tally extends AgentProcess<{ ids: number[] }> {
  override state = { ids: [] as number[] };
  constructor(
    name: string,
    private readonly yieldFirst = false,
  ) {
    super(name);
  }
  override async handle(message: Message): Promise<void> {
    if (this.yieldFirst) await settle();
    this.state.ids.push(message.payload[LIFECYCLE_ID_KEY] as number);
    await this.checkpoint();
  }
}

/** Options of {@link dynamicRig}: the rig's, and the DynamicSupervisor's. */
export interface DynamicRigOptions extends RigOptions {
  /** Options of the DynamicSupervisor "dyn", applied after `backoffBaseMs: 0`. */
  dynamic?: ConstructorParameters<typeof DynamicSupervisor>[1];
}

/** A started {@link rig} whose root Supervisor holds one DynamicSupervisor, "dyn" (restarts without backoff unless `dynamic` says otherwise). */
export async function dynamicRig(options: DynamicRigOptions = {}): Promise<{ readonly r: Rig; readonly dyn: DynamicSupervisor; readonly store: RecordingStore }> {
  const { dynamic, ...rigOptions } = options;
  const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0, ...dynamic });
  const r = rig(new Supervisor("root", { children: [dyn] }), rigOptions);
  await r.runtime.start();
  return { r, dyn, store: r.store };
}

/** A {@link dynamicRig} with one spawned {@link Pausable}, "w", busy in a handler until `blocker` opens. */
export async function busyDynamicWorker(options: DynamicRigOptions = {}): Promise<{ readonly r: Rig; readonly dyn: DynamicSupervisor; readonly store: RecordingStore; readonly w: Pausable; readonly blocker: Gate }> {
  const { r, dyn, store } = await dynamicRig(options);
  const w = await dyn.spawn(Pausable, "w");
  const blocker = gate();
  w.blocker = blocker;
  await r.runtime.send("w", { op: "block", seq: 1 });
  await waitUntil(() => w.entered === 1, "busy");
  return { r, dyn, store, w, blocker };
}

/** A {@link MemoryAuditSink} whose `emit` throws ("disk full") for every event named `failing`, and records the others. */
export function auditFailingOn(failing: string): MemoryAuditSink {
  const audit = new MemoryAuditSink();
  const record = audit.emit.bind(audit);
  audit.emit = (event: AuditEvent): void => {
    if (event.event === failing) throw new Error("disk full");
    record(event);
  };
  return audit;
}

/** What {@link heldAuthorizer} returns. */
export interface HeldAuthorizer {
  /** Pass as the rig's `authorizeResume`: it approves once `decision` is opened (never, if it is not). */
  readonly authorizeResume: AuthorizeResume;
  readonly decision: Gate;
  /** How many times `authorizeResume` has been called. */
  readonly asked: () => number;
}

/** An `authorizeResume` that holds its answer (an approval) until the test opens `decision`. */
export function heldAuthorizer(): HeldAuthorizer {
  const decision = gate();
  let asked = 0;
  return {
    authorizeResume: async () => {
      asked++;
      await decision.promise;
      return true;
    },
    decision,
    asked: () => asked,
  };
}
