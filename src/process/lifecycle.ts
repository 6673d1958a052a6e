import type { ChildExit } from "../contracts/child.js";
import { ProcessStatus } from "../contracts/process-status.js";

/**
 * The lifecycle phases of an agent, one tagged union: each phase holds only
 * its own data, so nothing of one incarnation's start or stop can leak into
 * the next. `ProcessRunner.enter` is the one writer of the phase and of the
 * public `ProcessStatus` (the scalar the message loop and `wake()` read),
 * checked against {@link PHASES}.
 * @internal
 */
export type Phase = Idle | Starting | Up | Stopping | Down;

/** Never started. */
export interface Idle {
  readonly kind: "idle";
}

/**
 * A start (`startChild`): restoring, `onStart`, then, for a restored pause
 * not announced yet, its announcement. It lasts until the loop may begin:
 * a start a stop came during stays here once over, and hands over to that
 * stop, which alone begins the loop (nothing queued slips in first).
 */
export interface Starting {
  readonly kind: "starting";
  readonly attempt: StartAttempt;
}

/** Started, no stop asked for: RUNNING or SUSPENDED, and anything may wake the loop. */
export interface Up {
  readonly kind: "up";
}

/**
 * Ending the incarnation: a stop asked for (`plan`), one of its own (STOP,
 * halt, shutdown, lost fence) or a crash, until its `onStop`, final status,
 * receipts and (for an end of its own) the parent's notice are done.
 */
export interface Stopping {
  readonly kind: "stopping";
  readonly exit: ChildExit;
  /** What a stop asked for from outside asked for; `undefined` for an end of its own or a crash. */
  readonly plan: StopPlan | undefined;
  /** The whole of the end: what a second stop joins. */
  done: Promise<void>;
  /** A crash's `agent.crash` receipt, recorded as the crash happens: the parent hears of it once it is. */
  crashRecorded: Promise<boolean> | undefined;
  /** The start of this incarnation when it was still running (announcing a restored pause): a new start follows it. */
  readonly unfinished: StartAttempt | undefined;
}

/** Ended: STOPPED or CRASHED, until the next start. */
export interface Down {
  readonly kind: "down";
  readonly exit: ChildExit;
  /** As {@link Stopping.unfinished}: a stop does not wait for a restored pause's announcement. */
  readonly unfinished: StartAttempt | undefined;
}

/** The phase of every agent never started. */
export const IDLE: Idle = Object.freeze({ kind: "idle" });

/** The phase of every started agent no stop was asked of: shared, so an idle agent holds nothing of its start. */
export const UP: Up = Object.freeze({ kind: "up" });

/** What each phase allows: the statuses it may show, and the phases it may change to. */
interface PhaseRule {
  readonly statuses: readonly ProcessStatus[];
  readonly next: readonly Phase["kind"][];
}

/**
 * The phase table. A status change within a phase (INITIALIZING → RUNNING,
 * RUNNING ⇄ SUSPENDED, STOPPING → STOPPED) keeps the phase. Every change is
 * checked against both this table and the status table (process-status.ts).
 */
export const PHASES: Readonly<Record<Phase["kind"], PhaseRule>> = Object.freeze({
  idle: Object.freeze({ statuses: Object.freeze([ProcessStatus.INITIALIZING]), next: Object.freeze(["starting"] as const) }),
  starting: Object.freeze({
    statuses: Object.freeze([ProcessStatus.INITIALIZING, ProcessStatus.RUNNING, ProcessStatus.SUSPENDED]),
    next: Object.freeze(["starting", "up", "stopping"] as const),
  }),
  up: Object.freeze({ statuses: Object.freeze([ProcessStatus.RUNNING, ProcessStatus.SUSPENDED]), next: Object.freeze(["up", "stopping"] as const) }),
  stopping: Object.freeze({
    statuses: Object.freeze([ProcessStatus.STOPPING, ProcessStatus.STOPPED, ProcessStatus.CRASHED]),
    next: Object.freeze(["stopping", "down"] as const),
  }),
  down: Object.freeze({ statuses: Object.freeze([ProcessStatus.STOPPED, ProcessStatus.CRASHED]), next: Object.freeze(["starting"] as const) }),
});

/** Whether a change from phase `from` to phase `to` showing `status` is legal. */
export function isLegalPhase(from: Phase, to: Phase, status: ProcessStatus): boolean {
  return listed(ruleOf(from.kind).next, to.kind) && listed(ruleOf(to.kind).statuses, status);
}

/** {@link PHASES}' rule of `kind` copied into unfrozen arrays of this module's own (see {@link RULES}). */
function ownRule(kind: Phase["kind"]): PhaseRule {
  return { statuses: [...PHASES[kind].statuses], next: [...PHASES[kind].next] };
}

/**
 * {@link PHASES} copied once into arrays nothing else can reach: V8 reads
 * an unfrozen array inline, a frozen one through a call per element (and
 * for-of over it is a call per step).
 */
const RULES = { idle: ownRule("idle"), starting: ownRule("starting"), up: ownRule("up"), stopping: ownRule("stopping"), down: ownRule("down") };

/**
 * The rule of `kind` ({@link RULES}), read by name: a read keyed by the
 * phase's kind is a generic lookup once V8 has seen a few kinds at the site,
 * and every status change makes two.
 */
function ruleOf(kind: Phase["kind"]): PhaseRule {
  switch (kind) {
    case "idle":
      return RULES.idle;
    case "starting":
      return RULES.starting;
    case "up":
      return RULES.up;
    case "stopping":
      return RULES.stopping;
    case "down":
      return RULES.down;
  }
}

/** Whether `list` holds `item`: an indexed loop V8 inlines (includes() is a builtin call; every status change makes these checks). */
function listed<T>(list: readonly T[], item: T): boolean {
  for (let i = 0; i < list.length; i++) if (list[i] === item) return true;
  return false;
}

/**
 * One start of an agent: the data of its `starting` phase. Its
 * `initialized` promise is made only when a stop during the start waits for
 * it: a start nobody stops (every agent of a runtime starting) makes none.
 */
export class StartAttempt {
  /**
   * A stop came during this start (this agent's, or the runtime's): its
   * `onStart` gets `shutdownTimeoutMs`, and the loop is begun by the stop,
   * never by the start, so nothing queued is taken first.
   */
  stopAsked = false;
  /** Set once `done` settles (by the start itself, as it ends). */
  over = false;
  /** Gives up on the `onStart` running now, after `shutdownTimeoutMs` (set while it runs). */
  abandon: (() => void) | undefined;
  #done: Promise<void> | undefined;
  #initialized: Promise<void> | undefined;
  #markInitialized: (() => void) | undefined;
  #isInitialized = false;

  /**
   * The start itself; settles after onStart and, for a restored pause not
   * announced yet, its announcement. Until the caller sets it (while the
   * start runs up to its first wait), `initialized`.
   */
  get done(): Promise<void> {
    return this.#done ?? this.initialized;
  }

  set done(done: Promise<void>) {
    this.#done = done;
  }

  /** Resolves when the start leaves INITIALIZING (or fails): what a stop during the start waits for. */
  get initialized(): Promise<void> {
    if (this.#initialized === undefined) {
      if (this.#isInitialized) this.#initialized = Promise.resolve();
      else this.#initialized = new Promise<void>((resolve) => (this.#markInitialized = resolve));
    }
    return this.#initialized;
  }

  /** The start has left INITIALIZING (or failed). */
  markInitialized(): void {
    this.#isInitialized = true;
    this.#markInitialized?.();
  }
}

/** A new attempt whose `done` the caller sets once the start is running. */
export function newStartAttempt(): StartAttempt {
  return new StartAttempt();
}

/** What a stop asked for from outside (`requestStop`): the data of its `stopping` phase. */
export interface StopPlan {
  /** The bound of the stop's steps (its drain, `onStop`): the stop's own `timeoutMs`, else `shutdownTimeoutMs`. */
  readonly timeoutMs: number;
  /** Drain what is queued (`drain: "all"`); cleared when a message fails during the drain. */
  drainAll: boolean;
  /** For a drain-all stop: the business messages taken before this mark were queued when it began (see `Mailbox.businessTakenCount`). */
  readonly drainEnd: number;
}
