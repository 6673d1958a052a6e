import { refuses, settles, type AuditEvent } from "./audit-event.js";

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

/**
 * The decision of the pause `suspensionId` of `agent` among `facts` (in log
 * order): the first settlement naming it that was not written by a
 * fenced-out owner and that no later owner's `agent.settlement.refused` set
 * aside (after such a refusal, the next settlement is the decision);
 * `undefined` when none. @internal
 */
export function effectiveSettlement<T extends FencedFact>(facts: Iterable<T>, agent: string, suspensionId: string): T | undefined {
  const fences = new OwnerFences();
  let decision: T | undefined;
  for (const fact of facts) {
    if (fences.fencedOut(fact) === undefined) {
      if (decision === undefined) {
        if (settles(fact, agent, suspensionId)) decision = fact;
      } else if (refuses(fact, decision)) decision = undefined;
    }
    fences.see(fact);
  }
  return decision;
}
