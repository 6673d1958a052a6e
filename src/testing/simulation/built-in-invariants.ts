import { refuses, SETTLEMENT_EVENTS, type AuditEvent } from "../../audit/audit-event.js";
import { OwnerFences } from "../../audit/owner-fence.js";
import type { ProcessRunner } from "../../process/process-runner.js";
import { isLegalTransition, ProcessStatus } from "../../contracts/process-status.js";
import type { AuditLog } from "./simulated-audit-sink.js";
import type { SimulationInvariant, SimulationView } from "./types.js";

/** What the business-while-SUSPENDED check needs to know about a delivery step. */
export interface WatchedDelivery {
  readonly runner: ProcessRunner;
  readonly suspended: boolean;
  readonly taken: number;
  readonly transitions: number;
}


/** What the "settled once" check has read of one audit log: how far, the pauses it settled, its owners' fences. */
class SettlementReader {
  seen = 0;
  readonly settled = new Map<string, AuditEvent>();
  readonly fences = new OwnerFences();
}

/**
 * The runtime's own invariants, checked after every step on every node:
 * only legal status transitions; no business message taken while its
 * agent is SUSPENDED; every pause settled (resumed, denied, cancelled) at
 * most once, counting only settlements that decide (not a fenced-out
 * owner's, and not one an `agent.settlement.refused` set aside:
 * audit/owner-fence.ts). Each node's audit log is read on its own: a
 * pause's receipts are written by the runtime that owns its agent.
 */
export class BuiltInInvariants {
  private problem: { name: string; text: string } | undefined;
  private readonly transitions = new Map<string, number>();
  private readonly readers = new Map<AuditLog, SettlementReader>();
  private readonly logs: () => Iterable<AuditLog>;

  /** `logs`: the audit log to read, or every node's (read anew at each check: nodes may come later). */
  constructor(logs: AuditLog | (() => Iterable<AuditLog>)) {
    this.logs = typeof logs === "function" ? logs : () => [logs];
  }

  /** Called for each `agent.status` event. */
  transition(agent: string, from: ProcessStatus, to: ProcessStatus): void {
    this.transitions.set(agent, (this.transitions.get(agent) ?? 0) + 1);
    if (!isLegalTransition(from, to)) this.problem ??= { name: "legal-transitions", text: `'${agent}' went from ${from} to ${to}, which is not a legal transition` };
  }

  /** A kill: a new runtime's agents start afresh. */
  restart(): void {
    this.transitions.clear();
  }

  /** Notes an agent's state before its delivery step opens. */
  watch(runner: ProcessRunner | undefined): WatchedDelivery | undefined {
    if (runner === undefined) return undefined;
    return {
      runner,
      suspended: runner.currentStatus === ProcessStatus.SUSPENDED,
      taken: runner.box?.businessTakenCount ?? 0,
      transitions: this.transitions.get(runner.agent.name) ?? 0,
    };
  }

  /** After the delivery step: a SUSPENDED agent that stayed SUSPENDED took no business message. */
  checkDelivery(watched: WatchedDelivery): void {
    const r = watched.runner;
    if (!watched.suspended || (this.transitions.get(r.agent.name) ?? 0) !== watched.transitions) return;
    if ((r.box?.businessTakenCount ?? 0) > watched.taken) {
      this.problem ??= { name: "nothing-handled-while-suspended", text: `'${r.agent.name}' took a business message while SUSPENDED` };
    }
  }

  /** The first problem found since the start, if any. */
  check(): { name: string; text: string } | undefined {
    for (const log of this.logs()) {
      let reader = this.readers.get(log);
      if (reader === undefined) this.readers.set(log, (reader = new SettlementReader()));
      this.read(log, reader);
    }
    return this.problem;
  }

  /** Reads what `log` acknowledged since the last check: a pause settled a second time is a problem. */
  private read(log: AuditLog, r: SettlementReader): void {
    const events = log.acknowledged;
    for (; r.seen < events.length; r.seen++) {
      const event = events[r.seen] as AuditEvent;
      const id = event.details.suspensionId;
      const fencedOut = r.fences.fencedOut(event) !== undefined;
      r.fences.see(event);
      if (typeof id !== "string" || fencedOut) continue;
      const first = r.settled.get(id);
      if (first !== undefined && refuses(event, first)) r.settled.delete(id);
      else if (!SETTLEMENT_EVENTS.has(event.event)) continue;
      else if (first !== undefined) {
        this.problem ??= { name: "pause-settled-once", text: `the pause ${id} of '${event.agent}' was settled twice: ${first.event}, then ${event.event}` };
      } else r.settled.set(id, event);
    }
  }
}

/** The first user invariant that fails on `view` (named after its function, else by its position), with what it said or threw. */
export function userProblem(invariants: readonly SimulationInvariant[], view: SimulationView): { name: string; text: string } | undefined {
  for (let i = 0; i < invariants.length; i++) {
    const invariant = invariants[i] as SimulationInvariant;
    const name = invariant.name === "" ? `#${i}` : invariant.name;
    try {
      const text = invariant(view);
      if (typeof text === "string") return { name, text };
    } catch (error) {
      return { name, text: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  }
  return undefined;
}
