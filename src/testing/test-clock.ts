import type { Clock, TimerHandle } from "../time/clock.js";

interface Timer {
  readonly id: number;
  readonly dueMs: number;
  readonly fn: () => void;
}

/**
 * A clock that only moves when told to, for deterministic tests of
 * timeouts, TTL, restart windows and backoff.
 *
 * @example
 * ```ts
 * const clock = new TestClock();
 * const runtime = new Runtime({ root, clock });
 * await clock.advance(1_000); // fires every timer due within the next second, in order
 * ```
 */
export class TestClock implements Clock {
  private current: number;
  private timers: Timer[] = [];
  private nextId = 0;

  /** @param startMs - the initial time, epoch milliseconds @defaultValue 1_700_000_000_000 */
  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  /** The current (simulated) time. */
  now(): number {
    return this.current;
  }

  /** Arms a timer that fires when the clock is advanced past `delayMs` from now. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer: Timer = { id: this.nextId++, dueMs: this.current + Math.max(0, delayMs), fn };
    this.timers.push(timer);
    return { cancel: () => (this.timers = this.timers.filter((t) => t !== timer)) };
  }

  /** Timers armed and not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the next timer is due, or `undefined`. */
  get nextDueMs(): number | undefined {
    return this.earliest()?.dueMs;
  }

  /**
   * Moves time forward by `ms`, firing due timers in order; after each one it
   * lets pending promise callbacks and I/O run, so async work a timer starts can
   * arm further timers that fire within the same advance.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (let timer = this.earliest(); timer !== undefined && timer.dueMs <= target; timer = this.earliest()) {
      this.timers = this.timers.filter((t) => t !== timer);
      this.current = timer.dueMs;
      timer.fn();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Advances to the next due timer (if any) and fires it. */
  async runNext(): Promise<void> {
    const next = this.earliest();
    if (next !== undefined) await this.advance(next.dueMs - this.current);
  }

  /**
   * Fires timers, earliest first, until `work` settles, and returns (or
   * rethrows) its result. For anything that waits on this clock while no
   * test moves it — above all `runtime.stop()`, whose drain and hook
   * deadlines (`shutdownTimeoutMs`) run on the runtime's clock: with a
   * handler parked forever (in a `fc.scheduler()`, on a promise nobody
   * resolves), `await runtime.stop()` alone never returns under a
   * `TestClock`; `await clock.runUntil(runtime.stop())` lets the deadlines
   * pass and returns. When no timer is left and `work` is still pending it
   * just waits for `work` (it may be waiting on real I/O).
   *
   * @example
   * ```ts
   * await clock.runUntil(runtime.stop()); // a parked handler gets its shutdownTimeoutMs of test time, then the stop goes on
   * ```
   */
  async runUntil<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.then(
      () => (settled = true),
      () => (settled = true),
    );
    await settle();
    while (!settled && this.timers.length > 0) await this.runNext();
    await done;
    return work;
  }

  private earliest(): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) if (best === undefined || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && t.id < best.id)) best = t;
    return best;
  }
}

/** Lets every queued promise callback, and one turn of the event loop, run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
