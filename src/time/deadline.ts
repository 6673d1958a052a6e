import type { Clock, TimerHandle } from "./clock.js";

/**
 * Waits for a promise; once {@link AbandonableWait.abandon} is called, at
 * most `timeoutMs` more on `clock`. What a start waits on `onStart` with: one
 * object and one promise, no AbortController or listener of its own.
 */
export class AbandonableWait {
  /** Resolves `true` when the promise settled in time (whether it fulfilled or rejected), `false` when it was given up on. */
  readonly settled: Promise<boolean>;
  private resolve!: (inTime: boolean) => void;
  private timer: TimerHandle | undefined;
  private over = false;

  constructor(
    promise: Promise<unknown>,
    private readonly clock: Clock,
    private readonly timeoutMs: number,
  ) {
    this.settled = new Promise((resolve) => (this.resolve = resolve));
    const done = (): void => {
      this.over = true;
      this.timer?.cancel();
      this.resolve(true);
    };
    promise.then(done, done);
  }

  /** Gives the promise `timeoutMs` more, no longer; a no-op once it settled or was abandoned. */
  abandon(): void {
    if (this.over || this.timer !== undefined) return;
    this.timer = this.clock.setTimeout(() => {
      this.over = true;
      this.resolve(false);
    }, this.timeoutMs);
  }
}

/**
 * Waits for `promise` at most `timeoutMs` on `clock`. Resolves `true` when it
 * settled in time (whether it fulfilled or rejected), `false` on timeout.
 */
export function settlesWithin(promise: Promise<unknown>, clock: Clock, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(() => resolve(false), timeoutMs);
    const done = (): void => {
      timer.cancel();
      resolve(true);
    };
    promise.then(done, done);
  });
}
