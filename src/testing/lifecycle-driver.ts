import { InvalidArgumentError } from "../errors/errors.js";
import type { Logger } from "../logging/logger.js";
import type { JsonObject } from "../message/json.js";
import { AgentProcess } from "../process/agent-process.js";
import { ProcessStatus } from "../process/process-status.js";
import { SUSPENSION_KEY } from "../state/suspension-marker.js";
import { Runtime } from "../runtime/runtime.js";
import { InMemoryStateStore } from "../state/in-memory-state-store.js";
import type { StateStore } from "../state/state-store.js";
import { Supervisor } from "../supervision/supervisor.js";
import type { Clock } from "../time/clock.js";
import { approvalOf, codeOf, resultOf } from "./lifecycle-calls.js";
import { CRASH_MESSAGE_TYPE, instrument, LIFECYCLE_ID_KEY, SELF_SUSPEND_MESSAGE_TYPE } from "./instrument.js";
import {
  formatCommand,
  LIFECYCLE_DEADLINE_MS,
  isMessageCommand,
  transitionText,
  type AskOutcome,
  type LifecycleCommand,
  type LifecycleOutcome,
  type LifecycleStep,
  type MessageCommand,
  type StepResult,
} from "./lifecycle-command.js";
import { recordingLogger, type HandledRecord, type LifecycleDriverOptions, type LifecycleObservation, type ObservedAuditEvent, type ObservedTransition } from "./lifecycle-observation.js";
import { settle, TestClock } from "./test-clock.js";
import { WaitTimeoutError } from "./wait-for-status.js";

interface AskRecord {
  attempt: number;
  outcome: AskOutcome;
}

/**
 * Runs lifecycle commands against a real {@link Runtime} and records what
 * happens, for comparison with {@link SuspensionModel}. The subject runs
 * under a ONE_FOR_ALL supervisor (no backoff, unlimited restarts) next to a
 * sibling, on one store shared by every runtime of the scenario. After each
 * command the driver waits until everything it set off has settled (the
 * subject idle, RUNNING with an empty mailbox or SUSPENDED; the sibling
 * idle and RUNNING), then records the step.
 *
 * Use {@link runLifecycleCommands} for a whole scenario, or drive it step by
 * step (`start`, `apply`, `finish`) inside your own `fc.commands` model.
 */
export class LifecycleDriver {
  readonly #options: LifecycleDriverOptions;
  readonly #name: string;
  readonly #siblingName: string;
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #audit: ObservedAuditEvent[] = [];
  readonly #logs: string[] = [];
  readonly #logger: Logger;
  readonly #settleTimeoutMs: number;
  #runtime: Runtime | undefined;
  #subject: AgentProcess | undefined;
  #sibling: AgentProcess | undefined;
  #instance = -1;
  #step = -1;
  #stopped = false;
  #activity = 0;
  #inFlight = 0;
  readonly #sent: MessageCommand[] = [];
  readonly #taken = new Set<number>();
  readonly #handled: number[] = [];
  readonly #crashed: number[] = [];
  readonly #asks = new Map<number, AskRecord>();
  readonly #entries: HandledRecord[] = [];
  readonly #transitions: ObservedTransition[] = [];
  readonly #suspensionIds: string[] = [];
  readonly #steps: LifecycleStep[] = [];

  constructor(options: LifecycleDriverOptions = {}) {
    this.#options = options;
    this.#name = options.agentName ?? "subject";
    this.#siblingName = options.siblingName ?? "sibling";
    if (this.#name === this.#siblingName) throw new InvalidArgumentError("siblingName", `LifecycleDriver: the subject and the sibling need different names, both are '${this.#name}'`);
    this.#store = options.store ?? new InMemoryStateStore();
    this.#clock = options.clock ?? new TestClock();
    this.#settleTimeoutMs = options.settleTimeoutMs ?? 5000;
    this.#logger = recordingLogger(this.#logs, options.logger);
  }

  /** The runtime now in use (a process restart replaces it). */
  get runtime(): Runtime {
    if (this.#runtime === undefined) throw new InvalidArgumentError("driver", "LifecycleDriver: call start() first");
    return this.#runtime;
  }

  /** The subject instance now in use. */
  get agent(): AgentProcess {
    if (this.#subject === undefined) throw new InvalidArgumentError("driver", "LifecycleDriver: call start() first");
    return this.#subject;
  }

  /** Builds the first runtime, starts it and waits until it has settled. */
  async start(): Promise<void> {
    if (this.#runtime !== undefined) return;
    await this.#boot();
    await this.#settle("start");
  }

  /** Applies one command, waits until it has settled and returns what was observed. */
  async apply(command: LifecycleCommand): Promise<LifecycleStep> {
    if (this.#runtime === undefined) await this.start();
    this.#step = this.#steps.length;
    const from = this.#transitions.length;
    let result: StepResult | undefined;
    if (this.#stopped) {
      result = "ignored";
    } else {
      const suspended = this.agent.suspension?.suspensionId;
      const incarnation = this.agent.incarnation;
      try {
        result = await this.#run(command, suspended);
      } catch (error) {
        result = resultOf(error);
      }
      if (this.#options.settleAfter?.(command, this.#step) ?? true) await this.#settle(formatCommand(command));
      if (result === undefined && isMessageCommand(command)) result = this.#taken.has(command.id) ? "handled" : "queued";
      if (result === undefined && command.kind === "elapse") {
        const step = this.#step;
        result = this.#audit.some((e) => e.step === step && e.event === "agent.deny" && e.agent === this.#name && e.details.expired === true) ? "expired" : "noop";
      }
      if (result === undefined) result = this.agent.incarnation > incarnation ? "restarted" : "noop";
    }
    const marker = this.agent.suspension;
    const step: LifecycleStep = {
      command,
      result,
      status: this.agent.status,
      suspension: marker === undefined ? null : this.#ordinal(marker.suspensionId),
      reason: marker === undefined ? null : marker.reason,
      transitions: this.#transitions.slice(from).map((t) => transitionText(t.from, t.to)),
    };
    this.#steps.push(step);
    return step;
  }

  /**
   * Records how the asks ended, stops the runtime (unless a `shutdown` did),
   * reads the suspension marker left in the store and returns the observation.
   */
  async finish(): Promise<LifecycleObservation> {
    try {
      if (this.#runtime !== undefined) await this.#settle("the last command");
    } catch (error) {
      await this.dispose();
      throw error;
    }
    const asks: Record<number, AskOutcome> = {};
    for (const [id, record] of this.#asks) {
      asks[id] = record.outcome;
      record.attempt++; // what the clean-up does to a pending ask is not part of the scenario
    }
    let outcome: LifecycleOutcome = {
      steps: [...this.#steps],
      handled: [...this.#handled],
      crashed: [...this.#crashed],
      unhandled: this.#sent.filter((c) => !this.#taken.has(c.id)).map((c) => c.id),
      asks,
      stored: null,
    };
    this.#step = this.#steps.length;
    await this.dispose();
    const stored = await this.#store.get(this.#name);
    const storedMarker = stored?.[SUSPENSION_KEY] as { suspensionId?: unknown } | undefined;
    outcome = { ...outcome, stored: typeof storedMarker?.suspensionId === "string" ? this.#ordinal(storedMarker.suspensionId) : null };
    return {
      outcome,
      entries: [...this.#entries],
      transitions: [...this.#transitions],
      suspensionIds: [...this.#suspensionIds],
      audit: [...this.#audit],
      logs: [...this.#logs],
    };
  }

  /** Stops the runtime if it still runs (waiting at most the settle timeout). Idempotent. */
  async dispose(): Promise<void> {
    const runtime = this.#runtime;
    if (runtime === undefined || this.#stopped) return;
    this.#stopped = true;
    await Promise.race([runtime.stop().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, this.#settleTimeoutMs).unref())]);
  }

  async #run(command: LifecycleCommand, suspended: string | undefined): Promise<StepResult | undefined> {
    const runtime = this.runtime;
    switch (command.kind) {
      case "send":
      case "ask":
      case "selfSuspend":
      case "crash":
        this.#sent.push(command);
        await this.#deliver(command);
        return undefined;
      case "suspend":
        await runtime.suspend(this.#name, command.reason, command.deadline === true ? { expiresInMs: LIFECYCLE_DEADLINE_MS } : {});
        return suspended === undefined ? "suspended" : "updated";
      case "elapse": {
        if (!(this.#clock instanceof TestClock)) throw new InvalidArgumentError("clock", "LifecycleDriver: an 'elapse' command needs the driver's clock to be a TestClock");
        await this.#clock.advance(LIFECYCLE_DEADLINE_MS);
        return undefined; // told apart once the step has settled: "expired" when the expiry's receipt is on record
      }
      case "deny": {
        const { approver: decider, suspensionId } = approvalOf(command, this.#step, suspended, this.#suspensionIds, this.#clock);
        await runtime.deny(this.#name, decider, suspensionId === undefined ? {} : { suspensionId });
        return this.#audit.some((e) => e.event === "agent.deny" && e.agent === this.#name && e.details.decider === decider) ? "denied" : "noop";
      }
      case "resume": {
        const { approver, suspensionId } = approvalOf(command, this.#step, suspended, this.#suspensionIds, this.#clock);
        await runtime.resume(this.#name, approver, suspensionId === undefined ? {} : { suspensionId });
        // The receipt comes before the effect, and every step has its own approver: a receipt naming
        // this one means the resume lifted a pause. (Whether the subject was paused when the command
        // was issued says nothing when commands overlap: a pause asked for earlier may land in between.)
        return this.#audit.some((e) => e.event === "agent.resume" && e.agent === this.#name && e.details.approver === approver) ? "resumed" : "noop";
      }
      case "siblingCrash":
        await runtime.send(this.#siblingName, { [LIFECYCLE_ID_KEY]: -1 }, { type: CRASH_MESSAGE_TYPE });
        return undefined;
      case "restart":
        for (const record of this.#asks.values()) record.attempt++; // the old runtime's refusals are superseded by the re-sent asks
        await runtime.stop();
        await this.#boot();
        for (const pending of this.#sent) if (!this.#taken.has(pending.id)) await this.#deliver(pending);
        return "restarted";
      case "shutdown":
        this.#stopped = true;
        await runtime.stop();
        return "stopped";
      default:
        throw new InvalidArgumentError("command", `LifecycleDriver: unknown command ${JSON.stringify(command)}`);
    }
  }

  async #deliver(command: MessageCommand): Promise<void> {
    const runtime = this.runtime;
    const id = command.id;
    switch (command.kind) {
      case "send":
        await runtime.send(this.#name, this.#payload(id), this.#typeOption());
        return;
      case "ask": {
        const record = this.#asks.get(id) ?? { attempt: 0, outcome: "pending" };
        record.outcome = "pending";
        this.#asks.set(id, record);
        const attempt = record.attempt;
        runtime.ask(this.#name, this.#payload(id), this.#typeOption()).then(
          () => {
            if (record.attempt === attempt) record.outcome = "replied";
          },
          (error: unknown) => {
            if (record.attempt === attempt) record.outcome = codeOf(error);
          },
        );
        return;
      }
      case "selfSuspend":
        await runtime.send(this.#name, { [LIFECYCLE_ID_KEY]: id, reason: command.reason }, { type: SELF_SUSPEND_MESSAGE_TYPE });
        return;
      case "crash":
        await runtime.send(this.#name, { [LIFECYCLE_ID_KEY]: id }, { type: CRASH_MESSAGE_TYPE });
        return;
    }
  }

  #payload(id: number): JsonObject {
    return { ...(this.#options.payload?.(id) ?? {}), [LIFECYCLE_ID_KEY]: id };
  }

  #typeOption(): { type: string } | undefined {
    return this.#options.messageType === undefined ? undefined : { type: this.#options.messageType };
  }

  /** Builds a runtime with new instances of both agents and starts it. */
  async #boot(): Promise<void> {
    const instance = ++this.#instance;
    const subject = this.#options.createAgent?.(this.#name) ?? new AgentProcess(this.#name);
    if (!(subject instanceof AgentProcess) || subject.name !== this.#name) {
      throw new InvalidArgumentError("createAgent", `LifecycleDriver: createAgent('${this.#name}') must return a new AgentProcess named '${this.#name}'`);
    }
    const sibling = new AgentProcess(this.#siblingName);
    instrument(subject, {
      entered: (id, status, incarnation) => {
        this.#activity++;
        this.#taken.add(id);
        this.#entries.push({ id, status, instance, incarnation, step: this.#step });
        if (this.#sent.find((c) => c.id === id)?.kind === "crash") this.#crashed.push(id);
      },
      completed: (id) => {
        this.#activity++;
        this.#handled.push(id);
      },
      busy: (delta) => {
        this.#activity++;
        this.#inFlight += delta;
      },
    });
    instrument(sibling, {
      entered: () => this.#activity++,
      completed: () => this.#activity++,
      busy: (delta) => {
        this.#activity++;
        this.#inFlight += delta;
      },
    });
    const user = this.#options.auditSink;
    const runtime = new Runtime({
      ...this.#options.runtimeOptions,
      root: new Supervisor(`${this.#name}-supervisor`, {
        strategy: "ONE_FOR_ALL",
        children: [subject, sibling],
        maxRestarts: 1_000_000,
        backoffBaseMs: 0,
      }),
      store: this.#store,
      clock: this.#clock,
      logger: this.#logger,
      auditSink: {
        emit: (event) => {
          this.#activity++;
          this.#audit.push({ ...event, step: this.#step });
          if (event.agent === this.#name && event.event === "agent.suspend" && typeof event.details.suspensionId === "string") this.#ordinal(event.details.suspensionId);
          return user?.emit(event);
        },
      },
    });
    runtime.on("agent.status", (agent, from, to) => {
      this.#activity++;
      if (agent === this.#name) this.#transitions.push({ from, to, instance, step: this.#step });
    });
    this.#runtime = runtime;
    this.#subject = subject;
    this.#sibling = sibling;
    await runtime.start();
  }

  /** The number of suspension `id` (1, 2 …, in the order they were first seen). */
  #ordinal(id: string): number {
    let index = this.#suspensionIds.indexOf(id);
    if (index < 0) index = this.#suspensionIds.push(id) - 1;
    return index + 1;
  }

  #quiet(): boolean {
    if (this.#stopped) return true;
    const subject = this.agent;
    const sibling = this.#sibling as AgentProcess;
    if (this.#inFlight > 0 || sibling.status !== ProcessStatus.RUNNING || sibling.mailbox.size > 0 || sibling.mailbox.prioritySize > 0) return false;
    if (subject.mailbox.prioritySize > 0) return false;
    return subject.status === ProcessStatus.SUSPENDED || (subject.status === ProcessStatus.RUNNING && subject.mailbox.size === 0);
  }

  /** Waits until the subject and sibling are quiet and nothing has happened for three turns of the event loop. */
  async #settle(what: string): Promise<void> {
    const deadline = Date.now() + this.#settleTimeoutMs;
    const error = new WaitTimeoutError(this.#name, this.#settleTimeoutMs, `'${this.#name}' did not settle within ${this.#settleTimeoutMs} ms after ${what}`);
    let calm = 0;
    let seen = -1;
    for (;;) {
      await settle();
      const quiet = this.#quiet();
      calm = quiet && seen === this.#activity ? calm + 1 : 0;
      seen = this.#activity;
      if (calm >= 3) return;
      if (Date.now() > deadline) {
        const subject = this.agent;
        error.lastStatus = subject.status;
        error.message += ` (it is ${subject.status} with ${subject.mailbox.size} business and ${subject.mailbox.prioritySize} priority messages queued; the sibling is ${this.#sibling?.status}; ${this.#inFlight} handlers running)`;
        throw error;
      }
    }
  }
}
