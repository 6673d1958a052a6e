import type { Mailbox } from "../mailbox/mailbox.js";
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

/** A put waiting for room in a full lane of a mailbox: its message, and whether it has ended (admitted, aborted or refused). @internal */
export interface WaitingPut {
  readonly message: Message;
  readonly settled: boolean;
}

/**
 * Told of every put that begins to wait for room in a full mailbox, while a
 * simulation runs (process-wide, as the simulation is): that wait ends when
 * the recipient takes a message, a step the simulation controls, so it is
 * no external await. A mailbox reads `watcher` only when a put must wait;
 * without a simulation it is `undefined`.
 * @internal
 */
export const putWaits: { watcher: ((mailbox: Mailbox, put: WaitingPut) => void) | undefined } = { watcher: undefined };
