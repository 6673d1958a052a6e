import type { AuditEvent, AuditSink } from "../../audit/audit-event.js";
import { effectiveSettlement } from "../../audit/owner-fence.js";
import type { Gate, GateBoard, GateOutcome } from "./gate.js";
import type { SimulationChoice, SimulationFaultKind, SimulationStepKind } from "./types.js";

/** The audit events a simulation's audit log acknowledged (they survive a kill), and the ordinals of appends. */
export class AuditLog {
  readonly acknowledged: AuditEvent[] = [];
  readonly ordinals = new Map<string, number>();
}

const KINDS: Readonly<Record<string, SimulationStepKind>> = {
  "agent.suspend": "suspend",
  "agent.resume": "resume",
  "agent.deny": "decision",
  "agent.restart": "restart",
};

const NONE: readonly SimulationFaultKind[] = [];

/** The audit sink of one runtime incarnation of a simulation: each append completes only when the simulation chooses it. */
export class SimulatedAuditSink implements AuditSink {
  constructor(
    private readonly log: AuditLog,
    private readonly board: GateBoard,
    private readonly epoch: number,
  ) {}

  emit(event: AuditEvent): Promise<void> {
    const counted = `${event.event}:${event.agent}`;
    const ordinal = (this.log.ordinals.get(counted) ?? 0) + 1;
    this.log.ordinals.set(counted, ordinal);
    const choice: SimulationChoice = { kind: "audit", key: `audit:${counted}#${ordinal}`, thread: "audit", agent: event.agent, type: event.event };
    return new Promise((resolve) => {
      const gate: Gate = {
        faults: NONE,
        offer: () => choice,
        open: (): GateOutcome => {
          this.log.acknowledged.push(event);
          resolve();
          return { kind: KINDS[event.event] ?? "audit", type: event.event };
        },
      };
      this.board.add(gate, this.epoch);
    });
  }

  /** The decision the log acknowledged for the pause `suspensionId` of `agent` (acknowledged appends survive a kill). */
  recordedSettlement(agent: string, suspensionId: string): Promise<AuditEvent | undefined> {
    return Promise.resolve(effectiveSettlement(this.log.acknowledged, agent, suspensionId));
  }
}
