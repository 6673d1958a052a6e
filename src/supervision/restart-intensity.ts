/**
 * Counts restarts inside a sliding window, OTP-style: more than `maxRestarts`
 * restarts within `windowMs` means the supervisor gives up.
 */
export class RestartIntensity {
  private times: number[] = [];

  constructor(
    private readonly maxRestarts: number,
    private readonly windowMs: number,
  ) {}

  /**
   * Records a restart at `nowMs`. Returns `false` when it would exceed the
   * intensity (the restart must not happen), `true` otherwise.
   */
  record(nowMs: number): boolean {
    this.times = this.times.filter((t) => nowMs - t < this.windowMs);
    this.times.push(nowMs);
    return this.times.length <= this.maxRestarts;
  }

  /** Restarts recorded within the window ending at `nowMs`. */
  count(nowMs: number): number {
    return this.times.filter((t) => nowMs - t < this.windowMs).length;
  }

  /** Forgets every recorded restart. */
  reset(): void {
    this.times = [];
  }
}
