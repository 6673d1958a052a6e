import { BacklogWriteError } from "../errors/backlog-errors.js";
import { StateSchemaError } from "../errors/errors.js";
import { describeValue } from "../errors/civitas-error.js";
import { queuedBusiness, restoreToFront, withdrawMessage } from "../mailbox/mailbox-internals.js";
import type { MailboxKeeper } from "../mailbox/mailbox.js";
import type { JsonObject, JsonValue } from "../message/json.js";
import type { Message } from "../message/message.js";
import { fromWire } from "../message/from-wire.js";
import { toWire } from "../message/to-wire.js";
import { ProcessStatus } from "../contracts/process-status.js";
import type { ProcessRunner } from "./process-runner.js";

/**
 * The key under which a suspended agent's durable backlog lives inside its
 * checkpointed `state`: the business messages accepted while it was paused
 * and not handled yet, in wire form, oldest first. Written in the same atomic
 * `store.set` as the rest of the state (so a handled message leaves it in the
 * write of the handler's own checkpoint). The runtime owns the key: the
 * agent's `state` never shows it, and a state that sets it is refused with
 * `RESERVED_STATE_KEY`.
 */
export const BACKLOG_KEY = "_civitas.backlog";

function noop(): void {}

/** The messages of a record without a stored backlog: one list, never changed. */
export const NO_MESSAGES: readonly Message[] = Object.freeze([]);

/** The entries of every backlog that never held a message: never written to (see {@link DurableBacklog.add}). */
const NONE: Map<Message, JsonObject> = new Map();

/**
 * One agent's durable backlog (issue 26, item 7): the business messages its
 * mailbox holds that the store holds too. A message that lands while the
 * agent is paused is added and written before its `send` resolves (writes
 * are grouped: the messages that land while one is in flight share the
 * next); the queued messages become part of it when the agent enters a
 * pause. Once the agent runs again, a message taken from the mailbox leaves
 * the backlog, and the next write (the handler's checkpoint, else one
 * written after the handler from the last stored record) removes it from
 * the store. Every write of the agent goes through {@link DurableBacklog.serial}
 * while the backlog exists, one at a time, so a slower write never lands
 * after a newer one.
 * @internal
 */
export class DurableBacklog implements MailboxKeeper {
  /** The messages in the backlog, in mailbox order, each with its wire form (made once); made on first need, as most agents never pause. */
  private entries: Map<Message, JsonObject> = NONE;
  /** Taken messages counted: one ahead of {@link DurableBacklog.written} while a taken message is still in the store. */
  private taken = 0;
  /** The taken count the last successful write reflected. */
  private written = 0;
  /** The tail of the agent's writes, while one is in flight. */
  private tail: Promise<void> | undefined;
  /** A grouped backlog write queued behind the tail, not begun yet: messages that land now join it. */
  private pending: Promise<void> | undefined;
  /** The message taken last, while it is being handled (a retry puts it back). */
  private current: Message | undefined;
  /** Whether this backlog reflects the agent's mailbox (false until a start restored it from the store). */
  known = false;

  constructor(private readonly runner: ProcessRunner) {}

  /** How many messages it holds. */
  get size(): number {
    return this.entries.size;
  }

  /** Whether a taken message is still in the store (no write since it was taken). */
  get owed(): boolean {
    return this.taken !== this.written;
  }

  /** The backlog as stored: wire forms, oldest first. */
  json(): JsonValue[] {
    return [...this.entries.values()];
  }

  /** What a write about to begin reflects; pass it to {@link DurableBacklog.wrote} once it succeeded. */
  get mark(): number {
    return this.taken;
  }

  /** Appends `message` (its wire form made now unless given). */
  private add(message: Message, wire?: JsonObject): void {
    if (this.entries === NONE) this.entries = new Map();
    this.entries.set(message, wire ?? (toWire(message) as unknown as JsonObject));
  }

  /** A write that reflected `mark` succeeded. */
  wrote(mark: number): void {
    if (mark > this.written) this.written = mark;
  }

  /**
   * Runs `write` once the agent's writes in flight are done (at once when
   * none is), so writes reach the store in the order they were begun.
   */
  serial(write: () => Promise<void>): Promise<void> {
    const tail = this.tail;
    const run = tail === undefined ? write() : tail.then(write);
    const settled = run.then(noop, noop);
    this.tail = settled;
    void settled.then(() => {
      if (this.tail === settled) this.tail = undefined;
    });
    return run;
  }

  /** {@inheritDoc MailboxKeeper.landed} */
  landed(message: Message, waited: boolean): Promise<void> | undefined {
    const r = this.runner;
    const status = r.currentStatus;
    // Durable only while paused and past its start (a start adopts what landed meanwhile).
    if (r.suspension.marker === undefined || (status !== ProcessStatus.SUSPENDED && status !== ProcessStatus.STOPPING) || !this.known) return undefined;
    this.add(message);
    return this.write().then(noop, (error: unknown) => this.refused(message, waited, error));
  }

  /** A grouped write of the backlog: the one queued, or a new one. */
  private write(): Promise<void> {
    if (this.pending !== undefined) return this.pending;
    let begun = false;
    const ticket = {};
    let queued: object | undefined;
    const run = this.serial(() => {
      begun = true;
      // From now on the write's state is taken: messages that land later need the next one.
      if (queued === ticket) this.pending = undefined;
      return this.runner.write();
    });
    if (!begun) {
      queued = ticket;
      this.pending = run;
    }
    return run;
  }

  /** The write carrying `message` failed: a send waiting for it is refused and the message taken back, unless it was taken meanwhile. */
  private refused(message: Message, waited: boolean, error: unknown): void {
    const r = this.runner;
    if (waited && this.entries.has(message) && r.box !== undefined && withdrawMessage(r.box, message)) {
      this.entries.delete(message);
      throw new BacklogWriteError(r.agent.name, message.id, { cause: error });
    }
    r.requireServices().logger.warn(`'${r.agent.name}' could not write message ${message.id} to its durable backlog; it stays queued in memory, and a later write will try again`, { error });
  }

  /**
   * The loop took `message` to handle it: it leaves the backlog (with any
   * older entry, which the mailbox discarded as expired), and the next
   * write removes it from the store.
   */
  took(message: Message): void {
    if (this.entries.size === 0 || !this.entries.has(message)) return;
    for (const queued of this.entries.keys()) {
      this.entries.delete(queued);
      if (queued === message) break;
    }
    this.current = message;
    this.taken++;
  }

  /**
   * The business lane is empty while the backlog is not: its entries left
   * the mailbox without being taken (discarded as expired, their TTL over).
   * They are dropped, and a write is owed that removes them from the store.
   * Returns whether there were any.
   */
  dropGone(): boolean {
    if (this.entries.size === 0) return false;
    this.entries = NONE;
    this.taken++;
    return true;
  }

  /** The message being handled was put back (`ErrorAction.RETRY`) as `again`: it stays in the backlog, where the mailbox put it. */
  retried(message: Message, again: Message, front: boolean): void {
    if (this.current !== message) return;
    if (!front) {
      this.add(again);
      return;
    }
    const rest = [...this.entries];
    this.entries = new Map();
    this.add(again);
    for (const [queued, wire] of rest) this.add(queued, wire);
  }

  /**
   * After a handler: removes from the store the message it handled when its
   * own checkpoint did not, by writing the stored record back without it
   * (never the state in memory, which only a checkpoint stores). A failure
   * is logged: the message may then be handled again after a crash.
   */
  settle(): Promise<void> {
    this.current = undefined;
    const r = this.runner;
    return this.serial(async () => {
      if (!this.owed) return;
      const mark = this.mark;
      const stored = await r.requireServices().store.get(r.agent.name);
      if (stored === undefined) this.wrote(mark);
      else await r.write(stored);
    }).catch((error: unknown) => {
      r.requireServices().logger.warn(`'${r.agent.name}' handled a message of its durable backlog but could not remove it from the store; after a crash it would be handled again`, { error });
    });
  }

  /** Every business message queued now becomes part of the backlog (the agent enters a pause, or was restored into one). Returns whether any was added. */
  adoptQueued(): boolean {
    const box = this.runner.box;
    if (box === undefined) return false;
    const queued = queuedBusiness(box);
    let added = false;
    const entries = new Map<Message, JsonObject>();
    for (const message of queued) {
      const wire = this.entries.get(message);
      added ||= wire === undefined;
      entries.set(message, wire ?? (toWire(message) as unknown as JsonObject));
    }
    this.entries = entries.size === 0 ? NONE : entries;
    this.known = true;
    return added;
  }

  /** Forgets every entry (the agent was removed for good, or its mailbox replaced). */
  clear(): void {
    this.entries = NONE;
    this.current = undefined;
    this.written = this.taken;
    this.known = false;
  }

  /**
   * At start: takes the stored backlog out of `state` (the key is the
   * runtime's) and, unless this instance knows its mailbox already (a
   * restart in this process keeps it), puts its messages back in the
   * mailbox, oldest first, before anything queued meanwhile.
   * @throws {@link StateSchemaError} when the key holds anything but wire-form messages
   */
  restore(stored: JsonObject | undefined): void {
    const r = this.runner;
    const messages = stored === undefined ? NO_MESSAGES : readStoredBacklog(r.agent.name, stored);
    const state = r.agent.state;
    if (BACKLOG_KEY in state) delete state[BACKLOG_KEY]; // a delete is a runtime call even for an absent key
    if (this.known || r.box === undefined) {
      this.known = true;
      return;
    }
    this.known = true;
    // Most records hold no backlog: then there is nothing to compare with what is queued.
    if (messages.length > 0) {
      const queued = new Set(queuedBusiness(r.box).map((m) => m.id));
      const fresh = messages.filter((m) => !queued.has(m.id));
      restoreToFront(r.box, fresh);
      for (const message of fresh) this.add(message);
    }
    this.written = this.taken;
  }
}

/**
 * The messages of a stored backlog (none when the key is absent).
 * @throws {@link StateSchemaError} when it is not an array of wire-form messages
 * @internal
 */
export function readStoredBacklog(agent: string, state: JsonObject): readonly Message[] {
  const value = state[BACKLOG_KEY];
  if (value === undefined) return NO_MESSAGES;
  if (!Array.isArray(value)) {
    throw new StateSchemaError(agent, `stored state of '${agent}' has a malformed durable backlog under '${BACKLOG_KEY}' (${describeValue(value)}); it is an array of wire-form messages — restore the record from a backup`);
  }
  return value.map((wire, i) => {
    try {
      return fromWire(wire);
    } catch (error) {
      throw new StateSchemaError(agent, `stored state of '${agent}' has a malformed message at ${BACKLOG_KEY}[${i}]; restore the record from a backup`, { cause: error });
    }
  });
}
