import type { Clock } from "./clock.js";

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
