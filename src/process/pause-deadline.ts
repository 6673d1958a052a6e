import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import type { Clock, TimerHandle } from "../time/clock.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";

/** Options of a pause an agent asks for itself, `this.suspend(reason, options)` (`runtime.suspend` takes `SuspendOptions`). */
export interface PauseOptions {
  /**
   * How long the pause may last: once this long has passed (on the
   * runtime's clock, also while the process was down) it is denied by
   * decider `"expiry"`. @defaultValue no deadline
   */
  expiresInMs?: number;
}

/**
 * The deadline of the current pause, on the runtime's clock. It follows the
 * marker (see {@link PauseDeadline.follow}): a marker with an `expiresAt`
 * arms one timer (`unref()`ed, as every runtime timer is), a marker without
 * one, or none, disarms it. When the deadline passes the pause is `due`, and
 * the agent's loop denies it (decider `"expiry"`) at its next boundary,
 * between two messages, like any other control.
 * @internal
 */
export class PauseDeadline {
  /** The current pause's deadline has passed: the loop is to deny it. */
  due = false;
  private timer: TimerHandle | undefined;
  /** The pause and deadline the timer is armed for (`<suspensionId>@<expiresAt>`). */
  private armedFor: string | undefined;

  /** @param wake - starts the loop of an idle agent, so that it sees `due` */
  constructor(private readonly wake: () => void) {}

  /**
   * Arms the timer for `marker`'s deadline, unless it already is for that
   * very pause and deadline. A deadline that has already passed (also one
   * that passed while the process was down, found at restore) is due at once,
   * without a timer.
   */
  follow(marker: SuspensionMarker | undefined, clock: Clock | undefined): void {
    const expiresAt = marker?.expiresAt;
    const key = marker === undefined || expiresAt === undefined ? undefined : `${marker.suspensionId}@${expiresAt}`;
    if (key === this.armedFor) return;
    this.cancel();
    if (key === undefined || expiresAt === undefined || clock === undefined) return;
    this.armedFor = key;
    const waitMs = Date.parse(expiresAt) - clock.now();
    if (waitMs <= 0) {
      this.due = true;
      return;
    }
    this.timer = clock.setTimeout(() => {
      this.timer = undefined;
      this.due = true;
      this.wake();
    }, waitMs);
  }

  /** Disarms the timer and forgets the deadline (a resume, deny, stop or removal). */
  cancel(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.armedFor = undefined;
    this.due = false;
  }
}

/**
 * Checks `expiresInMs` (a non-negative, finite number of milliseconds, or
 * `undefined` for no deadline).
 * @throws {@link InvalidArgumentError} naming `call`
 * @internal
 */
export function checkExpiresInMs(call: string, expiresInMs: unknown): number | undefined {
  if (expiresInMs === undefined) return undefined;
  if (typeof expiresInMs !== "number" || !Number.isFinite(expiresInMs) || expiresInMs < 0) {
    throw new InvalidArgumentError("expiresInMs", `${call}: expiresInMs must be a non-negative number of milliseconds (how long the pause may last before it is denied), got ${describeValue(expiresInMs)}`);
  }
  return expiresInMs;
}
