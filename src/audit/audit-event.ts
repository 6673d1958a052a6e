import type { AuditAnchor } from "./audit-anchor.js";
import type { JsonObject } from "../message/json.js";

/** One governance-relevant fact: who did what to which agent, and when. */
export interface AuditEvent {
  /** What happened: `agent.start`, `agent.crash`, `agent.restart`, `agent.stop`, `agent.suspend`, `agent.resume` … */
  readonly event: string;
  /** When, as ISO-8601 UTC with milliseconds. */
  readonly ts: string;
  /** The agent (or supervisor) concerned. */
  readonly agent: string;
  /** Identity of the runtime that recorded the event. */
  readonly signerId: string;
  /** Event-specific facts. */
  readonly details: JsonObject;
}

/**
 * Receives audit events. `emit` may be async; the runtime never lets a
 * failing sink throw into user code (failures go to the logger).
 * The runtime never closes a sink it was given.
 */
export interface AuditSink {
  /**
   * Records `event`; the runtime waits for a returned promise where a receipt must exist before the effect (a resume).
   * Rejecting means "not recorded". A chained sink may resolve with the row's {@link AuditAnchor}; the runtime
   * then records it beside the agent's stored pause (truncation detection).
   */
  emit(event: AuditEvent): void | Promise<void | AuditAnchor>;
  /**
   * The decision already on record for the pause `suspensionId` of `agent`
   * (its `agent.resume`, `agent.deny` or `agent.suspend.cancelled` event),
   * or `undefined` when there is none. Optional: a sink that can read back
   * what it recorded implements it, and the runtime then settles a pause
   * restored after a crash exactly once (a crash between a decision's
   * receipt and the write clearing the marker brings the pause back; the
   * decision on record is completed instead of receipted a second time).
   * Rejecting means "cannot tell": the decision is then refused
   * (`AUDIT_UNAVAILABLE`) and the pause stays.
   */
  recordedSettlement?(agent: string, suspensionId: string): Promise<AuditEvent | undefined>;
}

/** The events that settle a pause: each pause gets exactly one. */
export const SETTLEMENT_EVENTS: ReadonlySet<string> = new Set(["agent.resume", "agent.deny", "agent.suspend.cancelled"]);

/**
 * The receipt of an owner that refused to carry out a decision on record
 * (its `authorizeResume` said no to the recorded approver or decider):
 * `{ suspensionId, event, decider }` name the settlement it sets aside. The
 * pause is then undecided again, and its next settlement is its decision.
 */
export const SETTLEMENT_REFUSED = "agent.settlement.refused";

/**
 * The receipt of an owner that carried out a decision whose cleared marker
 * it could not store (degraded durability), written before the decision's
 * hook runs: `{ suspensionId, event, decider }` name the decision. A
 * restart that finds the pause stored completes that decision without
 * running its hook a second time.
 */
export const SETTLEMENT_APPLIED = "agent.settlement.applied";

/**
 * Whether a reader looking up a pause's decision must wait for `event` to be
 * written when it is still queued: a settlement, a refusal, or a row that
 * tells who owns an agent (`agent.claimed`, `agent.fenced`). Other rows
 * cannot change a decision already on record. @internal
 */
export function bearsOnDecisions(event: string): boolean {
  return SETTLEMENT_EVENTS.has(event) || event === SETTLEMENT_REFUSED || event === SETTLEMENT_APPLIED || event === "agent.claimed" || event === "agent.fenced";
}

/** Who took the decision `settlement` records: the approver, the decider, or who cancelled it. @internal */
export function deciderOf(settlement: Pick<AuditEvent, "event" | "details">): unknown {
  const { details } = settlement;
  return settlement.event === "agent.resume" ? details.approver : settlement.event === "agent.deny" ? details.decider : details.by;
}

/** Whether `fact` is a {@link SETTLEMENT_REFUSED} receipt setting `settlement` aside. @internal */
export function refuses(fact: Pick<AuditEvent, "event" | "agent" | "details">, settlement: Pick<AuditEvent, "event" | "agent" | "details">): boolean {
  return names(fact, SETTLEMENT_REFUSED, settlement);
}

/** Whether `fact` is a {@link SETTLEMENT_APPLIED} receipt of `settlement`. @internal */
export function applies(fact: Pick<AuditEvent, "event" | "agent" | "details">, settlement: Pick<AuditEvent, "event" | "agent" | "details">): boolean {
  return names(fact, SETTLEMENT_APPLIED, settlement);
}

/** The event a decision on record decided: its own, or the one an {@link SETTLEMENT_APPLIED} receipt names. @internal */
export function decidedEvent(recorded: Pick<AuditEvent, "event" | "details">): string {
  return recorded.event === SETTLEMENT_APPLIED && typeof recorded.details.event === "string" ? recorded.details.event : recorded.event;
}

function names(fact: Pick<AuditEvent, "event" | "agent" | "details">, event: string, settlement: Pick<AuditEvent, "event" | "agent" | "details">): boolean {
  return (
    fact.event === event &&
    fact.agent === settlement.agent &&
    fact.details.suspensionId === settlement.details.suspensionId &&
    fact.details.event === settlement.event &&
    fact.details.decider === deciderOf(settlement)
  );
}
