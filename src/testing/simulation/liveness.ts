import { SimulationFailure } from "./simulation-failure.js";
import type { Simulation, SimulationInvariant, SimulationView } from "./types.js";

/**
 * A liveness monitor: a property that must *eventually* hold (a payment
 * settles, every pause is decided), where an invariant says what must
 * *always* hold. Pass {@link LivenessMonitor.watch} among the simulation's
 * `invariants` (it is checked after every step and never fails a step), run
 * the simulation, then call {@link LivenessMonitor.check}: it throws a
 * `SIMULATION_LIVENESS` {@link SimulationFailure} with the whole trace when
 * the property never held (the run became quiescent, or hit its step
 * limit, without it).
 */
export interface LivenessMonitor {
  /** The invariant to pass to `simulate({ invariants })`: it records the first step at which the property held. */
  readonly watch: SimulationInvariant;
  /** The step after which the property first held; `undefined` while it never has. */
  readonly heldAt: number | undefined;
  /**
   * Throws `SIMULATION_LIVENESS` (with `sim`'s trace) unless the property
   * has held. Call it after `sim.run()` resolved, or with the
   * `SIMULATION_STEP_LIMIT` failure a livelocked run ended with.
   */
  check(sim: Simulation, ended?: unknown): void;
}

/**
 * A monitor of `property`, named `name` in its failure.
 * @example
 * ```ts
 * const settles = eventually("the payment settles", (view) => view.stored("payer")?.paid === 1);
 * const sim = simulate({ root, seed, invariants: [settles.watch] });
 * await sim.start(); void sim.send("payer", "pay", {}); await sim.run().catch((e) => settles.check(sim, e));
 * settles.check(sim);
 * ```
 */
export function eventually(name: string, property: (view: SimulationView) => boolean): LivenessMonitor {
  let heldAt: number | undefined;
  let steps = 0;
  const watch: SimulationInvariant = (view) => {
    steps++;
    if (heldAt === undefined && property(view)) heldAt = steps;
    return undefined;
  };
  Object.defineProperty(watch, "name", { value: `eventually: ${name}` });
  return {
    watch,
    get heldAt() {
      return heldAt;
    },
    check(sim: Simulation, ended?: unknown): void {
      if (heldAt !== undefined) return;
      const trace = ended instanceof SimulationFailure ? ended.trace : sim.trace;
      const how = ended === undefined ? "the run became quiescent" : ended instanceof SimulationFailure && ended.code === "SIMULATION_STEP_LIMIT" ? "the run hit its step limit" : `the run ended (${ended instanceof Error ? ended.message : "without a step limit"})`;
      throw new SimulationFailure("SIMULATION_LIVENESS", `liveness: "${name}" never held; ${how} after ${trace.length} steps`, trace, trace.length - 1);
    },
  };
}
