import { ProcessStatus } from "../contracts/process-status.js";
import {
  formatCommand,
  isMessageCommand,
  transitionText,
  type ApproverKind,
  type AskOutcome,
  type LifecycleCommand,
  type LifecycleOutcome,
  type LifecycleStep,
  type MessageCommand,
  type StepResult,
  type TransitionText,
} from "./lifecycle-command.js";

/** Options of {@link SuspensionModel}. */
export interface SuspensionModelOptions {
  /**
   * For an agent that suspends itself (checkpoint-and-return, as a payer
   * that holds every large payment for approval): the reason it calls
   * `this.suspend(reason)` with while handling business message `id` (a
   * `send` or an `ask`), or `undefined` when it does not. The model then
   * enters that pause after the message is handled, as it does for a
   * `selfSuspend` command; the agent's `handle` must do the same.
   * @defaultValue the agent never suspends itself
   */
  readonly selfSuspends?: (id: number) => string | undefined;
}

/** The current suspension, as the model numbers it. */
interface ModelSuspension {
  readonly ordinal: number;
  readonly reason: string;
  /** Whether the pause has a deadline (an `elapse` passes it). */
  readonly deadline: boolean;
}

/**
 * A pure reference model of one agent's lifecycle and durable suspension
 * (SPEC §4, §5 and §11): no runtime, no time, no promises. Feed it the
 * commands of a scenario and it says what a correct runtime must do:
 * which business messages are handled and in what order, the status and the
 * suspension after every command, which resumes are refused (and with which
 * code), which are no-ops, and when a suspension is a new one.
 *
 * The rules it encodes:
 * - a RUNNING subject takes its queued business messages in FIFO order; a
 *   SUSPENDED one takes none (they stay queued, in order, across crashes,
 *   sibling restarts and process restarts);
 * - `suspend` of a RUNNING subject starts a new suspension (a new id); of a
 *   SUSPENDED one only updates the reason (same id); `selfSuspend` does the
 *   same from inside `handle`, after that message finishes;
 * - `resume` needs a non-blank approver (`INVALID_APPROVER`, nothing changes);
 *   a `suspensionId` that is not the current suspension is `STALE_APPROVAL`
 *   (nothing changes); a valid resume of a RUNNING subject is a no-op;
 *   `deny` follows the same rules and ends the pause the same way (`denied`);
 * - a `suspend` with `deadline` gives the pause one (on a suspended subject it
 *   replaces it; a `suspend` without keeps it); `elapse` passes every
 *   deadline set so far, so a pause holding one ends (`expired`), as a deny;
 * - a `crash` message escalates: RUNNING → CRASHED → INITIALIZING → RUNNING
 *   (the supervisor restarts it); a SUSPENDED subject never reaches it until resumed;
 * - a sibling crash (ONE_FOR_ALL) or a process restart stops the subject and
 *   starts it again in the state it was in: a suspension is restored, with
 *   its id and reason (a restart never resumes);
 * - `shutdown` stops the subject, unanswered asks reject with
 *   `RUNTIME_STOPPED`, and every later command is ignored;
 * - with {@link SuspensionModelOptions.selfSuspends}, a `send` or `ask` the
 *   agent's own `handle` pauses on suspends it after that message, as a
 *   `selfSuspend` does.
 *
 * @example
 * ```ts
 * const model = new SuspensionModel();
 * model.apply({ kind: "suspend", reason: "review" }).result; // "suspended"
 * model.apply({ kind: "send", id: 0 }).result;               // "queued"
 * model.apply({ kind: "resume", approver: "empty" }).result; // "INVALID_APPROVER"
 * model.apply({ kind: "resume", approver: "valid" }).result; // "resumed"
 * model.outcome().handled;                                   // [0]
 * ```
 */
export class SuspensionModel {
  #status: ProcessStatus = ProcessStatus.RUNNING;
  #suspension: ModelSuspension | undefined;
  #suspensions = 0;
  #stopped = false;
  readonly #queue: MessageCommand[] = [];
  readonly #handled: number[] = [];
  readonly #crashed: number[] = [];
  readonly #asks = new Map<number, AskOutcome>();
  readonly #steps: LifecycleStep[] = [];
  readonly #ids = new Set<number>();
  readonly #selfSuspends: ((id: number) => string | undefined) | undefined;

  /** @throws {@link TypeError} when `selfSuspends` is given and is not a function */
  constructor(options: SuspensionModelOptions = {}) {
    if (options.selfSuspends !== undefined && typeof options.selfSuspends !== "function") {
      throw new TypeError(`SuspensionModel: selfSuspends must be a function (id) => reason | undefined, got ${typeof options.selfSuspends}`);
    }
    this.#selfSuspends = options.selfSuspends;
  }

  /** The predicted outcome of running `commands` on a fresh subject (one that suspends itself as `options` say). */
  static run(commands: readonly LifecycleCommand[], options: SuspensionModelOptions = {}): LifecycleOutcome {
    const model = new SuspensionModel(options);
    for (const command of commands) model.apply(command);
    return model.outcome();
  }

  /** The subject's status now. */
  get status(): ProcessStatus {
    return this.#status;
  }

  /** The current suspension (numbered from 1), or `undefined` when not suspended. */
  get suspension(): { readonly ordinal: number; readonly reason: string } | undefined {
    return this.#suspension;
  }

  /** Ids of the messages waiting for the subject, in order. */
  get queued(): readonly number[] {
    return this.#queue.map((command) => command.id);
  }

  /** Whether a `shutdown` has been applied. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * Applies one command and returns the step it predicts.
   * @throws {@link TypeError} for a malformed command or a message id used twice
   */
  apply(command: LifecycleCommand): LifecycleStep {
    const transitions: TransitionText[] = [];
    const result = this.#stopped ? "ignored" : this.#apply(command, transitions);
    const step: LifecycleStep = {
      command,
      result,
      status: this.#status,
      suspension: this.#suspension?.ordinal ?? null,
      reason: this.#suspension?.reason ?? null,
      transitions,
    };
    this.#steps.push(step);
    return step;
  }

  /** The outcome predicted so far. */
  outcome(): LifecycleOutcome {
    const asks: Record<number, AskOutcome> = {};
    for (const [id, outcome] of this.#asks) asks[id] = outcome;
    return {
      steps: [...this.#steps],
      handled: [...this.#handled],
      crashed: [...this.#crashed],
      unhandled: this.queued,
      asks,
      stored: this.#suspension?.ordinal ?? null,
    };
  }

  #apply(command: LifecycleCommand, transitions: TransitionText[]): StepResult {
    if (isMessageCommand(command)) return this.#enqueue(command, transitions);
    switch (command.kind) {
      case "suspend":
        if (this.#suspension !== undefined) {
          this.#suspension = { ...this.#suspension, reason: command.reason, deadline: this.#suspension.deadline || command.deadline === true };
          return "updated";
        }
        this.#enterSuspended(command.reason, transitions, command.deadline === true);
        return "suspended";
      case "resume":
        return this.#resume(command.approver, transitions, "resumed");
      case "deny":
        return this.#resume(command.approver, transitions, "denied");
      case "elapse":
        if (this.#suspension?.deadline !== true) return "noop";
        this.#lift(transitions);
        return "expired";
      case "siblingCrash":
      case "restart": {
        const status = this.#status;
        this.#move(ProcessStatus.STOPPING, transitions);
        this.#move(ProcessStatus.STOPPED, transitions);
        // A new instance (process restart) starts in INITIALIZING without an event of its own.
        if (command.kind === "siblingCrash") this.#move(ProcessStatus.INITIALIZING, transitions);
        else this.#status = ProcessStatus.INITIALIZING;
        this.#move(status, transitions);
        this.#drain(transitions);
        return "restarted";
      }
      case "shutdown":
        this.#move(ProcessStatus.STOPPING, transitions);
        this.#move(ProcessStatus.STOPPED, transitions);
        this.#stopped = true;
        for (const queued of this.#queue) if (queued.kind === "ask") this.#asks.set(queued.id, "RUNTIME_STOPPED");
        return "stopped";
      default:
        throw new TypeError(`SuspensionModel: unknown command ${JSON.stringify(command)}`);
    }
  }

  #enqueue(command: MessageCommand, transitions: TransitionText[]): StepResult {
    if (!Number.isInteger(command.id) || this.#ids.has(command.id)) {
      throw new TypeError(`SuspensionModel: ${formatCommand(command)} needs an integer id not used before in the scenario`);
    }
    this.#ids.add(command.id);
    if (command.kind === "ask") this.#asks.set(command.id, "pending");
    this.#queue.push(command);
    this.#drain(transitions);
    return this.#queue.includes(command) ? "queued" : "handled";
  }

  #resume(approver: ApproverKind, transitions: TransitionText[], lifted: "resumed" | "denied"): StepResult {
    switch (approver) {
      case "empty":
      case "whitespace":
        return "INVALID_APPROVER";
      case "stale":
        return "STALE_APPROVAL";
      case "valid":
        if (this.#suspension === undefined) return "noop";
        this.#lift(transitions);
        return lifted;
      default:
        throw new TypeError(`SuspensionModel: unknown approver kind ${JSON.stringify(approver)}`);
    }
  }

  /** A RUNNING subject takes queued messages, oldest first, until it suspends itself or the queue is empty. */
  #drain(transitions: TransitionText[]): void {
    while (this.#status === ProcessStatus.RUNNING) {
      const next = this.#queue.shift();
      if (next === undefined) return;
      switch (next.kind) {
        case "send":
        case "ask": {
          this.#handled.push(next.id);
          if (next.kind === "ask") this.#asks.set(next.id, "replied");
          const reason = this.#selfSuspends?.(next.id);
          if (reason !== undefined) this.#enterSuspended(reason, transitions);
          break;
        }
        case "selfSuspend":
          this.#handled.push(next.id);
          this.#enterSuspended(next.reason, transitions);
          break;
        case "crash":
          this.#crashed.push(next.id);
          this.#move(ProcessStatus.CRASHED, transitions);
          this.#move(ProcessStatus.INITIALIZING, transitions);
          this.#move(ProcessStatus.RUNNING, transitions);
          break;
      }
    }
  }

  /** Ends the pause (a resume, deny or expiry): RUNNING again, and the queue drains. */
  #lift(transitions: TransitionText[]): void {
    this.#suspension = undefined;
    this.#move(ProcessStatus.RUNNING, transitions);
    this.#drain(transitions);
  }

  #enterSuspended(reason: string, transitions: TransitionText[], deadline = false): void {
    this.#suspension = { ordinal: ++this.#suspensions, reason, deadline };
    this.#move(ProcessStatus.SUSPENDED, transitions);
  }

  #move(to: ProcessStatus, transitions: TransitionText[]): void {
    transitions.push(transitionText(this.#status, to));
    this.#status = to;
  }
}
