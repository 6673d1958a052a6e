import type { Scheduler } from "../contracts/scheduler.js";
import type { Mailbox } from "../mailbox/mailbox.js";
import type { WaitingPut } from "../mailbox/mailbox-options.js";
import type { Message } from "../message/message.js";

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
  /**
   * Told of every put that begins to wait for room in a full mailbox of the
   * runtime: that wait ends when the recipient takes a message, a step the
   * simulation controls, so it is no external await. Each mailbox gets it
   * injected; it is called only when a put must wait.
   */
  readonly putWait: (mailbox: Mailbox, put: WaitingPut) => void;
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
