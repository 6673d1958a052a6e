import type { Message } from "../message/message.js";
import type { Scheduler } from "./scheduler.js";

/**
 * What a simulation (`simulate()` of `civitas-ts/testing`) lends the runtime
 * it builds, so that it decides every step the event loop would otherwise
 * decide. A runtime built outside a simulation has none and pays nothing.
 * @internal
 */
export interface SimulationHooks {
  /** Gates each agent's next dispatch. */
  readonly scheduler: Scheduler;
  /** Called, instead of settling an ask with its reply at once, with what settles it: the simulation runs `settle` when it chooses. */
  readonly settleReply: (reply: Message, settle: () => void) => void;
}

let joining: SimulationHooks | undefined;

/**
 * Runs `build` (which constructs a Runtime) so that the runtime joins the
 * simulation `hooks`; only a runtime constructed inside `build` does.
 * @internal
 */
export function buildSimulated<T>(hooks: SimulationHooks, build: () => T): T {
  joining = hooks;
  try {
    return build();
  } finally {
    joining = undefined;
  }
}

/** The simulation a runtime under construction joins, if any. @internal */
export function joiningSimulation(): SimulationHooks | undefined {
  return joining;
}
