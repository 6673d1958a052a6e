import { describeValue } from "../errors/civitas-error.js";
import { checkSignal } from "../errors/check-signal.js";
import { InvalidArgumentError, MailboxClosedError, ReservedMessageTypeError } from "../errors/errors.js";
import { isReservedType } from "../message/system-types.js";
import { isExpired, type Message } from "../message/message.js";
import { snapshotMessage } from "../message/snapshot.js";
import { checkClock, systemClock, type Clock } from "../time/clock.js";
import { Deque } from "./deque.js";
import { checkCapacity, DEFAULT_PRIORITY_CAPACITY, Lane, unusedPriorityLane, writableLane } from "./lane.js";
import { pendingPromise, settlers } from "./settlers.js";
import type { MailboxOptions, MailboxWaitOptions, WaitingPut } from "./mailbox-options.js";
import { installMailboxInternals, RESOLVED } from "./mailbox-internals.js";
import { attachAbort, oldestGetter, settle, type Getter, type Putter, type Waiting } from "./mailbox-waiters.js";

/**
 * The one loop that drains a mailbox, nudged when work arrives so that an
 * idle consumer holds no pending promise at all.
 * @internal
 */
export interface MailboxConsumer {
  /** Called synchronously, once per {@link Mailbox.park}, when a message it may take lands. */
  mailboxReady(): void;
}

/**
 * Told synchronously of each business message that lands in the lane (its
 * durable backlog, see process/durable-backlog.ts). What it returns is what
 * the put that brought the message resolves or rejects with; `waited` is
 * false for a message nobody waits on (forced in).
 * @internal
 */
export interface MailboxKeeper {
  landed(message: Message, waited: boolean): Promise<void> | undefined;
}

/**
 * A bounded two-lane mailbox. `put` waits while its lane is full
 * (backpressure). `get` takes the oldest priority message, else the oldest
 * business message; `getPriority` takes only priority messages and is never
 * woken by business puts. Waiters are served first come, first served. A
 * closed mailbox rejects waiters and puts with `MAILBOX_CLOSED`; what it
 * still holds can be taken until it is empty.
 *
 * What `put` and `offer` enqueue is a frozen copy of the message (its
 * payload copied too), read once: the caller keeps its object, and changing
 * that object afterwards changes nothing queued. A message never gains the
 * runtime's control authority by its fields (see docs/durable-suspension.md).
 *
 * @example
 * ```ts
 * const mailbox = new Mailbox({ capacity: 10 });
 * await mailbox.put(message);
 * const next = await mailbox.get();
 * ```
 */
export class Mailbox {
  private readonly business: Lane;
  /** The shared unused lane until the first priority put (see lane.ts). */
  private priority: Lane;
  /** Pending `get`/`getPriority` calls, created on first need: an agent's loop never waits this way. */
  private waiting: Waiting | undefined;
  private readonly clock: Clock;
  private readonly onExpired: ((message: Message) => void) | undefined;
  private readonly onPutWait: ((mailbox: Mailbox, put: WaitingPut) => void) | undefined;
  private expired = 0;
  private businessTaken = 0;
  private isClosed = false;
  private consumer: MailboxConsumer | undefined;
  private consumerPriorityOnly = false;
  /** Told of every business message that lands; set by the agent that owns the mailbox. @internal */
  keeper: MailboxKeeper | undefined;

  static {
    installMailboxInternals({
      enqueue: (mailbox, message, options) => mailbox.enqueue(message, options, true),
      offer: (mailbox, message) => mailbox.tryOffer(message, mailbox.laneOf(message), true, false) !== false,
      force: (mailbox, message) => {
        if (mailbox.isClosed) throw new MailboxClosedError();
        void mailbox.deliver(message, mailbox.laneOf(message), false);
      },
      withdraw: (mailbox, message) => mailbox.business.remove(message),
      restoreFront: (mailbox, messages) => {
        for (let i = messages.length - 1; i >= 0; i--) mailbox.business.unshift(messages[i] as Message);
      },
      requeue: (mailbox, message) => {
        if (mailbox.isClosed) throw new MailboxClosedError();
        const lane = mailbox.laneOf(message);
        lane.unshift(message);
        if (lane === mailbox.business) mailbox.businessTaken--;
      },
      queuedBusiness: (mailbox) => mailbox.business.toArray(),
      peek: (mailbox, priorityOnly) => mailbox.priority.peek() ?? (priorityOnly ? undefined : mailbox.business.peek()),
    });
  }

  /**
   * @param options - capacities, clock and expiry callback; every field is optional.
   * @throws {@link InvalidArgumentError} when `options` is not an object, or a capacity is not a positive integer.
   */
  constructor(options: MailboxOptions = {}) {
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError("options", `new Mailbox(options) needs an options object (or nothing), got ${describeValue(options)}`);
    }
    this.business = new Lane(checkCapacity("capacity", options.capacity ?? 1000));
    this.priority = unusedPriorityLane(checkCapacity("priorityCapacity", options.priorityCapacity ?? DEFAULT_PRIORITY_CAPACITY));
    const clock = checkClock(options.clock ?? systemClock, "Mailbox");
    if (options.onExpired !== undefined && typeof options.onExpired !== "function") {
      throw new InvalidArgumentError("onExpired", `Mailbox option onExpired must be a function called with each expired message, got ${describeValue(options.onExpired)}`);
    }
    this.clock = clock;
    this.onExpired = options.onExpired;
    this.onPutWait = options.onPutWait;
  }

  /** Business messages waiting. */
  get size(): number {
    return this.business.length;
  }

  /** Priority messages waiting. */
  get prioritySize(): number {
    return this.priority.length;
  }

  /** Messages discarded so far because their TTL elapsed before dequeue. */
  get expiredCount(): number {
    return this.expired;
  }

  /** Whether {@link Mailbox.close} was called. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Enqueues a frozen copy of `message` on its lane, waiting while the lane
   * is full. Rejects with `MAILBOX_CLOSED` once closed, with
   * `INVALID_ARGUMENT` for something that is not a message (not an object
   * with a numeric `priority`), with `RESERVED_MESSAGE_TYPE` for an
   * `_agency.*` type (only the runtime sends control messages), or with
   * `signal.reason` when aborted (then nothing is enqueued).
   */
  put(message: Message, options?: MailboxWaitOptions): Promise<void> {
    let copy: Message;
    try {
      copy = snapshotMessage(message);
    } catch (err) {
      // a getter that throws must not turn put() into a synchronous throw
      return rejection(err);
    }
    return this.enqueue(copy, options, false);
  }

  private enqueue(message: Message, options: MailboxWaitOptions | undefined, trusted: boolean): Promise<void> {
    const signal = options?.signal;
    if (signal !== undefined) {
      try {
        checkSignal(signal, "Mailbox.put");
      } catch (err) {
        return rejection(err);
      }
    }
    if (this.isClosed) return Promise.reject(new MailboxClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    let lane: Lane;
    try {
      lane = this.laneOf(message);
      const offered = this.tryOffer(message, lane, trusted, true);
      if (offered !== false) return offered;
    } catch (err) {
      // an onExpired callback that throws must not turn put() into a synchronous throw
      return rejection(err);
    }
    // Under backpressure every put waits here: the settlers are taken without a closure per put.
    const waiting = pendingPromise<void>();
    const putter: Putter = { message, resolve: settlers.resolve, reject: settlers.reject, settled: false };
    const putters = (lane.putters ??= new Deque<Putter>());
    if (signal) attachAbort(putter, signal, putters);
    putters.push(putter);
    // Only when a put must wait: under a simulation, this wait is the runtime's (see simulation-hooks.ts).
    this.onPutWait?.(this, putter);
    return waiting;
  }

  /**
   * Enqueues a frozen copy of `message` if its lane has room; returns `false` (and enqueues nothing) otherwise.
   * @throws {@link MailboxClosedError} once closed.
   * @throws {@link ReservedMessageTypeError} for an `_agency.*` type: only the runtime sends control messages.
   * @throws {@link InvalidArgumentError} for something that is not a message (not an object with a numeric `priority`).
   */
  offer(message: Message): boolean {
    if (this.isClosed) throw new MailboxClosedError();
    const copy = snapshotMessage(message);
    // Nobody waits on an offer: a keeper's failure is its own to report.
    return this.tryOffer(copy, this.laneOf(copy), false, false) !== false;
  }

  /** Enqueues `message` if its lane has room: `false` if not, else what the put resolves with (see {@link MailboxKeeper}). */
  private tryOffer(message: Message, lane: Lane, trusted: boolean, waited: boolean): Promise<void> | false {
    if (this.isClosed) throw new MailboxClosedError();
    if (!trusted && isReservedType(message.type)) throw new ReservedMessageTypeError(message.type);
    if (lane.length >= lane.capacity || lane.waitingPuts > 0) {
      this.admitWaitingPutters(lane);
      if (lane.length >= lane.capacity || lane.waitingPuts > 0) return false;
    }
    return this.deliver(message, lane, waited) ?? RESOLVED;
  }

  /**
   * How many business messages have left the mailbox so far (taken, or
   * discarded as expired): with {@link Mailbox.size}, it marks which ones
   * were queued at a given moment (a drain takes only those).
   * @internal
   */
  get businessTakenCount(): number {
    return this.businessTaken;
  }

  /** Takes the oldest priority message, else the oldest business message, waiting while both are empty. */
  get(options?: MailboxWaitOptions): Promise<Message> {
    return this.receive(false, options?.signal);
  }

  /** Takes the oldest priority message, waiting while there is none. Business puts never wake it. */
  getPriority(options?: MailboxWaitOptions): Promise<Message> {
    return this.receive(true, options?.signal);
  }

  /** `get`/`getPriority`: an aborted (or malformed) signal takes nothing, as it enqueues nothing for `put`. */
  private receive(priorityOnly: boolean, signal: AbortSignal | undefined): Promise<Message> {
    let message: Message | undefined;
    try {
      checkSignal(signal, priorityOnly ? "Mailbox.getPriority" : "Mailbox.get");
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      message = priorityOnly ? this.pollPriority() : this.poll();
    } catch (err) {
      return rejection(err);
    }
    if (message !== undefined) return Promise.resolve(message);
    return this.wait(priorityOnly, signal);
  }

  /** Takes what {@link Mailbox.get} would, without waiting: `undefined` when empty. */
  poll(): Message | undefined {
    return this.take(this.priority) ?? this.take(this.business);
  }

  /** Takes what {@link Mailbox.getPriority} would, without waiting. */
  pollPriority(): Message | undefined {
    return this.take(this.priority);
  }

  /**
   * Closes the mailbox: pending `get`s and `put`s reject with `MAILBOX_CLOSED`,
   * new puts are refused. Messages already queued can still be taken. Idempotent.
   */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.consumer = undefined;
    const pending = [
      ...(this.waiting?.any.drain() ?? []),
      ...(this.waiting?.priorityOnly.drain() ?? []),
      ...(this.business.putters?.drain() ?? []),
      ...(this.priority.putters?.drain() ?? []),
    ];
    if (pending.length === 0) return;
    // Built only when someone waits: capturing a stack costs about as much as starting an agent.
    const error = new MailboxClosedError();
    for (const waiter of pending) settle(waiter, error);
  }

  /**
   * Registers the consumer to nudge (once) when a message lands that it may
   * take: any message, or only priority ones. Replaces an earlier registration.
   * @internal
   */
  park(consumer: MailboxConsumer, priorityOnly: boolean): void {
    this.consumer = consumer;
    this.consumerPriorityOnly = priorityOnly;
  }

  /** Forgets the parked consumer. @internal */
  unpark(): void {
    this.consumer = undefined;
  }

  /** Removes and returns every queued message, priority lane first. */
  drain(): Message[] {
    const messages: Message[] = [];
    for (let m = this.poll(); m !== undefined; m = this.poll()) messages.push(m);
    return messages;
  }

  /** The lane `message` goes to; throws `INVALID_ARGUMENT`, before anything is enqueued, for something that is not a message. */
  private laneOf(message: Message): Lane {
    const priority = typeof message === "object" && message !== null ? (message.priority as unknown) : undefined;
    if (typeof priority !== "number") {
      throw new InvalidArgumentError("message", `a mailbox takes messages (objects with a numeric priority, see createMessage), got ${describeValue(message)}`);
    }
    return priority >= 1 ? (this.priority = writableLane(this.priority)) : this.business;
  }

  /** Puts `message` in `lane` (or hands it to a waiting getter); returns what the keeper answered for a business message. */
  private deliver(message: Message, lane: Lane, waited: boolean): Promise<void> | undefined {
    // Only get() and getPriority() wait for a message (an agent's loop parks instead): most mailboxes never had one waiting.
    const waiting = this.waiting;
    if (waiting !== undefined && this.handOff(waiting, message, lane)) return undefined;
    lane.push(message);
    const landing = lane === this.business && this.keeper !== undefined ? this.keeper.landed(message, waited) : undefined;
    if (landing !== undefined && !waited) landing.catch(noop);
    const consumer = this.consumer;
    if (consumer !== undefined && (lane === this.priority || !this.consumerPriorityOnly)) {
      this.consumer = undefined;
      consumer.mailboxReady();
    }
    return landing;
  }

  /** Gives `message` straight to the longest-waiting getter allowed to take it. */
  private handOff(waiting: Waiting, message: Message, lane: Lane): boolean {
    // Every queued getter is live: an aborted one leaves its queue at once (attachAbort).
    const getter = lane === this.priority ? oldestGetter(waiting) : waiting.any.peek();
    if (getter === undefined) return false;
    // An expired message is discarded and the getter keeps waiting for a live one.
    if (this.discardIfExpired(message)) return true;
    (getter.priorityOnly ? waiting.priorityOnly : waiting.any).shift();
    getter.settled = true;
    getter.release?.();
    getter.resolve(message);
    return true;
  }

  private take(lane: Lane): Message | undefined {
    for (;;) {
      const message = lane.shift();
      // No put ever waited on this lane (its queue is made on first need): no call on the message path.
      if (message === undefined) {
        if (this.isClosed || lane.putters === undefined || !this.admitPutter(lane)) return undefined;
        continue;
      }
      if (lane === this.business) this.businessTaken++;
      // A forced message (a retry, a control) may hold the lane at capacity: a waiting put gets in only when there is room.
      if (lane.putters !== undefined && lane.length < lane.capacity) this.admitPutter(lane);
      if (!this.discardIfExpired(message)) return message;
    }
  }

  /** Moves the oldest waiting put into the lane, now that it has room (an aborted put has left the queue already). */
  private admitPutter(lane: Lane): boolean {
    const putter = lane.putters?.shift();
    if (putter === undefined) return false;
    putter.settled = true;
    putter.release?.();
    lane.push(putter.message);
    const landing = lane === this.business && this.keeper !== undefined ? this.keeper.landed(putter.message, true) : undefined;
    if (landing === undefined) putter.resolve();
    else landing.then(() => putter.resolve(), putter.reject);
    return true;
  }

  /** Lets in waiting puts while the lane has room. */
  private admitWaitingPutters(lane: Lane): void {
    while (lane.length < lane.capacity && this.admitPutter(lane)) {
      // admitted a put that was waiting for this room
    }
  }

  private discardIfExpired(message: Message): boolean {
    if (message.ttlMs == null || !isExpired(message, this.clock.now())) return false;
    this.expired++;
    this.onExpired?.(message);
    return true;
  }

  private wait(priorityOnly: boolean, signal: AbortSignal | undefined): Promise<Message> {
    if (this.isClosed) return Promise.reject(new MailboxClosedError());
    const waiting = (this.waiting ??= { any: new Deque<Getter>(), priorityOnly: new Deque<Getter>(), seq: 0 });
    const queue = priorityOnly ? waiting.priorityOnly : waiting.any;
    return new Promise<Message>((resolve, reject) => {
      const getter: Getter = { priorityOnly, seq: waiting.seq++, resolve, reject, settled: false };
      if (signal) attachAbort(getter, signal, queue);
      queue.push(getter);
    });
  }
}

function noop(): void {}

/** A promise rejected with `reason` as it is (used for an error thrown by an `onExpired` callback). */
function rejection<T>(reason: unknown): Promise<T> {
  return new Promise<T>(() => {
    throw reason;
  });
}
