import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import { mulberry32 } from "./prng.js";
import type { Chooser } from "./types.js";

/** What {@link fastCheckChooser} needs of fast-check's `fc.scheduler()`. */
export interface FastCheckScheduler {
  schedule<T>(task: Promise<T>, label?: string): Promise<T>;
  waitOne(): Promise<void>;
  count(): number;
}

/** Options of {@link fastCheckChooser}. */
export interface FastCheckChooserOptions {
  /** Seed of the fault draws (take it from an `fc.integer()` so that it shrinks too). @defaultValue 0 */
  readonly faultSeed?: number;
}

/**
 * Lets a fast-check scheduler (`fc.scheduler()`) choose every step, so a
 * failing schedule shrinks with the property. Each ready choice is scheduled
 * once, labelled with its key (it stays scheduled while it stays ready);
 * `s.waitOne()` picks. Faults are drawn from `faultSeed`.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when `s` is not a fast-check scheduler
 * @example
 * ```ts
 * await fc.assert(fc.asyncProperty(fc.scheduler(), async (s) => {
 *   const sim = simulate({ root, chooser: fastCheckChooser(s) });
 *   await sim.start();
 *   sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
 *   await sim.run();
 *   await sim.stop();
 * }));
 * ```
 */
export function fastCheckChooser(s: FastCheckScheduler, options: FastCheckChooserOptions = {}): Chooser {
  if (typeof (s as Partial<FastCheckScheduler> | null)?.schedule !== "function" || typeof s.waitOne !== "function") {
    throw new InvalidArgumentError("scheduler", `fastCheckChooser(s) needs the scheduler fast-check passes for fc.scheduler(), got ${describeValue(s)}`);
  }
  const next = mulberry32(options.faultSeed ?? 0);
  const scheduled = new Set<string>();
  const released: string[] = [];
  return {
    async choose(ready) {
      for (const choice of ready) {
        if (scheduled.has(choice.key)) continue;
        scheduled.add(choice.key);
        const key = choice.key;
        void s.schedule(Promise.resolve(key), key).then(() => {
          scheduled.delete(key);
          released.push(key);
        });
      }
      // A task scheduled for a choice that is no longer ready (its mailbox head changed) may be picked: pick again.
      while (s.count() > 0) {
        await s.waitOne();
        await Promise.resolve();
        for (let key = released.shift(); key !== undefined; key = released.shift()) {
          const index = ready.findIndex((c) => c.key === key);
          if (index >= 0) return index;
        }
      }
      return 0;
    },
    fault: (_choice, _kind, probability) => next() < probability,
  };
}
