import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fastCheckChooser } from "../../../src/testing/simulation/fast-check-chooser.js";
import { pctChooser } from "../../../src/testing/simulation/pct-chooser.js";
import { randomChooser } from "../../../src/testing/simulation/random-chooser.js";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Chooser, SimulationChoice } from "../../../src/testing/simulation/types.js";
import { bank, conserved } from "./fixtures.js";

/** Runs two concurrent transfers under `chooser`; the failure, if the lost update happened. */
async function transfers(chooser: Chooser): Promise<SimulationFailure | undefined> {
  const sim = simulate({ root: bank, chooser, invariants: [conserved] });
  try {
    await sim.start();
    void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
    void sim.send("coord-b", "transfer", { from: "y", to: "x", amount: 5 });
    await sim.run();
    await sim.stop();
    return undefined;
  } catch (error) {
    if (error instanceof SimulationFailure) return error;
    throw error;
  }
}

const choices = (...threads: string[]): SimulationChoice[] => threads.map((thread, i) => ({ kind: "deliver", key: `${thread}#${i}`, thread }));

describe("choosers", () => {
  it("randomChooser: the same seed draws the same choices; every index is reachable", () => {
    const ready = choices("a", "b", "c");
    const draw = (seed: number): number[] => {
      const chooser = randomChooser(seed);
      return Array.from({ length: 50 }, (_, step) => chooser.choose(ready, step) as number);
    };
    expect(draw(9)).toEqual(draw(9));
    expect(new Set(draw(9))).toEqual(new Set([0, 1, 2]));
    expect(() => randomChooser(Number.POSITIVE_INFINITY)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("pctChooser runs the highest-priority thread until a change point lowers it", () => {
    const ready = choices("a", "b", "c");
    const chooser = pctChooser({ seed: 3, depth: 1, maxSteps: 10 }); // depth 1: no change point
    const first = chooser.choose(ready, 0);
    for (let step = 1; step < 20; step++) expect(chooser.choose(ready, step)).toBe(first);
    const changing = pctChooser({ seed: 3, depth: 2, maxSteps: 5 });
    const picks = Array.from({ length: 5 }, (_, step) => changing.choose(ready, step));
    expect(new Set(picks).size).toBe(2); // one change point: the thread running at it drops below the others, once
    expect(() => pctChooser({ seed: 1, depth: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("pctChooser finds the lost update between two coordinators (a bug of depth 3 in about 25 steps)", async () => {
    let found = 0;
    for (let seed = 0; seed < 50; seed++) if ((await transfers(pctChooser({ seed, depth: 3, maxSteps: 25 }))) !== undefined) found++;
    expect(found).toBeGreaterThan(0);
  });

  it("fastCheckChooser lets fc.scheduler() choose: fast-check finds the lost update and shrinks its schedule", async () => {
    const result = await fc.check(
      fc.asyncProperty(fc.scheduler(), async (s) => {
        const failure = await transfers(fastCheckChooser(s));
        return failure === undefined;
      }),
      { seed: 42, numRuns: 200 },
    );
    expect(result.failed).toBe(true);
    expect(result.counterexample?.[0].report().length).toBeGreaterThan(0);
  });
});
