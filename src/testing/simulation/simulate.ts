import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import { replayChooser } from "./replay-chooser.js";
import { checkSimulationOptions } from "./check-options.js";
import { SimulationEngine } from "./simulation.js";
import type { Simulation, SimulationOptions, SimulationStep } from "./types.js";

/**
 * A deterministic simulation of the real runtime: the tree `root()` builds
 * runs in a real `Runtime`, and every step the event loop would otherwise
 * decide — which agent takes its next message, when a reply settles its
 * ask, when a store write or an audit append completes, when a timer fires —
 * is chosen by a chooser (a seeded random one by default). Virtual time
 * moves only when nothing else is ready. Faults (store writes failing,
 * hanging, lost or fenced; crashes; kills) come from the same seed. Invariants run
 * after every step; a problem rejects with a {@link SimulationFailure}
 * carrying the trace, which {@link replay} runs again.
 *
 * Only one simulation runs at a time in a process (ids and the runtime's
 * hooks are process-wide): `start()` of a second rejects with
 * `SIMULATION_BUSY` until the first stopped or failed.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) for a bad option, before anything runs
 * @throws {@link DuplicateNameError} (`DUPLICATE_NAME`) with `nodes`, when an agent name is used on two nodes (each factory is called once to read its tree)
 * @example
 * ```ts
 * const sim = simulate({ root: () => new Supervisor("bank", { children: [new Ledger("ledger")] }), seed: 7 });
 * await sim.start();
 * sim.send("ledger", "deposit", { amount: 10 });
 * await sim.run();
 * await sim.stop();
 * ```
 */
export function simulate(options: SimulationOptions): Simulation {
  return engine(options, undefined);
}

/**
 * Runs a saved trace again: the same options (a seed is not needed), the
 * same user operations in the same order, and each step chosen by its key.
 * When the run cannot follow the trace (a key not ready when expected, a
 * different step recorded), it rejects with `SIMULATION_DIVERGED` naming
 * the step.
 * @throws {@link InvalidArgumentError} (`INVALID_ARGUMENT`) when `trace` is not an array of steps
 * @example
 * ```ts
 * const again = replay(failure.trace, { root });
 * await again.start();
 * again.send("ledger", "deposit", { amount: 10 });
 * await again.run(); // fails at the same step, the same way
 * ```
 */
export function replay(trace: readonly SimulationStep[], options: Omit<SimulationOptions, "seed" | "chooser">): Simulation {
  if (!Array.isArray(trace) || trace.some((s) => typeof s !== "object" || s === null || typeof (s as SimulationStep).key !== "string" || typeof (s as SimulationStep).kind !== "string")) {
    throw new InvalidArgumentError("trace", `replay(trace): trace must be the array of steps a simulation recorded (sim.trace or SimulationFailure.trace), got ${describeValue(trace)}`);
  }
  return engine({ ...options, chooser: replayChooser(trace) }, trace);
}

/** Builds an engine from options checked here; `expected` is the trace a replay follows. */
function engine(options: unknown, expected: readonly SimulationStep[] | undefined): SimulationEngine {
  return new SimulationEngine(checkSimulationOptions(options, expected !== undefined), expected);
}
