import type { SimulationChoice, SimulationFaultKind, SimulationStepKind } from "./types.js";

/** What opening a gate did, for the trace. */
export interface GateOutcome {
  readonly kind: SimulationStepKind;
  readonly from?: string;
  readonly type?: string;
  readonly messageId?: string;
  readonly detail?: string;
}

/**
 * One scheduling point the runtime waits at: something it is ready to do
 * that happens only when the simulation chooses it.
 */
export interface Gate {
  /** What it offers to a chooser now (a delivery's offer follows its mailbox's head); `undefined` when it would do nothing, so it is let go without a step. */
  offer(): SimulationChoice | undefined;
  /** Faults that can apply here (beside `kill`, which applies anywhere). */
  readonly faults: readonly SimulationFaultKind[];
  /** Lets the runtime go on, with `fault` applied; returns a fresh object (the simulation completes it into the trace step). */
  open(fault: SimulationFaultKind | undefined): GateOutcome;
}

/** Where gates wait to be chosen: the simulation's ready set. */
export interface GateBoard {
  /** Adds a gate, unless it belongs to a runtime a kill discarded (`epoch` stale): then it is never opened. */
  add(gate: Gate, epoch: number): void;
  /** Records that the step running now touches `what` (`store:<name>`, `audit` …), for the reduced search of `exhaust`. */
  touch(what: string): void;
}

/**
 * What `gates` offer now, in gate order; or `undefined` when a gate would do
 * nothing: such gates are let go (taken out of `gates` and opened, with no
 * fault), and what they let go may ready others, so ask again.
 * @internal
 */
export function offersOf(gates: Gate[]): SimulationChoice[] | undefined {
  const offers: SimulationChoice[] = [];
  let letGo = false;
  for (let i = 0; i < gates.length; ) {
    const gate = gates[i] as Gate;
    const offer = gate.offer();
    if (offer === undefined) {
      gates.splice(i, 1);
      gate.open(undefined);
      letGo = true;
    } else {
      offers.push(offer);
      i++;
    }
  }
  return letGo ? undefined : offers;
}
