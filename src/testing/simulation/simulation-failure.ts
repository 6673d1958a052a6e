import { CivitasError } from "../../errors/civitas-error.js";
import { formatTrace } from "./trace-format.js";
import type { SimulationStep } from "./types.js";

/** The codes of a {@link SimulationFailure}. */
export type SimulationFailureCode =
  | "SIMULATION_INVARIANT"
  | "SIMULATION_DEADLOCK"
  | "SIMULATION_STEP_LIMIT"
  | "SIMULATION_DIVERGED"
  | "SIMULATION_EXTERNAL_AWAIT"
  | "SIMULATION_LIVENESS";

/**
 * A simulation found a problem: an invariant failed
 * (`SIMULATION_INVARIANT`), agents wait on each other
 * (`SIMULATION_DEADLOCK`), the run took more than `maxSteps`
 * (`SIMULATION_STEP_LIMIT`), a replay could not follow its trace
 * (`SIMULATION_DIVERGED`), or a handler awaited a promise the runtime does
 * not control under `externalAwaits: "fail"` (`SIMULATION_EXTERNAL_AWAIT`),
 * or a property that must eventually hold never did (`SIMULATION_LIVENESS`, liveness.ts).
 * It carries the trace up to the failure; its message ends with the trace,
 * the failing step marked `>>`. Save `trace` (it is JSON) and pass it to
 * `replay()` to run the same schedule again.
 * @example
 * ```ts
 * try { await sim.run(); }
 * catch (error) { if (error instanceof SimulationFailure) writeFileSync("trace.json", JSON.stringify(error.trace)); throw error; }
 * ```
 */
export class SimulationFailure extends CivitasError {
  /** Every step up to and including the failing one. */
  readonly trace: readonly SimulationStep[];
  /** The index of the failing step in `trace`. */
  readonly failedAt: number;

  constructor(code: SimulationFailureCode, summary: string, trace: readonly SimulationStep[], failedAt = trace.length - 1) {
    super(code, `${summary}\n\ntrace (${trace.length} steps, the failing one marked >>):\n${formatTrace(trace, failedAt)}`);
    this.trace = trace;
    this.failedAt = failedAt;
  }
}

/** A second simulation was started while one runs in this process (ids and the runtime's hooks are process-wide). */
export class SimulationBusyError extends CivitasError {
  constructor() {
    super("SIMULATION_BUSY", "a simulation is already running in this process: only one can run at a time; await the other's stop() (or let it fail) before starting this one");
  }
}

/** What a crash injected by a simulation throws (from a handler, `onResume`, or a store write). */
export class SimulatedCrash extends CivitasError {
  /** The agent made to crash. */
  readonly agent: string;
  /** Where: `in handle`, `inside onResume`, `before the set of its state` … */
  readonly point: string;
  constructor(agent: string, point: string) {
    super("SIMULATED_CRASH", `simulated crash of '${agent}' ${point} (a fault injected by the simulation)`);
    this.agent = agent;
    this.point = point;
  }
}

/** What a fault point throws when the simulation injects an error there (`faults.points.throw`): a failure the handler may handle. */
export class SimulatedFault extends CivitasError {
  /** The agent at the point. */
  readonly agent: string;
  /** The point's name. */
  readonly point: string;
  constructor(agent: string, point: string) {
    super("SIMULATED_FAULT", `simulated fault at the point '${point}' of '${agent}' (an error injected by the simulation)`);
    this.agent = agent;
    this.point = point;
  }
}

/** A simulation was used out of order: an operation before `start()`, or after it ended (stopped or failed). */
export class SimulationStateError extends CivitasError {
  constructor(message: string) {
    super("SIMULATION_NOT_RUNNING", message);
  }
}
