import { refuses, SETTLEMENT_EVENTS, type AuditEvent } from "./audit-event.js";

// A pause is decided by its owner of record. A runtime on a fenced store stamps every receipt with
// its fence (`details.fence`); an `agent.fenced` row also names the fence that took over
// (`details.currentFence`). A settlement stamped with a fence lower than one already seen for the
// same agent earlier in the log was written by an owner fenced out by then: it is not a decision.

/** What the fence rules read of a row or an event. @internal */
export type FencedFact = Pick<AuditEvent, "event" | "agent" | "details">;

function fenceValue(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** The fence of the owner that wrote `fact`, when it was written by a runtime on a fenced store. @internal */
export function writerFence(fact: FencedFact): number | undefined {
  return fenceValue(fact.details.fence);
}

/**
 * The highest fence the log has shown for each agent so far, read in log
 * order with {@link OwnerFences.see}. @internal
 */
export class OwnerFences {
  readonly #highest = new Map<string, number>();

  /** Takes in `fact` (after asking {@link OwnerFences.fencedOut} about it). */
  see(fact: FencedFact): void {
    const seen = Math.max(writerFence(fact) ?? 0, fact.event === "agent.fenced" ? (fenceValue(fact.details.currentFence) ?? 0) : 0);
    if (seen > (this.#highest.get(fact.agent) ?? 0)) this.#highest.set(fact.agent, seen);
  }

  /**
   * The newer fence that owned `fact`'s agent before `fact` was written,
   * when `fact` carries an older one (its writer was fenced out); else `undefined`.
   */
  fencedOut(fact: FencedFact): number | undefined {
    const fence = writerFence(fact);
    const highest = this.#highest.get(fact.agent);
    return fence !== undefined && highest !== undefined && fence < highest ? highest : undefined;
  }
}

/** A pause, as the key of {@link effectiveSettlements}' answer. @internal */
export function pauseKey(agent: string, suspensionId: string): string {
  return `${agent}\u0000${suspensionId}`;
}

/**
 * The decision of each pause of `wanted` among `facts` (in log order), in
 * one pass, keyed by {@link pauseKey}: the first settlement naming it that
 * was not written by a fenced-out owner and that no later owner's
 * `agent.settlement.refused` set aside (after such a refusal, the next
 * settlement is the decision). A pause without one has no entry. @internal
 */
export function effectiveSettlements<T extends FencedFact>(facts: Iterable<T>, wanted: Iterable<{ readonly agent: string; readonly suspensionId: string }>): Map<string, T> {
  const open = new Set<string>();
  for (const pause of wanted) open.add(pauseKey(pause.agent, pause.suspensionId));
  const decisions = new Map<string, T>();
  const fences = new OwnerFences();
  for (const fact of facts) {
    const id = fact.details.suspensionId;
    if (typeof id === "string" && fences.fencedOut(fact) === undefined) {
      const key = pauseKey(fact.agent, id);
      const decision = decisions.get(key);
      if (decision === undefined) {
        if (SETTLEMENT_EVENTS.has(fact.event) && open.has(key)) decisions.set(key, fact);
      } else if (refuses(fact, decision)) decisions.delete(key);
    }
    fences.see(fact);
  }
  return decisions;
}

/** The decision of the pause `suspensionId` of `agent` among `facts` (see {@link effectiveSettlements}); `undefined` when none. @internal */
export function effectiveSettlement<T extends FencedFact>(facts: Iterable<T>, agent: string, suspensionId: string): T | undefined {
  return effectiveSettlements(facts, [{ agent, suspensionId }]).get(pauseKey(agent, suspensionId));
}
