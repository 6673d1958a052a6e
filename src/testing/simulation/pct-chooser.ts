import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import { mulberry32 } from "./prng.js";
import { checkSeed } from "./random-chooser.js";
import type { Chooser } from "./types.js";

/** Options of {@link pctChooser}. */
export interface PctChooserOptions {
  /** Seed of every draw (priorities, change points, faults). */
  readonly seed: number;
  /** The bug depth `d` to aim for: `d - 1` priority change points. @defaultValue 3 */
  readonly depth?: number;
  /** The number of steps `k` a run is expected to take: change points are drawn among them. @defaultValue 1000 */
  readonly maxSteps?: number;
}

/**
 * PCT, probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi,
 * Nagarakatte, ASPLOS 2010): every "thread" — each agent, the asker of a
 * reply, the store, the audit log — gets a random priority when first
 * seen (all above `depth`); the highest-priority ready thread always runs;
 * at `depth - 1` steps drawn at random among `maxSteps`, the thread about
 * to run drops to priority `depth - i` (below every initial one). For `n`
 * threads and `k` steps a bug of depth `d` is found in one run with
 * probability at least 1/(n·k^(d-1)). Faults are drawn from the same seed.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad seed, depth or maxSteps
 * @example
 * ```ts
 * const sim = simulate({ root, chooser: pctChooser({ seed: 1, depth: 3, maxSteps: 200 }) });
 * ```
 */
export function pctChooser(options: PctChooserOptions): Chooser {
  if (typeof options !== "object" || (options as unknown) === null) {
    throw new InvalidArgumentError("options", `pctChooser(options) needs { seed, depth?, maxSteps? }, got ${describeValue(options)}`);
  }
  const seed = checkSeed(options.seed, "pctChooser({ seed })");
  const depth = options.depth ?? 3;
  const maxSteps = options.maxSteps ?? 1000;
  if (!Number.isInteger(depth) || depth < 1) throw new InvalidArgumentError("depth", `pctChooser({ depth }): depth must be an integer of at least 1, got ${describeValue(depth)}`);
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidArgumentError("maxSteps", `pctChooser({ maxSteps }): maxSteps must be a positive integer, got ${describeValue(maxSteps)}`);
  const next = mulberry32(seed);
  const changes = new Map<number, number>();
  for (let i = 1; i < depth; i++) changes.set(Math.floor(next() * maxSteps), depth - i);
  const priorities = new Map<string, number>();
  const priorityOf = (thread: string): number => {
    let priority = priorities.get(thread);
    if (priority === undefined) {
      priority = depth + next(); // distinct with probability 1, above every change point's priority
      priorities.set(thread, priority);
    }
    return priority;
  };
  const best = (ready: Parameters<Chooser["choose"]>[0]): number => {
    let index = 0;
    for (let i = 1; i < ready.length; i++) if (priorityOf((ready[i] as (typeof ready)[number]).thread) > priorityOf((ready[index] as (typeof ready)[number]).thread)) index = i;
    return index;
  };
  return {
    choose: (ready, step) => {
      const index = best(ready);
      const lowered = changes.get(step);
      if (lowered === undefined) return index;
      priorities.set((ready[index] as (typeof ready)[number]).thread, lowered);
      return best(ready);
    },
    fault: (_choice, _kind, probability) => next() < probability,
  };
}
