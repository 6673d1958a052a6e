import { describe, expect, it } from "vitest";
import { simulate } from "../../../src/testing/simulation/simulate.js";
import type { SimulationStep } from "../../../src/testing/simulation/types.js";
import { runTsChild } from "../../support/child-process.js";
import { bank, type Ledger } from "./fixtures.js";
import { whenStarted } from "../../support/runtimes.js";

const CHILD = "test/testing/simulation/fixtures/trace-child.ts";

/** Runs two concurrent transfers under `seed` to quiescence; the trace. */
async function transfers(seed: number): Promise<readonly SimulationStep[]> {
  const sim = await whenStarted(simulate({ root: bank, seed }));
  void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
  void sim.send("coord-b", "transfer", { from: "y", to: "x", amount: 5 });
  await sim.run();
  await sim.stop();
  return sim.trace;
}

describe("a simulation's determinism", () => {
  it("the same seed gives the same trace, message ids included, over 100 repetitions", async () => {
    const first = await transfers(7);
    expect(first.filter((s) => s.kind === "deliver").length).toBeGreaterThan(6);
    for (let i = 0; i < 99; i++) expect(await transfers(7)).toEqual(first);
  });

  it("the same seed gives the same trace in two separate Node processes, and in this one", async () => {
    const [one, two] = await Promise.all([runTsChild(CHILD, ["11"], { timeoutMs: 60_000 }), runTsChild(CHILD, ["11"], { timeoutMs: 60_000 })]);
    expect(one.code).toBe(0);
    expect(one.torn).not.toBe("");
    expect(two.torn).toBe(one.torn);
    expect(JSON.parse(one.torn)).toEqual(await transfers(11));
  });

  it("different seeds choose different schedules", async () => {
    const keys = new Set<string>();
    for (let seed = 0; seed < 20; seed++) keys.add((await transfers(seed)).map((s) => s.key).join(" "));
    expect(keys.size).toBeGreaterThan(5);
  });

  it("runs to quiescence: every message handled, nothing left ready, no timer left", async () => {
    const sim = await whenStarted(simulate({ root: bank, seed: 3 }));
    void sim.send("coord-a", "transfer", { from: "x", to: "y", amount: 10 });
    await sim.run();
    expect(sim.view.agent<Ledger>("ledger").state.accounts).toEqual({ x: 40, y: 60 });
    expect(sim.view.stored("ledger")).toMatchObject({ accounts: { x: 40, y: 60 } });
    await sim.stop();
  });
});
