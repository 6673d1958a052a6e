import type { EventEmitter } from "eventemitter3";
import type { ApprovalBoard } from "../approvals/approval-board.js";
import type { ApprovalPolicy, AuthorizeApproval } from "../approvals/approval-types.js";
import type { MessageBus } from "../bus/message-bus.js";
import type { Registry } from "../bus/registry.js";
import type { Logger } from "../logging/logger.js";
import type { Message } from "../message/message.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { StateStore } from "../state/state-store.js";
import type { Clock } from "../time/clock.js";
import type { RuntimeEvents } from "./runtime-events.js";
import type { Scheduler } from "./scheduler.js";

/**
 * What a runtime lends to every agent and supervisor it holds.
 * @internal
 */
export interface RuntimeServices {
  readonly bus: MessageBus;
  readonly registry: Registry;
  readonly store: StateStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly telemetry: Telemetry;
  readonly scheduler: Scheduler;
  readonly events: EventEmitter<RuntimeEvents>;
  /** The governance hook that may refuse a resume. */
  readonly authorizeResume: AuthorizeResume | undefined;
  /** The runtime's approval policy (an agent's own option may replace it). */
  readonly approvalPolicy: ApprovalPolicy | undefined;
  /** The governance hook that may refuse a vote on an approval request. */
  readonly authorizeApproval: AuthorizeApproval | undefined;
  /** Which agent holds each approval request. */
  readonly approvals: ApprovalBoard;
  /** Reports a message that expired in a mailbox (shared by every mailbox of the runtime); never throws. */
  readonly expired: (message: Message) => void;
  /** Aborted when the runtime begins to stop: a start still in `onStart` then gets `shutdownTimeoutMs` more, no longer. */
  readonly stopping: AbortSignal;
  /**
   * Counts the suspend and resume requests the runtime has sent; each carries
   * its number (`sent` in its payload), so an agent can tell which resumes
   * were sent before a pause began.
   */
  readonly controlSent: { count: number };
}

/** What an {@link AuthorizeResume} hook is asked to allow. */
export interface ResumeDecision {
  /** `"approve"` for `runtime.resume`, `"deny"` for `runtime.deny` (the decider is then passed as `approver`). */
  readonly decision: "approve" | "deny";
}

/**
 * Decides whether `approver` may resume `agentName` from the suspension
 * `marker` — or, when `decision.decision` is `"deny"`, deny it. Return (or
 * resolve) `true` to allow; `false` or a throw refuses with
 * `RESUME_REFUSED`. Called only while the agent is SUSPENDED; never for a
 * pause that expires (its deadline was part of the pause). The runtime
 * always passes `decision`; it is optional so that hooks written for three
 * arguments, and code calling them so, keep working.
 * @example
 * ```ts
 * const authorizeResume: AuthorizeResume = (agent, who, marker, asked) =>
 *   asked?.decision === "deny" ? reviewers.has(who) : approvers.has(who);
 * ```
 */
export type AuthorizeResume = (agentName: string, approver: string, marker: SuspensionMarker, decision?: ResumeDecision) => boolean | Promise<boolean>;
