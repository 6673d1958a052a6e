import type { EventEmitter } from "eventemitter3";
import type { ApprovalBoard } from "../approvals/approval-board.js";
import type { ApprovalPolicy, AuthorizeApproval } from "../approvals/approval-types.js";
import type { MessageBus } from "../bus/message-bus.js";
import type { RegisteredAgent, Registry } from "../bus/registry.js";
import type { Logger } from "../logging/logger.js";
import type { Mailbox } from "../mailbox/mailbox.js";
import type { WaitingPut } from "../mailbox/mailbox-options.js";
import type { Message } from "../message/message.js";
import type { SuspensionMarker } from "../state/suspension-marker.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { StateStore } from "../state/state-store.js";
import type { Clock } from "../time/clock.js";
import type { SupervisedChild } from "./child.js";
import type { ProcessStatus } from "./process-status.js";
import type { RuntimeEvents } from "./runtime-events.js";
import type { Scheduler } from "./scheduler.js";

/**
 * An agent as the process layer finds it in the registry: what the bus
 * holds of it, and its status.
 * @internal
 */
export interface LocalAgent extends RegisteredAgent {
  readonly status: ProcessStatus;
}

/**
 * What a runtime lends to every agent and supervisor it holds. The runtime
 * itself holds `RuntimeServices<AgentProcess>`, whose registry gives back
 * its agents as they are; the layers below see them as {@link LocalAgent}.
 * @internal
 */
export interface RuntimeServices<A extends LocalAgent = LocalAgent> {
  readonly bus: MessageBus;
  readonly registry: Registry<A, SupervisedChild>;
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
  /** The runtime's `durableBacklog` option (an agent's own may replace it); `undefined`: on for a durable store. */
  readonly durableBacklog?: boolean | undefined;
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
  /** In a simulation: told of each put that begins to wait for room in a mailbox of this runtime (see simulation-hooks.ts). */
  readonly putWait: ((mailbox: Mailbox, put: WaitingPut) => void) | undefined;
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
