/**
 * The three planted bugs of examples/simulation (issue 13): each is found by
 * a property over scenarios of user operations run on the simulated
 * system — in 20 of 20 fast-check seeds, in a median of at most 10 runs —
 * its counterexample shrinks to at most 4 user operations, replaying the
 * failure's trace reproduces it exactly, and the fixed system passes 1,000
 * runs of the same property.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SimulationFailure, type SimulationScenario } from "../../../src/entries/testing.js";
import type { PlantedBug } from "../../../examples/simulation/bank.js";
import { doublePayment } from "../../../examples/simulation/double-payment.js";
import { lostUpdate } from "../../../examples/simulation/lost-update.js";
import { moneyInFlight } from "../../../examples/simulation/money-in-flight.js";
import { plantedBugProperty, replayPlantedBug } from "../../../examples/simulation/property.js";

const BUGS: ReadonlyArray<readonly [string, PlantedBug]> = [
  ["lost update", lostUpdate],
  ["money in flight", moneyInFlight],
  ["double payment after a resume", doublePayment],
];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

describe.each(BUGS)("the planted bug: %s", (_name, bug) => {
  it("is found in 20 of 20 seeds, in a median of at most 10 runs, and shrinks to at most 4 user operations that replay exactly", { timeout: 120_000 }, async () => {
    const runs: number[] = [];
    for (let seed = 1; seed <= 20; seed++) {
      const failures: SimulationFailure[] = [];
      const details = await fc.check(plantedBugProperty(bug, false, failures), { seed, numRuns: 200 });
      expect(details.failed, `seed ${seed}: not found in 200 runs`).toBe(true);
      runs.push(details.numRuns);
      const [, scenario] = details.counterexample as [number[], SimulationScenario];
      expect(scenario.operations, `seed ${seed}: shrank only to ${scenario.toString()}`).toBeLessThanOrEqual(4);
      // The last failure thrown is the shrunk counterexample's; its trace, saved as JSON and replayed, fails the same way.
      const failure = failures.at(-1) as SimulationFailure;
      expect(failure.message).toContain(scenario.toString());
      const saved = JSON.parse(JSON.stringify(failure.trace)) as SimulationFailure["trace"];
      const again = await replayPlantedBug(bug, scenario, saved);
      expect(again).toBeInstanceOf(SimulationFailure);
      expect((again as SimulationFailure).code).toBe(failure.code);
      // The same problem after the same steps (message ids come from the seed, which a replay does not take).
      const summary = (error: SimulationFailure): string => error.message.split("\n\ntrace")[0] as string;
      const steps = (error: SimulationFailure): string[] => error.trace.map((step) => `${step.kind} ${step.key}`);
      expect(summary(again as SimulationFailure)).toBe(summary(failure));
      expect(steps(again as SimulationFailure)).toEqual(steps(failure));
    }
    expect(median(runs), `runs to find it: ${runs.join(", ")}`).toBeLessThanOrEqual(10);
  });

  it("its fixed version passes 1,000 runs of the same property", { timeout: 180_000 }, async () => {
    await fc.assert(plantedBugProperty(bug, true), { numRuns: 1_000, seed: 13 });
  });
});
