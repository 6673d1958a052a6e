import type { Clock } from "./clock.js";

/**
 * Waits for `promise`; once `signal` is aborted (or if it already is), at
 * most `timeoutMs` more on `clock`. Resolves `true` when it settled in time
 * (whether it fulfilled or rejected), `false` when it was given up on.
 */
export function settlesUnlessAbandoned(promise: Promise<unknown>, signal: AbortSignal, clock: Clock, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let timer: { cancel(): void } | undefined;
    const arm = (): void => {
      timer = clock.setTimeout(() => resolve(false), timeoutMs);
    };
    const done = (): void => {
      signal.removeEventListener("abort", arm);
      timer?.cancel();
      resolve(true);
    };
    if (signal.aborted) arm();
    else signal.addEventListener("abort", arm, { once: true });
    promise.then(done, done);
  });
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
