import type { AuditEvent, AuditSink } from "./audit-event.js";
import { effectiveSettlement } from "./owner-fence.js";

/**
 * Keeps audit events in memory, in emit order. For tests and for
 * inspection; it is not a durable record.
 *
 * @example
 * ```ts
 * const audit = new MemoryAuditSink();
 * const runtime = new Runtime({ root, auditSink: audit });
 * // ...
 * audit.events.filter((e) => e.event === "agent.crash");
 * ```
 */
export class MemoryAuditSink implements AuditSink {
  private readonly recorded: AuditEvent[] = [];

  /** Every event emitted so far, oldest first. */
  get events(): readonly AuditEvent[] {
    return this.recorded;
  }

  /** Records `event`. */
  emit(event: AuditEvent): void {
    this.recorded.push(event);
  }

  /** The decision recorded for the pause `suspensionId` of `agent`, if any (see {@link AuditSink.recordedSettlement}). */
  recordedSettlement(agent: string, suspensionId: string): Promise<AuditEvent | undefined> {
    return Promise.resolve(effectiveSettlement(this.recorded, agent, suspensionId));
  }

  /** Events of one kind, optionally for one agent. */
  ofType(event: string, agent?: string): AuditEvent[] {
    return this.recorded.filter((e) => e.event === event && (agent === undefined || e.agent === agent));
  }

  /** Forgets every event. */
  clear(): void {
    this.recorded.length = 0;
  }
}
