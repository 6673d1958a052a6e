import type { Gate, GateBoard, GateOutcome } from "./gate.js";
import type { SimulatedClock } from "./simulated-clock.js";
import { SimulatedCrash, SimulatedFault } from "./simulation-failure.js";
import type { SimulationChoice, SimulationFaultKind } from "./types.js";

const POINT_FAULTS: readonly SimulationFaultKind[] = ["point.crash", "point.throw", "point.delay"];

/**
 * The `faultPoint(name)` calls of a simulation's agents: each is a gate (a
 * step `point:<agent>:<name>#<n>`) where the chosen fault applies — a crash,
 * a thrown `SIMULATED_FAULT`, or a hold of `delayMs` on the agent's virtual
 * timer. A point passed outside any agent's step does nothing.
 * @internal
 */
export class FaultPoints {
  private readonly ordinals = new Map<string, number>();

  constructor(
    private readonly board: GateBoard,
    private readonly epoch: () => number,
    private readonly clock: SimulatedClock,
    private readonly delayMs: number,
  ) {}

  /** What `faultPoint(name)` returns under the simulation. */
  readonly hook = (name: string): Promise<void> | undefined => {
    const agent = this.clock.owner;
    if (agent === undefined) return undefined;
    const counted = `${agent}:${name}`;
    const ordinal = (this.ordinals.get(counted) ?? 0) + 1;
    this.ordinals.set(counted, ordinal);
    const choice: SimulationChoice = { kind: "point", key: `point:${counted}#${ordinal}`, thread: agent, agent, type: name };
    return new Promise((resolve, reject) => {
      const gate: Gate = {
        faults: POINT_FAULTS,
        offer: () => choice,
        open: (fault): GateOutcome => {
          switch (fault) {
            case "point.crash":
              reject(new SimulatedCrash(agent, `at its fault point '${name}'`));
              return { kind: "point.crash", type: name };
            case "point.throw":
              reject(new SimulatedFault(agent, name));
              return { kind: "point.throw", type: name };
            case "point.delay":
              this.clock.setTimeout(resolve, this.delayMs);
              return { kind: "point.delay", type: name, detail: `held ${this.delayMs} ms` };
            default:
              resolve();
              return { kind: "point", type: name };
          }
        },
      };
      this.board.add(gate, this.epoch());
    });
  };
}
