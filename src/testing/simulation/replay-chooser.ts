import type { Chooser, SimulationStep } from "./types.js";

/**
 * Follows a saved trace: at step `n` it picks the ready choice whose key is
 * the trace's step `n`, and applies the fault that step records. When that
 * key is not ready it returns -1, which the simulation reports as
 * `SIMULATION_DIVERGED`.
 */
export function replayChooser(trace: readonly SimulationStep[]): Chooser {
  return {
    choose: (ready, step) => {
      const want = trace[step];
      return want === undefined ? -1 : ready.findIndex((c) => c.key === want.key);
    },
    fault: (_choice, kind, _probability, step) => trace[step]?.kind === kind,
  };
}
