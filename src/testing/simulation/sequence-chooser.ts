import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import type { Chooser } from "./types.js";

/**
 * A chooser that follows a list of numbers: at each choice it takes the
 * next number modulo the count of what is ready; once the list is used up,
 * the first ready thing. Asked for a fault, it takes the next number too and
 * injects the fault when that number modulo 1,000 is at least
 * `1,000 × (1 − probability)` — so 0 means "no fault".
 *
 * Made for properties: draw the list with fast-check
 * ({@link scheduleArbitrary}, full-length lists) next to the user operations, and shrinking
 * reduces the schedule with them — a shorter list, smaller numbers, towards
 * the plain first-ready schedule — while a choice the failure depends on
 * stays put even when an unrelated operation is removed (a seeded stream
 * would shift every later choice).
 *
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when `choices` is not an array of non-negative integers
 * @example
 * ```ts
 * fc.asyncProperty(simulationScenarioArbitrary(command), scheduleArbitrary(), async (scenario, choices) => {
 *   await runSimulationScenario(scenario, { root, chooser: sequenceChooser(choices), check });
 * });
 * ```
 */
export function sequenceChooser(choices: readonly number[]): Chooser {
  const given: unknown = choices;
  if (!Array.isArray(given) || (given as unknown[]).some((n) => typeof n !== "number" || !Number.isSafeInteger(n) || n < 0)) {
    throw new InvalidArgumentError("choices", `sequenceChooser(choices): choices must be an array of non-negative integers, got ${describeValue(choices)}`);
  }
  const list: number[] = [...choices];
  let at = 0;
  const next = (): number => (at < list.length ? (list[at++] as number) : 0);
  return {
    choose: (ready) => next() % ready.length,
    fault: (_choice, _kind, probability) => next() % 1000 >= 1000 * (1 - probability),
  };
}
