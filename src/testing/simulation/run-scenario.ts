import { CivitasError, describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import type { SimulationScenario } from "./scenario.js";
import { replay, simulate } from "./simulate.js";
import { SimulationFailure } from "./simulation-failure.js";
import type { Simulation, SimulationOptions, SimulationStep, SimulationView } from "./types.js";

/** How one command of a scenario ended. */
export interface CommandOutcome {
  /** The command's label. */
  readonly label: string;
  /** The round it was issued in (from 0). */
  readonly round: number;
  /** `"done"` (its promise resolved, or it returned none), `"pending"` (unsettled when the scenario ended) or `error:<code>`. */
  readonly result: "done" | "pending" | `error:${string}`;
  /** What its promise resolved with. */
  readonly value?: unknown;
}

/** Options of {@link runSimulationScenario}: those of `simulate`, and how the scenario runs and is checked. */
export interface ScenarioRunOptions extends SimulationOptions {
  /** Follow this trace (from a `SimulationFailure`) instead of choosing: `replay(trace, options)`. */
  readonly replay?: readonly SimulationStep[];
  /**
   * How each round ends: `"run"` lets virtual time advance until no timer
   * is left (ask timeouts, backoff, deadlines fire); `"idle"` stops when
   * nothing is ready without moving time. @defaultValue "run"
   */
  readonly settle?: "run" | "idle";
  /**
   * Checked once the last round has settled, on the quiescent system
   * (invariants that only hold when nothing is in flight, such as "no money
   * created or lost"): return (or throw) a description of what is wrong. A
   * failure rejects with a `SimulationFailure` (`SIMULATION_INVARIANT`)
   * carrying the whole trace.
   */
  readonly check?: (view: SimulationView, outcomes: readonly CommandOutcome[]) => string | void | undefined | Promise<string | void | undefined>;
}

/** What {@link runSimulationScenario} observed. */
export interface ScenarioRun {
  /** One per command, in the order they were issued. */
  readonly outcomes: readonly CommandOutcome[];
  /** Every step of the run, for `replay`. */
  readonly trace: readonly SimulationStep[];
}

/**
 * Runs `scenario` on a new simulation of the system `options.root` builds:
 * issues each round's commands together, runs the simulation until it is
 * quiescent, then the next round; finally runs `check`, and stops the
 * simulation. A failure — an invariant, a deadlock, the step limit, or
 * `check` — rejects with a `SimulationFailure` whose message names the
 * scenario and prints the trace; pass its `trace` back as `replay` to run
 * the same schedule again.
 *
 * @throws (rejects) {@link SimulationFailure} when the run breaks an invariant, deadlocks, exceeds `maxSteps` or fails `check`
 * @throws (rejects) {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a malformed scenario, `settle` or `check`, before the simulation starts
 * @example
 * ```ts
 * await fc.assert(fc.asyncProperty(simulationScenarioArbitrary(transfer), fc.integer(), async (scenario, seed) => {
 *   await runSimulationScenario(scenario, { root, seed, check: (view) => total(view) === 200 ? undefined : "money created or lost" });
 * }));
 * ```
 */
export async function runSimulationScenario(scenario: SimulationScenario, options: ScenarioRunOptions): Promise<ScenarioRun> {
  if (!Array.isArray((scenario as Partial<SimulationScenario> | null)?.rounds)) {
    throw new InvalidArgumentError("scenario", `runSimulationScenario(scenario): scenario must come from simulationScenario(rounds) or simulationScenarioArbitrary(command), got ${describeValue(scenario)}`);
  }
  const { replay: trace, settle = "run", check, ...simulation } = options;
  if (settle !== "run" && settle !== "idle") throw new InvalidArgumentError("settle", `runSimulationScenario: settle must be "run" or "idle", got ${describeValue(settle)}`);
  if (check !== undefined && typeof check !== "function") throw new InvalidArgumentError("check", `runSimulationScenario: check must be a function (view, outcomes) => string | void, got ${describeValue(check)}`);
  const sim: Simulation = trace === undefined ? simulate(simulation) : replay(trace, simulation);
  const outcomes: Array<{ -readonly [K in keyof CommandOutcome]: CommandOutcome[K] }> = [];
  try {
    await sim.start();
    for (const [round, commands] of scenario.rounds.entries()) {
      for (const command of commands) {
        const outcome: (typeof outcomes)[number] = { label: command.label, round, result: "pending" };
        outcomes.push(outcome);
        const issued = command.issue(sim);
        if (issued === undefined) outcome.result = "done";
        else {
          const settled = issued.then(
            (value) => Object.assign(outcome, { result: "done", value }),
            (error: unknown) => (outcome.result = `error:${error instanceof CivitasError ? error.code : error instanceof Error ? error.name : String(error)}`),
          );
          if (command.exclusive === true) {
            await settled;
            // A failure while it drove the simulation ended the simulation: it is the run's failure.
            const failure = await issued.then(
              () => undefined,
              (error: unknown) => error,
            );
            if (failure instanceof SimulationFailure) throw failure;
          }
        }
      }
      await (settle === "run" ? sim.run() : sim.idle());
    }
    let problem: string | void | undefined;
    try {
      problem = await check?.(sim.view, outcomes);
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
    if (problem !== undefined) {
      // The final check is its own line of the trace: no step caused it alone, least of all the last one.
      const trace = [...sim.trace, { step: sim.trace.length, kind: "check" as const, key: "check", detail: problem }];
      throw new SimulationFailure("SIMULATION_INVARIANT", `scenario ${scenario.toString()}: ${problem}`, trace);
    }
    return { outcomes, trace: [...sim.trace] };
  } catch (error) {
    if (error instanceof SimulationFailure && !error.message.startsWith("scenario ")) {
      throw new SimulationFailure(error.code as ConstructorParameters<typeof SimulationFailure>[0], `scenario ${scenario.toString()}: ${error.message.split("\n\ntrace")[0]}`, error.trace, error.failedAt);
    }
    throw error;
  } finally {
    await sim.stop().catch(() => undefined);
  }
}
