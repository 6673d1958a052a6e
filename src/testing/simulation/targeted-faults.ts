import { describeValue } from "../../errors/civitas-error.js";
import { InvalidArgumentError } from "../../errors/errors.js";
import type { SimulationChoice, SimulationFaultKind, SimulationFaultTarget } from "./types.js";

const KINDS: ReadonlySet<string> = new Set<SimulationFaultKind>([
  "kill",
  "crash",
  "store.fail",
  "store.hang",
  "store.lose",
  "store.fenced",
  "net.drop",
  "net.delay",
  "net.duplicate",
  "net.partition",
  "point.crash",
  "point.throw",
  "point.delay",
  "audit.fail",
  "audit.hang",
  "audit.lose",
]);

/** Checks `faults.targets`: `INVALID_ARGUMENT` naming the target and what is wrong. @internal */
export function checkTargets(targets: unknown): readonly SimulationFaultTarget[] {
  if (targets === undefined) return [];
  if (!Array.isArray(targets)) throw new InvalidArgumentError("faults", `simulate({ faults }): faults.targets must be an array like [{ fault: "crash", agent: "bob", type: "credit", occurrence: 1 }], got ${describeValue(targets)}`);
  targets.forEach((t: unknown, i) => {
    const target = t as Partial<SimulationFaultTarget> | null;
    const bad = (why: string): never => {
      throw new InvalidArgumentError("faults", `simulate({ faults }): faults.targets[${i}]${why}, got ${describeValue(t)}`);
    };
    if (typeof target !== "object" || target === null) bad(" must be an object");
    if (typeof target?.fault !== "string" || !KINDS.has(target.fault)) bad(` needs a fault, one of ${[...KINDS].join(", ")}`);
    for (const field of ["agent", "type", "point"] as const) if (target?.[field] !== undefined && typeof target[field] !== "string") bad(`.${field} must be a string`);
    const occurrence = target?.occurrence;
    if (occurrence !== undefined && !(Number.isInteger(occurrence) && occurrence >= 1)) bad(".occurrence must be a positive integer");
  });
  return targets as readonly SimulationFaultTarget[];
}

/**
 * The targeted faults of one simulation, with how many matching steps each
 * has met (a new simulation counts from 0 again).
 * @internal
 */
export class TargetedFaults {
  private readonly seen: number[];

  constructor(private readonly targets: readonly SimulationFaultTarget[]) {
    this.seen = targets.map(() => 0);
  }

  /** The fault a target places at `choice` (whose gate allows `allowed`), if any; counts the step for every target it matches. */
  at(choice: SimulationChoice, allowed: readonly SimulationFaultKind[]): SimulationFaultKind | undefined {
    let placed: SimulationFaultKind | undefined;
    this.targets.forEach((target, i) => {
      if (!matches(target, choice, allowed)) return;
      const seen = ++(this.seen[i] as number);
      if (placed === undefined && (target.occurrence === undefined || target.occurrence === seen)) placed = target.fault;
    });
    return placed;
  }
}

function matches(target: SimulationFaultTarget, choice: SimulationChoice, allowed: readonly SimulationFaultKind[]): boolean {
  if (target.fault !== "kill" && !allowed.includes(target.fault)) return false;
  if (target.agent !== undefined && target.agent !== choice.agent) return false;
  if (target.point !== undefined && !(choice.kind === "point" && choice.type === target.point)) return false;
  return target.type === undefined || (choice.kind !== "point" && choice.type === target.type);
}
