import type { CheckedOptions } from "./check-options.js";
import type { Gate } from "./gate.js";
import type { TargetedFaults } from "./targeted-faults.js";
import type { SimulationChoice, SimulationFaultKind } from "./types.js";

/**
 * The fault the chooser applies at step `step` instead of (or to) `choice`:
 * a targeted fault first (decided, not drawn), then `kill` (unless not `killable`: the step's node is down),
 * then each fault `gate` allows, each asked with its probability; `undefined` when none, or when the chooser decides no faults.
 * @internal
 */
export async function chooseFault(options: CheckedOptions, targets: TargetedFaults, gate: Gate, choice: SimulationChoice, step: number, killable = true): Promise<SimulationFaultKind | undefined> {
  const placed = targets.at(choice, gate.faults);
  if (placed !== undefined && (placed !== "kill" || killable)) return placed;
  const chooser = options.chooser;
  if (chooser.fault === undefined) return undefined;
  const kills = options.probability("kill");
  if (kills > 0 && killable && (await chooser.fault(choice, "kill", kills, step))) return "kill";
  for (const kind of gate.faults) {
    const probability = options.probability(kind);
    if (probability > 0 && (await chooser.fault(choice, kind, probability, step))) return kind;
  }
  return undefined;
}
