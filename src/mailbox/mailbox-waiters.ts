import type { Message } from "../message/message.js";
import type { Deque } from "./deque.js";

/** A pending `get`/`getPriority`, settled once: by a message, by `close`, or by its signal. */
export interface Getter {
  readonly priorityOnly: boolean;
  /** Order of arrival across both getter queues, so the oldest getter of either kind is served first. */
  readonly seq: number;
  resolve: (message: Message) => void;
  reject: (reason: unknown) => void;
  settled: boolean;
  release?: () => void;
}

/** A pending `put` holding its message until its lane has room, settled once. */
export interface Putter {
  readonly message: Message;
  resolve: () => void;
  reject: (reason: unknown) => void;
  settled: boolean;
  release?: () => void;
}

/** The pending getters of a mailbox: those that take any message, and those that take only priority ones. */
export interface Waiting {
  readonly any: Deque<Getter>;
  readonly priorityOnly: Deque<Getter>;
  seq: number;
}

/** The longest-waiting getter of either kind: both may take a priority message. */
export function oldestGetter(waiting: Waiting): Getter | undefined {
  const any = waiting.any.peek();
  const prio = waiting.priorityOnly.peek();
  if (any === undefined) return prio;
  if (prio === undefined) return any;
  return any.seq < prio.seq ? any : prio;
}

/**
 * Rejects `waiter` with the signal's reason when it aborts, and takes it out
 * of its queue at once: waits aborted behind a long-lived one must not pile
 * up (with their messages) until the queue drains.
 */
export function attachAbort<W extends Getter | Putter>(waiter: W, signal: AbortSignal, queue: Deque<W>): void {
  const onAbort = (): void => {
    if (waiter.settled) return;
    settle(waiter, signal.reason);
    queue.remove(waiter);
  };
  signal.addEventListener("abort", onAbort, { once: true });
  waiter.release = () => signal.removeEventListener("abort", onAbort);
}

/** Rejects `waiter` with `reason` unless it is settled already, and drops its abort listener. */
export function settle(waiter: Getter | Putter, reason: unknown): void {
  if (waiter.settled) return;
  waiter.settled = true;
  waiter.release?.();
  waiter.reject(reason);
}
