import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";

/** Handle of a timer armed through a {@link Clock}. */
export interface TimerHandle {
  /** Disarms the timer; a no-op if it already fired. */
  cancel(): void;
  /**
   * Makes the timer keep the Node.js process alive until it fires or is
   * cancelled (as Node's `timeout.ref()`). The runtime calls it while an ask
   * waits on the timer, so the ask's timeout always fires. Optional: a clock
   * whose timers hold no process (a test clock) leaves it out.
   */
  ref?(): void;
  /** Undoes {@link TimerHandle.ref}: the timer no longer keeps the process alive. */
  unref?(): void;
}

/**
 * The source of time for everything in the runtime: message timestamps, TTL,
 * ask timeouts, restart windows and backoff. Inject a {@link TestClock}
 * (from `civitas-ts/testing`) for deterministic time in tests.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `delayMs`. Timers must not keep the process alive unless their {@link TimerHandle.ref} is called. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
}

/** The wall clock: `Date.now()` and Node timers, `unref()`ed until their handle's `ref()` is called. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, delayMs) {
    // Node fires a timer of more than 2^31 - 1 ms after 1 ms: arm long delays in steps.
    const dueMs = Date.now() + delayMs;
    let timer: NodeJS.Timeout;
    let held = false;
    const arm = (remainingMs: number): void => {
      timer = setTimeout(remainingMs > MAX_TIMER_MS ? () => arm(dueMs - Date.now()) : fn, Math.min(Math.max(remainingMs, 0), MAX_TIMER_MS));
      if (!held) timer.unref();
    };
    arm(delayMs);
    return {
      cancel: () => clearTimeout(timer),
      ref: () => {
        held = true;
        timer.ref();
      },
      unref: () => {
        held = false;
        timer.unref();
      },
    };
  },
};

const MAX_TIMER_MS = 2 ** 31 - 1;

const NOW_ONLY: readonly "now"[] = Object.freeze(["now"]);

/**
 * `clock` as given in `owner`'s options, refused with `INVALID_ARGUMENT`
 * before anything else happens unless it has the methods `owner` calls
 * (a Mailbox and a state store only read the time; a Runtime also arms timers).
 * @internal
 */
export function checkClock(clock: unknown, owner: string, needs: readonly ("now" | "setTimeout")[] = NOW_ONLY): Clock {
  // An indexed loop, not a filter nor for-of: every agent's mailbox checks its clock, and for-of over the frozen
  // list allocated an iterator and its results on every call (~130 B, even optimized).
  let missing: string[] | undefined;
  for (let i = 0; i < needs.length; i++) {
    const method = needs[i] as "now" | "setTimeout";
    if (typeof (clock as Record<string, unknown> | null)?.[method] !== "function") (missing ??= []).push(method);
  }
  if (missing !== undefined) {
    throw new InvalidArgumentError(
      "clock",
      `${owner} option clock must be a Clock (now() returning epoch ms${needs.includes("setTimeout") ? ", setTimeout(fn, ms) returning { cancel() }" : ""}), got ${describeValue(clock)} without ${missing.join(", ")}; leave it out for the system clock, or pass TestClock from civitas-ts/testing`,
    );
  }
  return clock as Clock;
}

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

const MS3: string[] = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0"));
let cachedSecond = Number.NaN;
let cachedPrefix = "";

/**
 * Formats epoch milliseconds as ISO-8601 UTC with milliseconds
 * (`2026-12-02T20:00:51.123Z`), as `Date#toISOString` does. The text up to
 * the second is cached: marker and audit timestamps are made on hot paths.
 * @throws RangeError for a time `Date` cannot represent
 */
export function isoTime(epochMs: number): string {
  const ms = Math.trunc(epochMs); // as Date does (TimeClip)
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    const iso = new Date(second * 1000).toISOString();
    // Four-digit years only (0000-9999): other years print as ±YYYYYY, formatted in full below.
    if (iso.length !== 24) return new Date(epochMs).toISOString();
    cachedSecond = second;
    cachedPrefix = iso.slice(0, 20);
  }
  return cachedPrefix + (MS3[ms - second * 1000] as string) + "Z";
}
