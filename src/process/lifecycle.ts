/**
 * The data of one start and of one stop of an agent, each its own record: a
 * new start makes a new {@link StartAttempt} and drops the last
 * {@link StopPlan}, so nothing of one incarnation's start or stop can leak
 * into the next. Which phase the agent is in is its `ProcessStatus` (the one
 * scalar the message loop reads), written only by `ProcessRunner.transition`
 * against the table in process-status.ts.
 * @internal
 */

/** One start of an agent, from `startChild` until the next start replaces it. */
export interface StartAttempt {
  /** The start itself; settles after onStart and, for a restored pause not announced yet, its announcement. */
  done: Promise<void>;
  /** Resolves when the start leaves INITIALIZING (or fails): what a stop during the start waits for. */
  readonly initialized: Promise<void>;
  readonly markInitialized: () => void;
  /**
   * A stop came during this start (this agent's, or the runtime's): its
   * `onStart` gets `shutdownTimeoutMs`, and the loop is begun by the stop,
   * never by the start, so nothing queued is taken first.
   */
  stopAsked: boolean;
  /** Set once the start is over and no stop came during it: from then on anything may wake the loop. */
  loopMayBegin: boolean;
  /** Gives up on the `onStart` running now, after `shutdownTimeoutMs` (set while it runs). */
  abandon: (() => void) | undefined;
}

/** A new attempt whose `done` the caller sets once the start is running. */
export function newStartAttempt(): StartAttempt {
  let markInitialized!: () => void;
  const initialized = new Promise<void>((resolve) => (markInitialized = resolve));
  return { done: initialized, initialized, markInitialized, stopAsked: false, loopMayBegin: false, abandon: undefined };
}

/** What a stop asked for (`requestStop`), kept until the next start. */
export interface StopPlan {
  /** The bound of the stop's steps (its drain, `onStop`): the stop's own `timeoutMs`, else `shutdownTimeoutMs`. */
  readonly timeoutMs: number;
  /** Drain what is queued (`drain: "all"`); cleared when a message fails during the drain. */
  drainAll: boolean;
  /** For a drain-all stop: the business messages taken before this mark were queued when it began (see `Mailbox.businessTakenCount`). */
  readonly drainEnd: number;
}
