/**
 * civitas-ts demo: three concurrency bugs planted in a small bank, found by
 * the deterministic simulation of the real runtime, shrunk, replayed, and
 * their fixes checked — `npm run demo:simulation`
 * (or `npx tsx examples/simulation/run.ts`).
 *
 * For each bug a fast-check property draws scenarios of user operations
 * (transfers, audits, payments, approvals, sweeps) and a schedule; the
 * simulation runs the real agents under that schedule and checks the bank
 * once it is quiescent.
 */
import fc from "fast-check";
import { exhaust, type Simulation, type SimulationFailure, type SimulationScenario } from "civitas-ts/testing";
import type { PlantedBug } from "./bank.js";
import { doublePayment } from "./double-payment.js";
import { lostUpdate } from "./lost-update.js";
import { moneyInFlight } from "./money-in-flight.js";
import { plantedBugProperty, replayPlantedBug } from "./property.js";

const SEED = 2026;
const FIXED_RUNS = 300;

async function hunt(bug: PlantedBug): Promise<void> {
  console.log(`\n== ${bug.title}`);
  const failures: SimulationFailure[] = [];
  const details = await fc.check(plantedBugProperty(bug, false, failures), { seed: SEED, numRuns: 200 });
  const failure = failures.at(-1);
  if (!details.failed || failure === undefined) {
    console.log(`not found in ${details.numRuns} runs`);
    process.exitCode = 1;
    return;
  }
  const [, scenario] = details.counterexample as [number[], SimulationScenario];
  console.log(`found after ${details.numRuns} run(s); shrunk in ${details.numShrinks} step(s) to ${scenario.operations} user operations: ${scenario.toString()}`);
  console.log(failure.message.split("\n\ntrace")[0]?.replace(/^scenario .*?: /, "what went wrong: "));
  console.log(`the failing schedule, step by step:\n${failure.message.split("marked >>):\n")[1] ?? ""}`);
  const again = (await replayPlantedBug(bug, scenario, JSON.parse(JSON.stringify(failure.trace)) as SimulationFailure["trace"])) as SimulationFailure | undefined;
  const same = again !== undefined && again.trace.map((s) => s.key).join() === failure.trace.map((s) => s.key).join();
  console.log(`replaying the saved trace: ${same ? "the same failure, step for step" : "DIFFERENT"}`);
  const fixed = await fc.check(plantedBugProperty(bug, true), { seed: SEED, numRuns: FIXED_RUNS });
  console.log(`the fixed version: ${fixed.failed ? `FAILED after ${fixed.numRuns} runs` : `${FIXED_RUNS} runs passed`}`);
  if (!same || fixed.failed) process.exitCode = 1;
}

for (const bug of [lostUpdate, moneyInFlight, doublePayment]) await hunt(bug);

console.log("\n== every schedule of one transfer and one audit (exhaust)");
const transferAndAudit = async (sim: Simulation): Promise<void> => {
  void sim.ask("coordinator", "transfer", { from: "alice", to: "bob", amount: 10 });
  void sim.ask("auditor", "audit");
  await sim.run();
  const problem = moneyInFlight.check(sim.view);
  if (problem !== undefined) throw new Error(problem);
};
const buggy = await exhaust({ root: moneyInFlight.root(false), maxSteps: 200, scenario: transferAndAudit });
console.log(`the peeking auditor: fails in schedule ${buggy.schedules} (${String((buggy.failure?.error as Error | undefined)?.message)})`);
const fixed = await exhaust({ root: moneyInFlight.root(true), maxSteps: 200, scenario: transferAndAudit });
console.log(`the serialized auditor: all ${fixed.schedules} schedules pass (complete: ${fixed.complete})`);
if (buggy.failure === undefined || !fixed.complete || fixed.failure !== undefined) process.exitCode = 1;
