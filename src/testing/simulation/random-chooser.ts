import { InvalidArgumentError } from "../../errors/errors.js";
import { describeValue } from "../../errors/civitas-error.js";
import { mulberry32 } from "./prng.js";
import type { Chooser } from "./types.js";

/**
 * A chooser that picks uniformly among what is ready, and injects each fault
 * with its probability, from one seeded generator (mulberry32): the same
 * seed gives the same choices on every run.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when `seed` is not a finite number
 * @example
 * ```ts
 * const sim = simulate({ root, chooser: randomChooser(42) }); // the same as { root, seed: 42 }
 * ```
 */
export function randomChooser(seed: number): Chooser {
  checkSeed(seed, "randomChooser(seed)");
  const next = mulberry32(seed);
  return {
    choose: (ready) => Math.floor(next() * ready.length),
    fault: (_choice, _kind, probability) => next() < probability,
  };
}

/** Refuses a seed that is not a finite number. @internal */
export function checkSeed(seed: unknown, call: string): number {
  if (typeof seed !== "number" || !Number.isFinite(seed)) {
    throw new InvalidArgumentError("seed", `${call}: seed must be a finite number, got ${describeValue(seed)}`);
  }
  return seed;
}
