import type { Arbitrary } from "fast-check";
import { InvalidArgumentError } from "../../errors/errors.js";
import { fc } from "../fast-check.js";

/** Options of {@link scheduleArbitrary}. */
export interface ScheduleArbitraryOptions {
  /** The most choices a schedule holds; past them, {@link sequenceChooser} takes the first ready choice. @defaultValue 200 */
  readonly maxLength?: number;
}

/**
 * Schedules for {@link sequenceChooser}: lists of choices drawn at full
 * length (`size: "max"`), so choices and faults reach every step of a long
 * run. A plain `fc.array(fc.nat(), { maxLength: 64 })` holds about ten
 * numbers at fast-check's default size: every step after the tenth takes the
 * first ready choice and no fault is drawn there. Shrinking still shortens
 * the list towards the first-ready schedule.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when `maxLength` is not a positive integer
 * @example
 * ```ts
 * fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(command), async (choices, scenario) => {
 *   await runSimulationScenario(scenario, { root, chooser: sequenceChooser(choices), check });
 * });
 * ```
 */
export function scheduleArbitrary(options: ScheduleArbitraryOptions = {}): Arbitrary<number[]> {
  const maxLength = options.maxLength ?? 200;
  if (!Number.isInteger(maxLength) || maxLength < 1) throw new InvalidArgumentError("maxLength", `scheduleArbitrary({ maxLength }): maxLength must be a positive integer, got ${String(maxLength)}`);
  return fc.array(fc.nat(), { maxLength, size: "max" });
}
