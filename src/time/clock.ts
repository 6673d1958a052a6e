/** Handle of a timer armed through a {@link Clock}. */
export interface TimerHandle {
  /** Disarms the timer; a no-op if it already fired. */
  cancel(): void;
}

/**
 * The source of time for everything in the runtime: message timestamps, TTL,
 * ask timeouts, restart windows and backoff. Inject a {@link TestClock}
 * (from `civitas-ts/testing`) for deterministic time in tests.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `delayMs`. Timers must not keep the process alive. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
}

/** The wall clock: `Date.now()` and `unref()`ed Node timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, delayMs) {
    // Node fires a timer of more than 2^31 - 1 ms after 1 ms: arm long delays in steps.
    const dueMs = Date.now() + delayMs;
    let timer: NodeJS.Timeout;
    const arm = (remainingMs: number): void => {
      timer = setTimeout(remainingMs > MAX_TIMER_MS ? () => arm(dueMs - Date.now()) : fn, Math.min(Math.max(remainingMs, 0), MAX_TIMER_MS));
      timer.unref();
    };
    arm(delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
};

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Resolves after `delayMs` on `clock`, or rejects with `signal.reason` when aborted. */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      timer.cancel();
      reject(signal?.reason as Error);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Formats epoch milliseconds as ISO-8601 UTC with milliseconds. */
export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
