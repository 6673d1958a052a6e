import { applies, refuses, SETTLEMENT_EVENTS, type AuditEvent } from "./audit-event.js";

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
 * The decision of each pause, taken in fact by fact in log order: the first
 * settlement naming it that was not written by a fenced-out owner and that
 * no later owner's `agent.settlement.refused` set aside (after such a
 * refusal, the next settlement is the decision). Once an
 * `agent.settlement.applied` names the decision, that receipt stands for it
 * (the decision was carried out, its hook run). @internal
 */
export class PauseDecisions<T extends FencedFact> {
  readonly #fences = new OwnerFences();
  readonly #decisions = new Map<string, { settlement: T; applied: T | undefined }>();

  /** Takes in `fact`, the next of the log. */
  see(fact: T): void {
    const id = fact.details.suspensionId;
    if (typeof id === "string" && this.#fences.fencedOut(fact) === undefined) {
      const key = pauseKey(fact.agent, id);
      const decision = this.#decisions.get(key);
      if (decision === undefined) {
        if (SETTLEMENT_EVENTS.has(fact.event)) this.#decisions.set(key, { settlement: fact, applied: undefined });
      } else if (refuses(fact, decision.settlement)) this.#decisions.delete(key);
      else if (decision.applied === undefined && applies(fact, decision.settlement)) decision.applied = fact;
    }
    this.#fences.see(fact);
  }

  /** The decision of the pause `suspensionId` of `agent` (its `agent.settlement.applied` once there is one); `undefined` when none. */
  decision(agent: string, suspensionId: string): T | undefined {
    const decision = this.#decisions.get(pauseKey(agent, suspensionId));
    return decision === undefined ? undefined : (decision.applied ?? decision.settlement);
  }
}

/** The decision of the pause `suspensionId` of `agent` among `facts`, in log order (see {@link PauseDecisions}); `undefined` when none. @internal */
export function effectiveSettlement<T extends FencedFact>(facts: Iterable<T>, agent: string, suspensionId: string): T | undefined {
  const decisions = new PauseDecisions<T>();
  for (const fact of facts) decisions.see(fact);
  return decisions.decision(agent, suspensionId);
}
