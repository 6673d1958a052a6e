/**
 * The supervisor's restart-set property of supervisor.property.test.ts, run
 * under the deterministic simulation (issue 13, item 7): every delivery,
 * store write and audit append of the tree is scheduled by a seed, and
 * crashes injected into handlers and failing store writes are mixed in with
 * the crashes the test asks for. Whatever crashed, each child must have been
 * restarted exactly as often as the strategy says for the crashes on
 * record, and the tree must be RUNNING again.
 *
 * Runs: CIVITAS_PROPERTY_RUNS=2000 npx vitest run test/supervision/supervisor.simulation.test.ts
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentProcess, ProcessStatus, RESTART_STRATEGIES, Supervisor, type Message } from "../../src/index.js";
import { runSimulationScenario, simulationScenario, type SimulationCommand } from "../../src/entries/testing.js";
import { restartSet } from "../support/restart-set.js";

const RUNS = Number(process.env.CIVITAS_PROPERTY_RUNS ?? 0);

/** `work` counts and checkpoints (a store write the simulation may fail); `crash` throws (and escalates). */
class Worker extends AgentProcess<{ work: number }> {
  override state = { work: 0 };
  override async handle(message: Message): Promise<void> {
    if (message.type === "crash") throw new Error(`asked to crash: ${this.name}`);
    this.state.work++;
    await this.checkpoint();
  }
}


const scenario = fc.integer({ min: 1, max: 5 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    strategy: fc.constantFrom(...RESTART_STRATEGIES),
    commands: fc.array(fc.record({ child: fc.nat({ max: n - 1 }), crash: fc.boolean() }), { minLength: 1, maxLength: 8 }),
    seed: fc.integer(),
  }),
);

describe("Supervisor restart set under simulation, with crash and store faults (property)", () => {
  it("restarts exactly the children the strategy names for every crash on record, injected or asked for, in every schedule", { timeout: 120_000 }, async () => {
    let injected = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async ({ n, strategy, commands, seed }) => {
        const names = Array.from({ length: n }, (_, i) => `w${i}`);
        const rounds = commands.map(({ child, crash }): SimulationCommand[] => [
          { label: `${crash ? "crash" : "work"}(w${child})`, issue: (sim) => sim.send(`w${child}`, crash ? "crash" : "work") },
        ]);
        const run = await runSimulationScenario(simulationScenario(rounds), {
          root: () => new Supervisor("root", { children: names.map((name) => new Worker(name)), strategy, maxRestarts: 1000, backoffBaseMs: 0 }),
          seed,
          faults: { crashes: 0.1, storeWrites: { fail: 0.1 } },
          check: (view) => {
            const expected = Array<number>(n).fill(1);
            const crashes = view.audit.filter((e) => e.event === "agent.crash");
            for (const event of crashes) for (const i of restartSet(strategy, n, names.indexOf(event.agent))) expected[i] = (expected[i] as number) + 1;
            expect(names.map((name) => view.agent(name).incarnation)).toEqual(expected);
            expect(names.map((name) => view.status(name))).toEqual(names.map(() => ProcessStatus.RUNNING));
            // every crash asked for is on record (an injected one may add to them, never take one away)
            const asked = commands.filter((c) => c.crash).length;
            expect(crashes.length).toBeGreaterThanOrEqual(asked);
          },
        });
        injected += run.trace.filter((step) => step.kind === "crash" || step.kind === "store.fail").length;
      }),
      { numRuns: RUNS || 200 },
    );
    expect(injected).toBeGreaterThan(0); // the faults were really mixed in
  });
});
