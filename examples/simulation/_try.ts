import { runSimulationScenario, sequenceChooser, simulationScenario, type SimulationCommand } from "civitas-ts/testing";
import { doublePayment } from "./double-payment.js";

const pay: SimulationCommand = { label: "pay", issue: (sim) => sim.ask("payer", "pay", { invoice: "INV-1", amount: 1 }) };
const approve: SimulationCommand = { label: "approve", issue: (sim) => sim.resume("payer", "alice@finance") };
const sweep: SimulationCommand = { label: "sweep", issue: (sim) => sim.ask("reconciler", "sweep") };
for (const rounds of [[[pay, sweep], [approve]], [[pay], [approve, sweep]], [[pay], [sweep, approve]]]) {
  const scenario = simulationScenario(rounds);
  for (const choices of [[], [1], [1, 1], [0, 1]]) {
    try {
      const run = await runSimulationScenario(scenario, { root: doublePayment.root(false), chooser: sequenceChooser(choices), settle: "idle", check: (v) => doublePayment.check(v) });
      console.log(scenario.toString(), choices, "passed", JSON.stringify(run.outcomes.map((o) => o.result)));
      if (choices.length === 0) console.log(run.trace.map((s) => `${s.kind} ${s.key}`).join("\n"));
    } catch (e) {
      console.log(scenario.toString(), choices, "FAILED", (e as Error).message.split("\n")[0]);
    }
  }
}
