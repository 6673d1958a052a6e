/**
 * The defects and traps of issue 27: a kill drawn while the system starts is
 * a kill, not a deadlock; full-length schedules for sequenceChooser; a
 * replay (without the seed) byte-identical to the run it follows; a failed
 * final check as its own line of the trace.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runSimulationScenario } from "../../../src/testing/simulation/run-scenario.js";
import { simulationScenario } from "../../../src/testing/simulation/scenario.js";
import { scheduleArbitrary } from "../../../src/testing/simulation/schedule-arbitrary.js";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Simulation, SimulationStep } from "../../../src/testing/simulation/types.js";
import { Supervisor } from "../../../src/supervision/supervisor.js";
import type { Ledger } from "./fixtures.js";
import { bank, conserved } from "./fixtures.js";
import { whenStarted } from "../../support/runtimes.js";

describe("a kill during sim.start()", () => {
  it("is a kill in the trace, and the start (and the run after it) goes on, over 200 seeds", { timeout: 60_000 }, async () => {
    let killedDuringStart = 0;
    for (let seed = 0; seed < 200; seed++) {
      const sim = await whenStarted(simulate({ root: bank, seed, faults: { kills: 0.02 }, invariants: [conserved] }));
      const opAt = sim.trace.length;
      if (sim.trace.some((step) => step.kind === "kill")) killedDuringStart++;
      expect(sim.view.status("ledger"), `seed ${seed}`).toBe("RUNNING");
      void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 0 });
      await sim.run();
      expect(sim.trace[opAt]?.kind).toBe("op");
      await sim.stop();
    }
    // The defect showed on about 20 of 200 seeds at this rate; at least that many starts now survive a kill.
    expect(killedDuringStart).toBeGreaterThanOrEqual(10);
  });
});

async function transfers(sim: Simulation): Promise<void> {
  await sim.start();
  void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
  void sim.send("coord-b", "transfer", { from: "y", to: "x", amount: 5 });
  await sim.run();
}

describe("replay without the seed", () => {
  it("is byte-identical to the run it follows, message ids included, for every failing seed of 100", { timeout: 60_000 }, async () => {
    let compared = 0;
    for (let seed = 0; seed < 100; seed++) {
      const sim = simulate({ root: bank, seed: seed * 7919, invariants: [conserved], faults: { crashes: 0.05 } });
      const failure = await transfers(sim).then(() => sim.stop(), (error: unknown) => error);
      if (!(failure instanceof SimulationFailure)) continue;
      const saved = JSON.parse(JSON.stringify(failure.trace)) as SimulationStep[];
      const again = await transfers(replay(saved, { root: bank, invariants: [conserved], faults: { crashes: 0.05 } })).then(() => undefined, (error: unknown) => error);
      expect(again).toBeInstanceOf(SimulationFailure);
      expect(JSON.stringify((again as SimulationFailure).trace)).toBe(JSON.stringify(failure.trace));
      compared++;
    }
    expect(compared).toBeGreaterThanOrEqual(10);
  });
});

describe("a failed final check", () => {
  it("is its own last line of the trace, marked, after the last step", async () => {
    const scenario = simulationScenario([[{ label: "deposit", issue: (sim) => sim.ask("ledger", "deposit", { amount: 5 }) }]]);
    const failure = await runSimulationScenario(scenario, { root: bank, seed: 1, check: (view) => `total is ${view.agent<Ledger>("ledger").total}` }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SimulationFailure);
    const { trace, failedAt, message } = failure as SimulationFailure;
    expect(failedAt).toBe(trace.length - 1);
    expect(trace.at(-1)).toEqual({ step: trace.length - 1, kind: "check", key: "check", detail: "total is 105" });
    expect(trace.at(-2)?.kind).not.toBe("check");
    expect(message).toMatch(/>> #\d+ check +check +total is 105/);
    // The trace, check line included, replays to the same failure.
    const again = await runSimulationScenario(scenario, { root: bank, replay: trace, check: (view) => `total is ${view.agent<Ledger>("ledger").total}` }).catch((error: unknown) => error);
    expect(JSON.stringify((again as SimulationFailure).trace)).toBe(JSON.stringify(trace));
  });
});

describe("a root that cannot be built", () => {
  it("rejects sim.start() with its own error, and leaves no simulation running: stop() resolves and the next simulation starts (regression: SIMULATION_BUSY hid the error in every later run of a property)", async () => {
    const broken = simulate({ root: () => new Supervisor("twin", { children: [new Supervisor("twin", { children: [] })] }), seed: 1 });
    await expect(broken.start()).rejects.toMatchObject({ name: "DuplicateNameError" });
    await expect(broken.stop()).resolves.toBeUndefined();
    const next = simulate({ root: bank, seed: 1 });
    await next.start();
    await next.stop();
  });
});

describe("scheduleArbitrary()", () => {
  it("draws schedules of every length up to maxLength at fast-check's default size, where fc.array(fc.nat()) stays short", () => {
    const lengths = fc.sample(scheduleArbitrary({ maxLength: 100 }), { numRuns: 200, seed: 1 }).map((s) => s.length);
    const plain = fc.sample(fc.array(fc.nat(), { maxLength: 100 }), { numRuns: 200, seed: 1 }).map((s) => s.length);
    expect(Math.max(...plain)).toBeLessThanOrEqual(20);
    expect(lengths.filter((n) => n > 50).length).toBeGreaterThanOrEqual(60);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(100);
  });

  it("refuses a bound that is not a positive integer", () => {
    expect(() => scheduleArbitrary({ maxLength: 0 })).toThrow(/INVALID_ARGUMENT|maxLength must be a positive integer/);
  });
});
