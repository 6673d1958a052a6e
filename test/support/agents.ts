/**
 * Reusable test agents and helpers for supervision tests.
 *
 * `Probe` is an agent driven by the `op` of each message payload:
 * - `{ op: "work", seq }` records `seq` in `handled` (after a yield to the event loop);
 * - `{ op: "crash" }` throws, and `onError` escalates (the agent crashes);
 * - `{ op: "exit" }` throws, and `onError` answers `ErrorAction.STOP` (a normal exit);
 * - `{ op: "hang", seq? }` blocks until `release()` (or forever when never released);
 * - `{ op: "echo" }` replies `{ from, incarnation }`.
 * Every hook call is counted and, when a journal is given, recorded as `start:<name>` / `stop:<name>`.
 */
import { AgentProcess } from "../../src/process/agent-process.js";
import { ErrorAction } from "../../src/process/error-action.js";
import type { Message } from "../../src/message/message.js";
import type { JsonObject } from "../../src/message/json.js";
import type { ChildTerminationReason } from "../../src/process/dynamic-host.js";
import { Runtime } from "../../src/runtime/runtime.js";
import type { RuntimeOptions } from "../../src/runtime/runtime-options.js";
import { TestClock, settle } from "../../src/testing/test-clock.js";
import { MemoryAuditSink } from "../../src/audit/memory-audit-sink.js";
import { silentLogger } from "../../src/logging/logger.js";
import { CivitasError } from "../../src/errors/civitas-error.js";
import { DynamicSupervisor } from "../../src/supervision/dynamic-supervisor.js";
import { Supervisor } from "../../src/supervision/supervisor.js";
import { expect } from "vitest";

/** The options argument every agent constructor takes. */
export type ProbeOptions = ConstructorParameters<typeof AgentProcess>[1];

/** Thrown by `Probe` for `{ op: "exit" }`; its `onError` turns it into `ErrorAction.STOP`. */
export class ExitRequest extends Error {
  constructor() {
    super("exit requested");
  }
}

/** A promise with its resolve function exposed. */
export interface Gate {
  readonly promise: Promise<void>;
  /** Resolves `promise` (a plain function: it can be passed on detached). */
  readonly open: () => void;
}

/** Creates a {@link Gate}. */
export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A hand-off between agent code that holds and the test that lets it go: see {@link rendezvous}. */
export interface Rendezvous {
  /** Opens once the agent's code has reached {@link Rendezvous.hold}. */
  readonly entered: Gate;
  /** Opened by the test: the held code goes on. */
  readonly proceed: Gate;
  /** Called by the agent's code: opens `entered`, then waits for `proceed`. */
  readonly hold: () => Promise<void>;
}

/**
 * Creates a {@link Rendezvous}: the agent's code calls `hold()` where it must
 * be caught mid-way (a handler, an onError), the test awaits
 * `entered.promise`, acts (a crash, a stop), then calls `proceed.open()`.
 */
export function rendezvous(): Rendezvous {
  const entered = gate();
  const proceed = gate();
  return {
    entered,
    proceed,
    hold: async () => {
      entered.open();
      await proceed.promise;
    },
  };
}

/** The hooks {@link heldHook} can hold. */
export type HeldHookName = "onStart" | "onSuspend" | "handle";

/** An agent class whose hook holds on a gate, with what a test sees of it. */
export interface HeldHook {
  /** The agent class: its hook records that it was entered, then waits until `release` opens. */
  readonly Agent: new (name: string, options?: ProbeOptions) => AgentProcess;
  /** Opens the held hook (every instance's). */
  readonly release: Gate;
  /** Whether the hook has been entered (by any instance). */
  readonly entered: () => boolean;
}

/**
 * An agent class whose `hook` (onStart, onSuspend or handle) marks itself
 * entered, then holds until `release.open()`: the "the hook is busy when the
 * stop, despawn or halt comes" set-up of the lifecycle tests.
 */
export function heldHook(hook: HeldHookName): HeldHook {
  const release = gate();
  let entered = false;
  const hold = async (): Promise<void> => {
    entered = true;
    await release.promise;
  };
  class Held extends AgentProcess {}
  Object.defineProperty(Held.prototype, hook, { value: hold, writable: true, configurable: true });
  return { Agent: Held, release, entered: () => entered };
}

/** See the module comment. */
export class Probe extends AgentProcess {
  /** Calls of `onStart` (also the failed ones). */
  startCalls = 0;
  /** Calls of `onStop`. */
  stopCalls = 0;
  /** `seq` of every `work`/`hang` message handled to the end, in order. */
  readonly handled: number[] = [];
  /** How many `handle` calls are running right now. */
  active = 0;
  /** How many times `handle` was entered while another call was still running. */
  overlaps = 0;
  /** How many times `handle` was entered. */
  entered = 0;
  /** Whether a `hang` message is being handled right now. */
  hanging = false;
  /** `onStart` throws while this is > 0 (it counts down). */
  failStarts = 0;
  /** When set, `onStart` waits for it. */
  startGate: Gate | undefined;
  private hangGate = gate();

  constructor(
    name: string,
    options?: ProbeOptions,
    readonly journal: string[] = [],
  ) {
    super(name, options);
  }

  /** Lets the `hang` message being handled (and the next one) finish. */
  release(): void {
    this.hangGate.open();
    this.hangGate = gate();
  }

  override async onStart(): Promise<void> {
    this.startCalls++;
    this.journal.push(`start:${this.name}`);
    if (this.startGate !== undefined) await this.startGate.promise;
    if (this.failStarts > 0) {
      this.failStarts--;
      throw new Error(`onStart of ${this.name} failed`);
    }
  }

  override async onStop(): Promise<void> {
    this.stopCalls++;
    this.journal.push(`stop:${this.name}`);
  }

  override async handle(message: Message): Promise<Message | void> {
    this.entered++;
    if (this.active > 0) this.overlaps++;
    this.active++;
    try {
      await settle();
      const { op, seq } = message.payload;
      switch (op) {
        case "crash":
          throw new Error(`boom in ${this.name}`);
        case "exit":
          throw new ExitRequest();
        case "hang": {
          this.hanging = true;
          try {
            await this.hangGate.promise;
          } finally {
            this.hanging = false;
          }
          break;
        }
        case "echo":
          return this.reply({ from: this.name, incarnation: this.incarnation });
        default:
          break;
      }
      await settle();
      if (typeof seq === "number") this.handled.push(seq);
    } finally {
      this.active--;
    }
  }

  override async onError(error: unknown): Promise<ErrorAction> {
    return error instanceof ExitRequest ? ErrorAction.STOP : ErrorAction.ESCALATE;
  }
}

/**
 * An agent that spawns, despawns and stops agents through its own
 * `DynamicSupervisor` when asked, and records what it is told about them.
 * `{ op: "spawn", name, options? }`, `{ op: "despawn", name }`, `{ op: "stop", name }`
 * reply `{ ok: true }` or `{ ok: false, code }`.
 */
export class Spawner extends Probe {
  /** Every `onChildTerminated(name, reason)` call, in order. */
  readonly terminated: Array<{ name: string; reason: ChildTerminationReason }> = [];

  override async handle(message: Message): Promise<Message | void> {
    const { op, name, options } = message.payload;
    if (op !== "spawn" && op !== "despawn" && op !== "stop") return super.handle(message);
    try {
      if (op === "spawn") await this.spawn(Probe, name as string, (options ?? {}) as JsonObject);
      else if (op === "despawn") await this.despawn(name as string);
      else await this.stop(name as string, { drain: "current" });
      return this.reply({ ok: true });
    } catch (error) {
      return this.reply({ ok: false, code: error instanceof CivitasError ? error.code : String(error) });
    }
  }

  override async onChildTerminated(name: string, reason: ChildTerminationReason): Promise<void> {
    this.terminated.push({ name, reason });
  }
}

/** Lets `turns` turns of the event loop run. */
export async function turns(count = 10): Promise<void> {
  for (let i = 0; i < count; i++) await settle();
}

/** Waits (turn by turn of the event loop, at most `maxTurns`) until `predicate()` holds. */
export async function waitUntil(predicate: () => boolean, what: string, maxTurns = 5000): Promise<void> {
  for (let i = 0; i < maxTurns; i++) {
    if (predicate()) return;
    await settle();
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** A runtime on a {@link TestClock}, with a silent logger and an in-memory audit sink. */
export interface Harness {
  readonly runtime: Runtime;
  readonly clock: TestClock;
  readonly audit: MemoryAuditSink;
}

const live = new Map<Runtime, TestClock>();

/** Builds a runtime for `root` on a fresh {@link TestClock}; {@link stopAll} stops it. */
export function harness(root: RuntimeOptions["root"], options: Omit<RuntimeOptions, "root"> = {}): Harness {
  const clock = new TestClock();
  const audit = new MemoryAuditSink();
  const runtime = new Runtime({ clock, logger: silentLogger, auditSink: audit, ...options, root });
  live.set(runtime, clock);
  return { runtime, clock, audit };
}

/**
 * A started {@link harness} whose root holds one DynamicSupervisor "dyn" (no
 * restart backoff), with a `Boss` ({@link Spawner} or a subclass) spawned in
 * it as "boss", which has spawned the {@link Probe} "w" (checked).
 */
export async function bossWithChild<B extends Spawner>(Boss: new (name: string, options?: ProbeOptions) => B): Promise<{ dyn: DynamicSupervisor; runtime: Runtime; boss: B }> {
  const dyn = new DynamicSupervisor("dyn", { backoffBaseMs: 0 });
  const { runtime } = harness(new Supervisor("root", { children: [dyn] }));
  await runtime.start();
  const boss = await dyn.spawn(Boss, "boss");
  expect((await runtime.ask("boss", { op: "spawn", name: "w" })).payload).toEqual({ ok: true });
  return { dyn, runtime, boss };
}

/**
 * Stops every runtime {@link harness} built (call it from `afterEach`). A
 * handler that hangs would hold its stop until the shutdown timeout, so the
 * test clock is moved on until each stop is done.
 */
export async function stopAll(): Promise<void> {
  const entries = [...live];
  live.clear();
  await Promise.all(
    entries.map(async ([runtime, clock]) => {
      let done = false;
      const stopping = runtime.stop().then(
        () => (done = true),
        () => (done = true),
      );
      for (let i = 0; i < 50 && !done; i++) await clock.advance(60_000);
      await stopping;
    }),
  );
}

/** `n` probes named `${prefix}0` … sharing `journal`. */
export function probes(n: number, prefix = "p", journal: string[] = [], options?: ProbeOptions): Probe[] {
  return Array.from({ length: n }, (_, i) => new Probe(`${prefix}${i}`, options, journal));
}
