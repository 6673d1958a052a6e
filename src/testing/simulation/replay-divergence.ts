import type { SimulationChoice, SimulationStep } from "./types.js";

/**
 * Why the run diverged from the saved trace `expected` when step `recorded`
 * was taken, or `undefined` when it did what the trace has (a timer matches
 * any timer: its key is relative to when the run started).
 * @internal
 */
export function recordedDivergence(expected: readonly SimulationStep[], recorded: SimulationStep): string | undefined {
  const want = expected[recorded.step];
  if (want === undefined) {
    return `replay diverged at step ${recorded.step}: the saved trace ends at step ${expected.length - 1}, but the run went on with ${recorded.kind} ${recorded.key}`;
  }
  if (want.kind !== recorded.kind || (want.key !== recorded.key && !(want.kind === "timer" && recorded.kind === "timer"))) {
    return `replay diverged at step ${recorded.step}: the saved trace has ${want.kind} ${want.key}, the run did ${recorded.kind} ${recorded.key}`;
  }
  return undefined;
}

/**
 * Why a replay of `expected` cannot take step `step`: the choice the trace
 * has there is not among the `ready` ones, or the trace has ended.
 * @internal
 */
export function unreadyDivergence(expected: readonly SimulationStep[], step: number, ready: readonly SimulationChoice[]): string {
  const want = expected[step];
  const wanted = want === undefined ? `the saved trace ends at step ${expected.length - 1}` : `the saved trace has ${want.kind} ${want.key}, which is not ready`;
  return `replay diverged at step ${step}: ${wanted}; ready: ${ready.map((o) => o.key).join(", ")}`;
}
