import type { Message } from "../message/message.js";
import type { Clock } from "../time/clock.js";

/** Options of a {@link Mailbox}. */
export interface MailboxOptions {
  /** Capacity of the business lane (priority 0). @defaultValue 1000 */
  capacity?: number;
  /** Capacity of the priority lane (priority >= 1). @defaultValue 100 */
  priorityCapacity?: number;
  /** Time source for TTL expiry. @defaultValue the system clock */
  clock?: Clock;
  /** Called with every message discarded at dequeue because its `ttlMs` elapsed. */
  onExpired?: (message: Message) => void;
}

/** Options of a waiting mailbox operation. */
export interface MailboxWaitOptions {
  /** Aborting rejects the pending call with `signal.reason`; nothing is enqueued or taken. */
  signal?: AbortSignal;
}
