import { useIdSource } from "../../message/ids.js";
import { faultPoints } from "../../runtime/fault-point.js";
import { fillFrom, mulberry32 } from "./prng.js";
import { SimulationBusyError } from "./simulation-failure.js";

/** The simulation running in this process, if any: ids and the runtime's hooks are process-wide. */
let active: object | undefined;

/**
 * Claims what a simulation holds for the whole process: the fault points'
 * hook (when given) and the source of ids, drawn from a fixed seed so a replay
 * draws the very same ids; `now` stamps them.
 * @throws {@link SimulationBusyError} when another simulation of this process is running.
 * @internal
 */
export function claimProcess(owner: object, hook: typeof faultPoints.hook, now: () => number): void {
  if (active !== undefined) throw new SimulationBusyError();
  active = owner;
  if (hook !== undefined) faultPoints.hook = hook;
  // Ids do not depend on the seed: a replay (which has no seed) draws the very same ids, so its trace is byte-identical.
  const ids = mulberry32(0x5bd1e995);
  useIdSource({ fill: (buffer) => fillFrom(ids, buffer), now });
}

/** Lets go of what {@link claimProcess} claimed for `owner`: no fault-point hook, random ids; another simulation may start. @internal */
export function releaseProcess(owner: object): void {
  if (active !== owner) return;
  active = undefined;
  faultPoints.hook = undefined;
  useIdSource(undefined);
}
