/**
 * Keeps a message storm from starving the event loop. Message dispatch runs
 * on microtasks, which Node drains before any timer or I/O callback; every
 * `budget` dispatches, across all agents of a runtime, the next dispatch
 * waits for a `setImmediate` so timers (ask timeouts, backoff, TTL) and I/O
 * get their turn.
 */
export class Scheduler {
  private dispatched = 0;
  private pending: Promise<void> | undefined;

  /** @param budget dispatches between two yields to the event loop */
  constructor(private readonly budget = 128) {}

  /**
   * Counts one dispatch of `_runner`, the process runner about to dispatch (a
   * simulation's scheduler gates each agent by it); returns a promise to await when it is time to yield, else `undefined`.
   */
  tick(_runner: object): Promise<void> | undefined {
    if (this.pending !== undefined) return this.pending;
    if (++this.dispatched < this.budget) return undefined;
    this.pending = new Promise((resolve) =>
      setImmediate(() => {
        this.dispatched = 0;
        this.pending = undefined;
        resolve();
      }),
    );
    return this.pending;
  }
}
