import { describe, expect, it } from "vitest";
import { replay, simulate } from "../../../src/testing/simulation/simulate.js";
import { SimulationFailure } from "../../../src/testing/simulation/simulation-failure.js";
import type { Simulation, SimulationStep } from "../../../src/testing/simulation/types.js";
import { bank, conserved } from "./fixtures.js";

async function transfers(sim: Simulation): Promise<void> {
  await sim.start();
  void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
  void sim.send("coord-b", "transfer", { from: "y", to: "x", amount: 5 });
  await sim.run();
}

/** The first seed whose schedule loses an update, with its failure. */
async function lostUpdate(): Promise<SimulationFailure> {
  for (let seed = 0; seed < 200; seed++) {
    const sim = simulate({ root: bank, seed, invariants: [conserved] });
    try {
      await transfers(sim);
      await sim.stop();
    } catch (error) {
      if (error instanceof SimulationFailure) return error;
      throw error;
    }
  }
  throw new Error("no seed of 200 lost an update");
}

describe("replaying a trace", () => {
  it("a saved trace (through JSON) replays to the same failure at the same step", async () => {
    const failure = await lostUpdate();
    expect(failure.code).toBe("SIMULATION_INVARIANT");
    expect(failure.name).toBe("SimulationFailure");
    expect(failure.message).toContain(">>");
    const saved = JSON.parse(JSON.stringify(failure.trace)) as SimulationStep[];
    const again = replay(saved, { root: bank, invariants: [conserved] });
    const replayed = await transfers(again).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(replayed).toBeInstanceOf(SimulationFailure);
    expect((replayed as SimulationFailure).code).toBe("SIMULATION_INVARIANT");
    expect((replayed as SimulationFailure).trace.map((s) => [s.kind, s.key])).toEqual(saved.map((s) => [s.kind, s.key]));
  });

  it("faults replay too: the same store failures, crashes and kills at the same steps", async () => {
    const faults = { storeWrites: { fail: 0.1, lose: 0.1 }, crashes: 0.1, kills: 0.05 };
    let original: readonly SimulationStep[] | undefined;
    for (let seed = 0; original === undefined && seed < 100; seed++) {
      const sim = simulate({ root: bank, seed, faults, maxSteps: 500 });
      const ran = await transfers(sim).then(
        () => true,
        () => false,
      );
      if (ran) await sim.stop();
      const kinds = new Set(sim.trace.map((s) => s.kind));
      if (ran && kinds.has("kill") && (kinds.has("crash") || kinds.has("store.fail"))) original = sim.trace;
    }
    expect(original).toBeDefined();
    const again = replay(JSON.parse(JSON.stringify(original)) as SimulationStep[], { root: bank, maxSteps: 500 });
    await transfers(again);
    await again.stop();
    expect(again.trace.map((s) => [s.kind, s.key, s.detail])).toEqual(original?.map((s) => [s.kind, s.key, s.detail]));
  });

  it("a trace whose step cannot happen fails with SIMULATION_DIVERGED naming the step", async () => {
    const sim = simulate({ root: bank, seed: 4 });
    await transfers(sim);
    await sim.stop();
    const trace = sim.trace.map((s) => ({ ...s }));
    const at = trace.findIndex((s) => s.kind === "deliver");
    trace[at] = { ...(trace[at] as SimulationStep), key: "ledger<-nobody:transfer#1" };
    const again = replay(trace, { root: bank });
    const error = await transfers(again).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SimulationFailure);
    expect((error as SimulationFailure).code).toBe("SIMULATION_DIVERGED");
    expect((error as SimulationFailure).message).toContain(`replay diverged at step ${at}: the saved trace has deliver ledger<-nobody:transfer#1, which is not ready`);
  });

  it("a replay that goes on past the end of its trace diverges", async () => {
    const sim = simulate({ root: bank, seed: 2 });
    await transfers(sim);
    await sim.stop();
    const again = replay(sim.trace.slice(0, 10), { root: bank });
    await expect(transfers(again)).rejects.toMatchObject({ code: "SIMULATION_DIVERGED", message: expect.stringContaining("the saved trace ends at step 9") as unknown });
  });

  it("a trace that is not an array of steps is refused before anything runs", () => {
    expect(() => replay([{ step: 0 }] as unknown as SimulationStep[], { root: bank })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});
