import fc from "fast-check";
import { runSimulationScenario, sequenceChooser, simulationScenarioArbitrary } from "civitas-ts/testing";
import { doublePayment as bug } from "./double-payment.js";

const prop = fc.asyncProperty(fc.array(fc.nat(), { maxLength: 64 }), simulationScenarioArbitrary(bug.command), async (choices, scenario) => {
  try {
    await runSimulationScenario(scenario, { root: bug.root(false), chooser: sequenceChooser(choices), settle: bug.settle, check: (view) => bug.check(view) });
    console.log("pass", choices.length, scenario.toString());
  } catch (e) {
    console.log("FAIL", choices.length, scenario.toString(), (e as Error).message.split("\n")[0].slice(0, 200));
    throw e;
  }
});
const d = await fc.check(prop, { seed: 5, numRuns: 200 });
console.log(d.numRuns, d.numShrinks, String(d.counterexample?.[1]), JSON.stringify(d.counterexample?.[0]));
