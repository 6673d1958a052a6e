import type { ApprovalView } from "../approvals/approval-types.js";
import type { Message } from "../message/message.js";
import type { ProcessStatus } from "../process/process-status.js";

/**
 * Events a {@link Runtime} emits (it is an `EventEmitter`). Listeners must
 * not throw; they run synchronously on the emitting path.
 */
export interface RuntimeEvents {
  /** A message outlived its `ttlMs` in a mailbox and was discarded at dequeue. */
  "message.expired": (message: Message) => void;
  /** A reply arrived after its `ask` had timed out (or for no known ask) and was dropped. */
  "reply.late": (message: Message) => void;
  /**
   * An agent dropped an `_agency.*` message the runtime did not make (a
   * forged control message): it was not acted on. Also logged as an error.
   */
  "control.forged": (agent: string, message: Message) => void;
  /** An agent changed status. */
  "agent.status": (agent: string, from: ProcessStatus, to: ProcessStatus) => void;
  /** An approval request was made, voted on, escalated, decided or consumed: its view after the change. */
  "approval.changed": (view: ApprovalView) => void;
  /** The root supervisor exceeded its restart intensity: the tree has been stopped. */
  escalated: (error: Error) => void;
}
