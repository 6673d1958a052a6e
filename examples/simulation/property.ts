/**
 * The property that hunts a planted bug: scenarios of the bug's user
 * operations, each run on the simulated system under a schedule fast-check
 * draws (and shrinks) beside them, checked once the system is quiescent.
 */
import fc from "fast-check";
import { runSimulationScenario, scheduleArbitrary, sequenceChooser, SimulationFailure, simulationScenarioArbitrary, type SimulationScenario } from "civitas-ts/testing";
import type { PlantedBug } from "./bank.js";

/**
 * The property for `bug`, on its buggy (`fixed: false`) or fixed system.
 * Every `SimulationFailure` it meets is pushed to `failures`: the last one
 * belongs to the counterexample fast-check reports after shrinking.
 */
export function plantedBugProperty(bug: PlantedBug, fixed: boolean, failures: SimulationFailure[] = []): fc.IAsyncProperty<[number[], SimulationScenario]> {
  // The schedule comes first: fast-check shrinks it first, towards the plain first-ready schedule, and the operations under it.
  return fc.asyncProperty(scheduleArbitrary(), simulationScenarioArbitrary(bug.command), async (choices, scenario) => {
    try {
      await runSimulationScenario(scenario, { root: bug.root(fixed), chooser: sequenceChooser(choices), settle: bug.settle, check: (view) => bug.check(view) });
    } catch (error) {
      if (error instanceof SimulationFailure) failures.push(error);
      throw error;
    }
  });
}

/** Runs `scenario` again on the buggy system, following `trace` (a saved failure's) instead of choosing. */
export function replayPlantedBug(bug: PlantedBug, scenario: SimulationScenario, trace: SimulationFailure["trace"]): Promise<unknown> {
  return runSimulationScenario(scenario, { root: bug.root(false), replay: trace, settle: bug.settle, check: (view) => bug.check(view) }).then(
    () => undefined,
    (error: unknown) => error,
  );
}
