import type { Message } from "../message/message.js";
import type { Clock } from "../time/clock.js";
import type { Mailbox } from "./mailbox.js";

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
  /**
   * Told of each put that begins to wait for room in a full lane: a
   * simulation's hook (such a wait is on the runtime, not an external await).
   * @internal
   */
  onPutWait?: ((mailbox: Mailbox, put: WaitingPut) => void) | undefined;
}

/** Options of a waiting mailbox operation. */
/** A put waiting for room in a full lane of a mailbox: its message, and whether it has ended (admitted, aborted or refused). @internal */
export interface WaitingPut {
  readonly message: Message;
  readonly settled: boolean;
}

export interface MailboxWaitOptions {
  /** Aborting rejects the pending call with `signal.reason`; nothing is enqueued or taken. */
  signal?: AbortSignal;
}
