import type { SimulationFaultKind } from "./simulation-faults.js";

/** What a chooser chooses among: one thing the runtime is ready to do next. */
export interface SimulationChoice {
  /** What it is. */
  readonly kind: "deliver" | "reply" | "store" | "audit" | "net" | "point" | "time";
  /** Its stable key, as the trace will record it. */
  readonly key: string;
  /**
   * The "thread" it belongs to, for strategies that prioritise threads (PCT):
   * the agent's name for a delivery, the asker's for a reply, `"store"` and
   * `"audit"` for the store and the audit log, `"net:<subject>"` for a packet of the simulated bus,
   * the agent's for a fault point, `"time"` for advancing time.
   */
  readonly thread: string;
  /** The agent concerned. */
  readonly agent?: string;
  /** The sender of the message concerned. */
  readonly from?: string;
  /** The message type (or audit event, or store operation) concerned. */
  readonly type?: string;
}

/**
 * Decides, at every scheduling point of a simulation, what happens next.
 * `choose` returns the index (in `ready`) of what runs; `ready` is never
 * empty. `fault` answers whether a fault of `kind` applies to the choice
 * just made (asked only where the simulation's `faults` give that kind a
 * probability above 0, `probability` being that number): faults then come
 * from the same seed or scheduler as the choices.
 */
export interface Chooser {
  choose(ready: readonly SimulationChoice[], step: number): number | Promise<number>;
  fault?(choice: SimulationChoice, kind: SimulationFaultKind, probability: number, step: number): boolean | Promise<boolean>;
}
