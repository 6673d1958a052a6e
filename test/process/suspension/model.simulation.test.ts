/**
 * The suspension model tests of model.property.test.ts, run under the
 * deterministic simulation (issue 13, item 7): the same generated lifecycle
 * scenarios, as commands of a simulated system, with every interleaving of
 * deliveries, replies, store writes and audit appends chosen by a seed —
 * first one command per round (the model's setting: the outcome must be
 * what SuspensionModel predicts, whatever the schedule), then with crashes
 * and store faults mixed in (the invariants must hold).
 *
 * Runs: CIVITAS_PROPERTY_RUNS=2000 npx vitest run test/process/suspension/model.simulation.test.ts
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProcessStatus } from "../../../src/index.js";
import {
  LifecycleSimulation,
  lifecycleCommandsArbitrary,
  runSimulationScenario,
  SimulationFailure,
  simulationScenario,
  SuspensionModel,
  type LifecycleCommand,
} from "../../../src/entries/testing.js";
import { Tally } from "./helpers.js";

const RUNS = Number(process.env.CIVITAS_PROPERTY_RUNS ?? 0);

// Tally: every business message is a store write the simulation schedules.
/** Lifecycle scenarios with a simulated form: no `elapse` (virtual time moves only when nothing is ready), no `shutdown`. */
const scenarios = lifecycleCommandsArbitrary({ maxLength: 25, weights: { elapse: 0 }, shutdown: "never" });

/** `[command]` rounds: each command settles (nothing ready) before the next, as the model assumes. */
function sequential(life: LifecycleSimulation, commands: readonly LifecycleCommand[]) {
  return simulationScenario(commands.map((command) => [life.command(command)]));
}

describe("durable suspension against its reference model, under simulation (property)", () => {
  it("whatever the schedule, the simulated runtime ends where SuspensionModel says, and the store agrees", { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(scenarios, fc.integer(), async (commands, seed) => {
        const life = new LifecycleSimulation({ createAgent: (name) => new Tally(name) });
        const model = SuspensionModel.run(commands);
        const last = model.steps.at(-1);
        await runSimulationScenario(sequential(life, commands), {
          root: life.root,
          seed,
          settle: "idle",
          // The model keeps a suspended agent's backlog in memory (a kill loses it, and the simulation sends it again):
          // the durable backlog has its own tests (backlog.test.ts, backlog-crash.test.ts).
          runtime: { durableBacklog: false },
          check: (view) => {
            const outcome = life.outcome(view);
            expect(outcome).toEqual({
              handled: model.handled,
              crashed: model.crashed,
              unhandled: model.unhandled,
              status: last?.status ?? ProcessStatus.RUNNING,
              suspension: last?.suspension ?? null,
              reason: last?.reason ?? null,
            });
            const business = new Set(commands.flatMap((c) => (c.kind === "send" || c.kind === "ask" ? [c.id] : [])));
            expect((view.stored("subject")?.ids as number[] | undefined) ?? []).toEqual(outcome.handled.filter((id) => business.has(id)));
            expect(life.entries.filter((e) => e.status !== ProcessStatus.RUNNING)).toEqual([]);
          },
        });
      }),
      { numRuns: RUNS || 150 },
    );
  });

  it("with crashes and store write failures mixed in, and commands overlapping, the invariants hold", { timeout: 120_000 }, async () => {
    const rounds = fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 25, maxLength: 25 });
    const faults = { crash: 0, "store.fail": 0 };
    await fc.assert(
      fc.asyncProperty(scenarios, rounds, fc.integer(), async (commands, sizes, seed) => {
        const life = new LifecycleSimulation({ createAgent: (name) => new Tally(name) });
        // Group the commands into rounds of 1–3 that run concurrently; a restart (a kill) stands alone.
        const grouped: ReturnType<LifecycleSimulation["command"]>[][] = [];
        let at = 0;
        for (const size of sizes) {
          if (at >= commands.length) break;
          grouped.push(commands.slice(at, at + size).map((c) => life.command(c)));
          at += size;
        }
        const scenario = simulationScenario(grouped.flatMap((round) => (round.some((c) => c.exclusive === true) ? round.map((c) => [c]) : [round])));
        const run = await runSimulationScenario(scenario, {
          root: life.root,
          seed,
          settle: "idle",
          // The model keeps a suspended agent's backlog in memory (a kill loses it, and the simulation sends it again):
          // the durable backlog has its own tests (backlog.test.ts, backlog-crash.test.ts).
          runtime: { durableBacklog: false },
          faults: { crashes: 0.05, storeWrites: { fail: 0.05 } },
          check: (view) => {
            const { handled } = life.outcome(view);
            // nothing handled twice: a crash may lose a message, never repeat one
            expect(new Set(handled).size).toBe(handled.length);
            // and within one runtime, taken in the order sent (after a kill, the messages the subject
            // had not taken are sent again, so across runtimes a message a crash swallowed unseen comes later)
            const instances = new Set(life.entries.map((e) => e.instance));
            for (const instance of instances) {
              const ids = life.entries.filter((e) => e.instance === instance).map((e) => e.id);
              expect([...new Set(ids)].sort((a, b) => a - b), `runtime ${instance}`).toEqual(ids);
            }
            // nothing handled while SUSPENDED (the simulation also checks this, and legal transitions, after every step)
            expect(life.entries.filter((e) => e.status !== ProcessStatus.RUNNING)).toEqual([]);
            // only a valid approver lifts a pause, and each pause is settled once
            const decisions = view.audit.filter((e) => e.agent === "subject" && (e.event === "agent.resume" || e.event === "agent.deny"));
            for (const event of decisions) expect(String(event.details.approver ?? event.details.decider).trim()).not.toBe("");
            const settled = decisions.map((e) => e.details.suspensionId);
            expect(new Set(settled).size).toBe(settled.length);
          },
        }).catch((error: unknown) => (error instanceof SimulationFailure ? error : Promise.reject(error as Error)));
        if (run instanceof SimulationFailure) expect.fail(run.message);
        for (const step of run.trace) if (step.kind === "crash" || step.kind === "store.fail") faults[step.kind]++;
      }),
      { numRuns: RUNS || 150 },
    );
    // the faults were really mixed in
    expect(faults.crash).toBeGreaterThan(0);
    expect(faults["store.fail"]).toBeGreaterThan(0);
  });

  it("LifecycleSimulation refuses the commands that have no simulated form, naming the way out", () => {
    const life = new LifecycleSimulation();
    expect(() => life.command({ kind: "elapse" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/elapse has no simulated form.*weights: \{ elapse: 0 \}/) as unknown }));
    expect(() => life.command({ kind: "shutdown" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => new LifecycleSimulation({ agentName: "x", siblingName: "x" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/both are 'x'/) as unknown }));
  });
});
