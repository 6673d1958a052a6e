/** How often, at the most, a {@link Scheduler} looks at the time: every this many dispatches. */
const CHECK_EVERY = 128;

/** How long dispatches may run on microtasks before the event loop gets a turn. */
const SLICE_MS = 1;

/**
 * Keeps a message storm from starving the event loop. Message dispatch runs
 * on microtasks, which Node drains before any timer or I/O callback. Every
 * 128 dispatches, across all agents of a runtime, the scheduler looks at the
 * time: once 1 ms or more has passed since the event loop last had a turn
 * from it, the next dispatch waits for a `setImmediate`, so timers (ask
 * timeouts, backoff, TTL) and I/O get their turn. A time slice rather than a
 * bare count: a yield costs a macrotask hop, and yielding every 128 cheap
 * dispatches put that hop into about one ask in a hundred (the p99).
 */
export class Scheduler {
  private dispatched = 0;
  private pending: Promise<void> | undefined;
  private sliceStart: number;

  /**
   * @param checkEvery dispatches between two looks at the time
   * @param sliceMs time dispatches may run between two turns of the event loop
   * @param now the time in ms (monotonic); the wall clock by default, never a test clock: a storm must yield however time is simulated
   */
  constructor(
    private readonly checkEvery = CHECK_EVERY,
    private readonly sliceMs = SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.sliceStart = now();
  }

  /**
   * Counts one dispatch of `_runner`, the process runner about to dispatch (a
   * simulation's scheduler gates each agent by it); returns a promise to await when it is time to yield, else `undefined`.
   */
  tick(_runner: object): Promise<void> | undefined {
    if (this.pending !== undefined) return this.pending;
    if (++this.dispatched < this.checkEvery) return undefined;
    this.dispatched = 0;
    if (this.now() - this.sliceStart < this.sliceMs) return undefined;
    this.pending = new Promise((resolve) =>
      setImmediate(() => {
        this.pending = undefined;
        this.sliceStart = this.now();
        resolve();
      }),
    );
    return this.pending;
  }
}
