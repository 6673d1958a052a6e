import type { AuditEvent } from "../../audit/audit-event.js";
import { StateFencedError } from "../../errors/errors.js";
import { assertJsonObject, copyJson, type JsonObject } from "../../message/json.js";
import { assertStateName } from "../../state/state-record.js";
import type { StateStore } from "../../state/state-store.js";
import { StoreUnavailableError } from "../../state/store-unavailable-error.js";
import type { Gate, GateBoard, GateOutcome } from "./gate.js";
import type { AuditLog } from "./simulated-audit-sink.js";
import { SimulatedCrash } from "./simulation-failure.js";
import type { SimulationChoice, SimulationFaultKind } from "./types.js";

/**
 * What a simulation's store holds across kills: `durable` is what a kill
 * keeps; `visible` is what reads see now (it differs by the writes that
 * were acknowledged but lost).
 */
export class DurableData {
  readonly durable = new Map<string, JsonObject>();
  visible = new Map<string, JsonObject>();
  /** Per name, the writes so far: the ordinal in a write's key. */
  readonly ordinals = new Map<string, number>();

  /** After a kill: only what was durable is left. */
  restart(): void {
    this.visible = new Map(this.durable);
  }
}

const WRITE_FAULTS: readonly SimulationFaultKind[] = ["crash", "store.fail", "store.hang", "store.lose", "store.fenced"];

/**
 * The state store of one runtime incarnation of a simulation: reads answer
 * at once from what is visible; each write completes only when the
 * simulation chooses it, with the fault it chose (fail, hang, lose, crash,
 * fenced). Durable: what it acknowledged survives `sim.kill()`, lost writes
 * aside. A fenced write means another process took the agent over: every
 * later write of that agent to this store is fenced too.
 *
 * Fenced as `PostgresStateStore.fenced` is: each incarnation writes with
 * its own fence (`2 × epoch + 1`), which the runtime stamps on its
 * receipts, and a takeover (the first fenced write of an agent) puts the
 * successor's `agent.claimed` (fence `2 × epoch + 2`) on the log at that
 * moment, as a successor's start does before its claim; a receipt the
 * fenced-out incarnation appends later is then a fenced-out owner's.
 */
export class SimulatedStore implements StateStore {
  readonly durable = true;
  /** The fence this incarnation writes with: newer than every earlier incarnation's and successor's. */
  readonly fence: number;
  /** Agents another process took over (a `store.fenced` fault): their writes are refused from then on. */
  private readonly takenOver = new Set<string>();

  constructor(
    private readonly data: DurableData,
    private readonly board: GateBoard,
    private readonly epoch: number,
    private readonly log: AuditLog,
  ) {
    this.fence = 2 * epoch + 1;
  }

  async get(name: string): Promise<JsonObject | undefined> {
    assertStateName(name);
    this.board.touch(`store:${name}`);
    const state = this.data.visible.get(name);
    return state === undefined ? undefined : copyJson(state);
  }

  async set(name: string, state: JsonObject): Promise<void> {
    assertStateName(name);
    assertJsonObject(state, `state of '${name}'`);
    return this.write("set", name, copyJson(state));
  }

  async delete(name: string): Promise<void> {
    assertStateName(name);
    return this.write("delete", name, undefined);
  }

  async list(): Promise<string[]> {
    this.board.touch("*");
    return [...this.data.visible.keys()].sort();
  }

  async close(): Promise<void> {}

  private write(operation: "set" | "delete", name: string, state: JsonObject | undefined): Promise<void> {
    this.board.touch(`store:${name}`);
    const ordinal = (this.data.ordinals.get(name) ?? 0) + 1;
    this.data.ordinals.set(name, ordinal);
    return new Promise((resolve, reject) => this.board.add(new WriteGate(this.data, this.takenOver, this.log, this.fence, operation, name, state, ordinal, resolve, reject), this.epoch));
  }
}

/** A store write waiting to complete. */
class WriteGate implements Gate {
  readonly faults = WRITE_FAULTS;
  private readonly choice: SimulationChoice;

  constructor(
    private readonly data: DurableData,
    private readonly takenOver: Set<string>,
    private readonly log: AuditLog,
    private readonly fence: number,
    private readonly operation: "set" | "delete",
    private readonly name: string,
    private readonly state: JsonObject | undefined,
    private readonly ordinal: number,
    private readonly resolve: () => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.choice = { kind: "store", key: `store.${operation}:${name}#${ordinal}`, thread: "store", agent: name, type: operation };
  }

  offer(): SimulationChoice {
    return this.choice;
  }

  open(fault: SimulationFaultKind | undefined): GateOutcome {
    const type = this.operation;
    // Taken over earlier: the row carries the newer fence, so this write is refused whatever fault was drawn.
    switch (this.takenOver.has(this.name) ? "store.fenced" : fault) {
      case "store.fail":
        this.reject(new StoreUnavailableError("STORE_UNAVAILABLE", "SimulatedStore", `simulated fault: the ${type} of '${this.name}' failed; nothing was written`));
        return { kind: "store.fail", type };
      case "store.hang":
        return { kind: "store.hang", type, detail: "never completes" };
      case "store.lose":
        this.apply(this.data.visible);
        this.resolve();
        return { kind: "store.lose", type, detail: "acknowledged, gone after the next kill" };
      case "store.fenced": {
        const first = !this.takenOver.has(this.name);
        this.takenOver.add(this.name);
        if (first) this.log.acknowledged.push(successorClaim(this.log, this.name, this.fence + 1));
        this.reject(new StateFencedError(this.name, this.fence, this.fence + 1));
        return { kind: "store.fenced", type, detail: first ? "another process took the agent over; nothing was written" : "the agent is owned elsewhere; nothing was written" };
      }
      case "crash": {
        // Odd writes crash before they are applied, even ones after: both points, stable under replay.
        const before = this.ordinal % 2 === 1;
        if (!before) this.applyDurably();
        const point = `${before ? "before" : "after"} the ${type} of its state`;
        this.reject(new SimulatedCrash(this.name, point));
        return { kind: "crash", type, detail: point };
      }
      default:
        this.applyDurably();
        this.resolve();
        return { kind: "store.write", type, ...(this.state !== undefined && "_civitas.suspended" in this.state ? { detail: "with a suspension marker" } : {}) };
    }
  }

  private applyDurably(): void {
    this.apply(this.data.visible);
    this.apply(this.data.durable);
  }

  private apply(map: Map<string, JsonObject>): void {
    if (this.state === undefined) map.delete(this.name);
    else map.set(this.name, this.state);
  }
}

/** The successor's `agent.claimed` receipt of a takeover, dated as the log's last row. */
function successorClaim(log: AuditLog, agent: string, fence: number): AuditEvent {
  const ts = log.acknowledged.at(-1)?.ts ?? new Date(0).toISOString();
  return { event: "agent.claimed", ts, agent, signerId: "successor", details: { fence } };
}
