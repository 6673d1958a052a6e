import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import type { SimulatedClock } from "./simulated-clock.js";
import type { SimulationChoice } from "./types.js";

/** Options of time as a choice: `simulate({ time })`. */
export interface SimulationTimeOptions {
  /**
   * How many times per run the simulator may advance virtual time to the
   * earliest timer while other steps are ready (a `time` step, offered to
   * the chooser beside them), so a deadline or an ask timeout can fire
   * between any two steps. The bound makes runs end. @defaultValue 0
   */
  readonly races?: number;
  /**
   * Virtual time each step takes (simulated latency): after each step the
   * clock moves on by this much, and a timer whose time has come is offered
   * as a `time` step (beyond `races`) until it fires. @defaultValue 0
   */
  readonly stepLatencyMs?: number;
}

const CHOICE: SimulationChoice = { kind: "time", key: "time", thread: "time" };

/**
 * Time as one more ready choice: offered while races are left (or a timer
 * is already due) and a timer waits; taking it fires the earliest timer.
 * @internal
 */
export class TimeChoices {
  private racesLeft: number;
  readonly on: boolean;

  constructor(
    private readonly clock: SimulatedClock,
    private readonly latencyMs: number,
    races: number,
  ) {
    this.racesLeft = races;
    this.on = races > 0 || latencyMs > 0;
  }

  /** The `time` choice, when it may be taken now. */
  offer(): SimulationChoice | undefined {
    const due = this.clock.nextDueMs;
    if (due === undefined) return undefined;
    return this.racesLeft > 0 || due <= this.clock.now() ? CHOICE : undefined;
  }

  /** The `time` choice was taken: one race fewer, unless the timer was due anyway. */
  taken(): void {
    if ((this.clock.nextDueMs as number) > this.clock.now()) this.racesLeft--;
  }

  /** A step took place: its latency passes. */
  stepped(): void {
    if (this.latencyMs > 0) this.clock.advance(this.latencyMs);
  }
}

/** Checks `simulate({ time })`: `INVALID_ARGUMENT` naming the field. @internal */
export function checkTime(time: unknown): { races: number; stepLatencyMs: number } {
  if (time === undefined) return { races: 0, stepLatencyMs: 0 };
  if (typeof time !== "object" || time === null) throw new InvalidArgumentError("time", `simulate({ time }): time must be an object like { races: 3, stepLatencyMs: 5 }, got ${describeValue(time)}`);
  const { races = 0, stepLatencyMs = 0 } = time as SimulationTimeOptions;
  if (!Number.isInteger(races) || races < 0) throw new InvalidArgumentError("time", `simulate({ time }): time.races must be a non-negative integer, got ${describeValue(races)}`);
  if (typeof stepLatencyMs !== "number" || !Number.isFinite(stepLatencyMs) || stepLatencyMs < 0) {
    throw new InvalidArgumentError("time", `simulate({ time }): time.stepLatencyMs must be a non-negative number of milliseconds, got ${describeValue(stepLatencyMs)}`);
  }
  return { races, stepLatencyMs };
}
