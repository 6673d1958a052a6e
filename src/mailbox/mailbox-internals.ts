import type { Message } from "../message/message.js";
import type { Mailbox } from "./mailbox.js";
import type { MailboxWaitOptions } from "./mailbox-options.js";

/**
 * One settled promise for every put that found room: promises are immutable,
 * so sharing one saves an allocation per message (and a caller that gets it
 * back knows the put is done without awaiting).
 * @internal
 */
export const RESOLVED: Promise<void> = Promise.resolve();

/**
 * The runtime's own ways into a mailbox, which skip the checks and the copy
 * of `put`/`offer`: installed by the Mailbox class's static block (the only
 * code that may reach its private members), reached only through the
 * functions below (not exported from the package).
 * @internal
 */
export interface MailboxInternals {
  enqueue(mailbox: Mailbox, message: Message, options: MailboxWaitOptions | undefined): Promise<void>;
  offer(mailbox: Mailbox, message: Message): boolean;
  force(mailbox: Mailbox, message: Message): void;
  requeue(mailbox: Mailbox, message: Message): void;
  queuedBusiness(mailbox: Mailbox): Message[];
  peek(mailbox: Mailbox, priorityOnly: boolean): Message | undefined;
  withdraw(mailbox: Mailbox, message: Message): boolean;
  restoreFront(mailbox: Mailbox, messages: readonly Message[]): void;
}

let internals!: MailboxInternals;

/** Called once, by the Mailbox class's static block. @internal */
export function installMailboxInternals(installed: MailboxInternals): void {
  internals = installed;
}

/**
 * Enqueues a message the runtime made itself (composed by it, never handed
 * to application code before), as `put` does but without the copy and
 * without refusing a reserved type: whether a reserved type acts as control
 * is decided by its brand (see `mintControl`), not by how it was enqueued.
 * @internal
 */
export function enqueueTrusted(mailbox: Mailbox, message: Message, options?: MailboxWaitOptions): Promise<void> {
  return internals.enqueue(mailbox, message, options);
}

/** `offer` for a message the runtime made itself (see {@link enqueueTrusted}). @internal */
export function offerTrusted(mailbox: Mailbox, message: Message): boolean {
  return internals.offer(mailbox, message);
}

/**
 * Enqueues a message the runtime made itself even past its lane's capacity:
 * its own notices, retries, and what an agent's handler sends itself, which
 * must never wait on the mailbox that agent's loop drains.
 * @throws {@link MailboxClosedError} once closed.
 * @internal
 */
export function forceMessage(mailbox: Mailbox, message: Message): void {
  internals.force(mailbox, message);
}

/**
 * Puts a message just taken back at the front of its lane, even past its
 * capacity, as if it had not been taken: a retry during a drain, which
 * must come before what was queued after it.
 * @throws {@link MailboxClosedError} once closed.
 * @internal
 */
export function requeueMessage(mailbox: Mailbox, message: Message): void {
  internals.requeue(mailbox, message);
}

/** The business messages queued now, oldest first, left where they are. @internal */
export function queuedBusiness(mailbox: Mailbox): Message[] {
  return internals.queuedBusiness(mailbox);
}

/**
 * The message `poll()` (or, `priorityOnly`, `pollPriority()`) would take
 * next, left where it is; an expired one is not skipped.
 * @internal
 */
export function peekMessage(mailbox: Mailbox, priorityOnly: boolean): Message | undefined {
  return internals.peek(mailbox, priorityOnly);
}

/**
 * Takes `message` back out of the business lane, if it is still queued
 * there (a send whose durable backlog write failed is not accepted);
 * returns whether it was. O(n).
 * @internal
 */
export function withdrawMessage(mailbox: Mailbox, message: Message): boolean {
  return internals.withdraw(mailbox, message);
}

/**
 * Puts `messages` at the front of the business lane, in their order, before
 * everything queued, even past its capacity, without telling the keeper: a
 * suspended agent's durable backlog restored at start.
 * @internal
 */
export function restoreToFront(mailbox: Mailbox, messages: readonly Message[]): void {
  internals.restoreFront(mailbox, messages);
}
