import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { TransportUnavailableError } from "../errors/errors.js";
import type { Logger } from "../logging/logger.js";
import { checkWireSize } from "../message/wire.js";

/** How long a stop waits for the server to confirm a drain or flush. */
const DRAIN_DEADLINE_MS = 5000;

/** Resolves when `work` settles or `ms` passed, whichever comes first (a rejection of `work` is passed on). */
async function withDeadline(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  try {
    await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How many bytes the outbox holds, framing included ({@link PUB_FRAMING}),
 * before it hands them to the connection without waiting for the end of the
 * turn: nats.js's own threshold (its `pendingLimit`, 32 KiB), at which it
 * writes its buffer to the socket at once. Counted as nats.js counts (a
 * little over), a batch is handed over just before nats.js's buffer reaches
 * that threshold, and nats.js writes it whole a microtask later, in one
 * write; counting the payloads alone, nats.js reached it some way into the
 * batch and wrote the rest in a second, small write.
 */
const OUTBOX_BYTES = 32 * 1024;

/**
 * What nats.js adds to a published message in its buffer besides the
 * subject: `PUB `, a space, the payload's length in digits and `\r\n`, then
 * `\r\n` after the payload. Counted as seven digits: a little over for
 * shorter payloads, so a batch is handed over, if anything, just before
 * nats.js's threshold (and then written in one write all the same).
 */
const PUB_FRAMING = 16;

/** What nats.js refuses in a subject. */
const WHITESPACE = /\s/;

/** What a publish that was queued resolves with. */
const SENT: Promise<void> = Promise.resolve();

/** A send waiting for the connection to come back. */
interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * One NATS connection as a transport uses it: subscriptions handled one
 * message at a time, publishes that wait (bounded) while the connection is
 * down instead of piling up unseen, and a close that drains a connection the
 * transport created but only unsubscribes from one it was given.
 * @internal
 */
export class BusLink {
  /** Whether the connection is up, as its last status event said. */
  connected = true;
  private readonly waiters = new Set<Waiter>();
  private readonly subs = new Set<Subscription>();
  /** The outbox: messages published this turn, not yet handed to the connection. */
  private queuedSubjects: string[] = [];
  private queuedData: Uint8Array[] = [];
  private queuedBytes = 0;
  /** The last subject published to, known to be well-formed: a run of sends to one agent checks it once. */
  private lastSubject: string | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly owned: boolean,
    private readonly sendTimeoutMs: number,
    private readonly logger: Logger,
    private readonly onReconnect: () => void,
  ) {
    void this.watch();
  }

  /** Follows the connection's status: sends wait while it is down and go on once it is back. */
  private async watch(): Promise<void> {
    try {
      for await (const status of this.nc.status()) {
        if (status.type === "disconnect") {
          this.connected = false;
          this.logger.warn("the NATS connection was lost; sends wait for it to come back");
        } else if (status.type === "reconnect") {
          this.connected = true;
          for (const waiter of this.waiters) waiter.resolve();
          this.waiters.clear();
          this.logger.info("the NATS connection is back");
          this.onReconnect();
        }
      }
    } catch (error) {
      this.logger.warn("watching the NATS connection's status failed", { error });
    }
  }

  /**
   * Hands each message on `subject` to `handler` as it arrives, in order
   * (a callback subscription: no promise per message; a handler that must
   * wait, such as a delivery into a full mailbox, keeps order by itself).
   */
  listen(subject: string, handler: (data: Uint8Array) => void): Subscription {
    const sub = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) {
          this.logger.warn(`the subscription to '${subject}' failed`, { error });
          return;
        }
        try {
          handler(msg.data);
        } catch (failure) {
          this.logger.error(`handling a message on '${subject}' failed`, { error: failure });
        }
      },
    });
    this.subs.add(sub);
    return sub;
  }

  /** The connection itself, for request/reply. */
  get connection(): NatsConnection {
    return this.nc;
  }

  /** Answers each request on `subject`, concurrently, with what `answer` resolves with. */
  listenAsync(subject: string, answer: (data: Uint8Array) => Promise<Uint8Array>): Subscription {
    const sub = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) return;
        answer(msg.data).then(
          (reply) => void msg.respond(reply),
          (failure: unknown) => this.logger.error(`answering a request on '${subject}' failed`, { error: failure }),
        );
      },
    });
    this.subs.add(sub);
    return sub;
  }

  /** Answers each request on `subject` with what `answer` returns (nothing when it returns `undefined`). */
  listenRequests(subject: string, answer: (data: Uint8Array) => Uint8Array | undefined): void {
    const sub = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) return;
        const reply = answer(msg.data);
        if (reply !== undefined) msg.respond(reply);
      },
    });
    this.subs.add(sub);
  }

  /**
   * Publishes `data` to `subject`. While the connection is up, the message
   * joins the outbox, which is handed to the connection — in order, as one
   * socket write — at the end of the current turn of the event loop, or at
   * once when it holds {@link OUTBOX_BYTES}; it resolves at once, as
   * nats.js's own `publish` returns once its buffer holds the bytes. (nats.js
   * writes its buffer to the socket a microtask after a publish, so a sender
   * that awaits each send would otherwise cost a socket write per message.)
   * While the connection is down it waits for it to come back, at most
   * `sendTimeoutMs` (or until `signal` aborts), then rejects with
   * `TRANSPORT_UNAVAILABLE`; nothing is dropped unseen. A message the
   * connection would refuse (closed or draining, a subject with whitespace,
   * over the server's `max_payload`) rejects here with `TRANSPORT_UNAVAILABLE`, and one over
   * `MAX_WIRE_BYTES` with `INVALID_WIRE_MESSAGE`, before it is queued.
   */
  publish(subject: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (!this.connected) return this.reconnected(subject, signal).then(() => this.enqueue(subject, data));
    try {
      this.enqueue(subject, data);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checkPublishable threw, a TransportUnavailableError
      return Promise.reject(error);
    }
    return SENT;
  }

  /** Hands every queued message to the connection now, in order (before a request that must not overtake them, a flush, a close). */
  sendQueued(): void {
    const subjects = this.queuedSubjects;
    const payloads = this.queuedData;
    const count = subjects.length;
    this.queuedBytes = 0;
    if (count === 0) return;
    this.queuedSubjects = [];
    this.queuedData = [];
    for (let i = 0; i < count; i++) {
      try {
        this.nc.publish(subjects[i] as string, payloads[i]);
      } catch (error) {
        // Checked when queued; only a connection closed by its owner in between gets here.
        this.logger.error(`a message to '${subjects[i] as string}' could not be handed to the NATS connection and was not sent`, { error });
      }
    }
  }

  private enqueue(subject: string, data: Uint8Array): void {
    this.checkPublishable(subject, data);
    this.queuedSubjects.push(subject);
    this.queuedData.push(data);
    this.queuedBytes += data.length + subject.length + PUB_FRAMING;
    if (this.queuedBytes >= OUTBOX_BYTES) this.sendQueued();
    else if (this.queuedSubjects.length === 1) process.nextTick(this.sendQueuedLater);
  }

  private readonly sendQueuedLater = (): void => this.sendQueued();

  /** Throws `TRANSPORT_UNAVAILABLE` for what the connection's `publish` would refuse. */
  private checkPublishable(subject: string, data: Uint8Array): void {
    let problem: string | undefined;
    if (this.nc.isClosed()) problem = "the connection is closed";
    else if (this.nc.isDraining()) problem = "the connection is draining";
    else if (subject !== this.lastSubject && (subject.length === 0 || WHITESPACE.test(subject))) problem = "the subject is empty or holds whitespace";
    else {
      const max = this.nc.info?.max_payload;
      if (max !== undefined && data.length > max) problem = `the message is ${data.length} bytes, over the server's max_payload of ${max}`;
      else checkWireSize(data.length);
    }
    if (problem !== undefined) throw new TransportUnavailableError(`could not publish to '${subject}': ${problem}`);
    this.lastSubject = subject;
  }

  private reconnected(subject: string, signal: AbortSignal | undefined): Promise<void> {
    const error = new TransportUnavailableError(`the NATS connection stayed down for ${this.sendTimeoutMs} ms, so nothing was published to '${subject}'; the message was not sent — retry once the server is back`);
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.waiters.delete(waiter);
      };
      const waiter: Waiter = {
        resolve: () => {
          done();
          resolve();
        },
        reject: (reason) => {
          done();
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an abort rejects with signal.reason, as every wait in civitas-ts does
          reject(reason);
        },
      };
      const onAbort = (): void => waiter.reject(signal?.reason);
      const timer = setTimeout(() => waiter.reject(error), this.sendTimeoutMs);
      timer.unref();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** Sends a request and collects the answers until none came for 100 ms, or `maxWaitMs` passed; none (or no responder) is an empty list. */
  async requestMany(subject: string, data: Uint8Array, maxWaitMs: number): Promise<Uint8Array[]> {
    const answers: Uint8Array[] = [];
    try {
      for await (const msg of await this.nc.requestMany(subject, data, { strategy: "stall", stall: 100, maxWait: maxWaitMs })) {
        if (msg.data.length > 0) answers.push(msg.data);
      }
    } catch {
      // no responders: nobody else is on the bus yet
    }
    return answers;
  }

  /** Resolves once the server has processed everything sent so far. */
  async flush(): Promise<void> {
    this.sendQueued();
    try {
      await this.nc.flush();
    } catch (error) {
      throw new TransportUnavailableError(`the NATS server did not answer: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Stops taking messages on `sub`. */
  unsubscribe(sub: Subscription): void {
    this.subs.delete(sub);
    if (!sub.isClosed()) sub.unsubscribe();
  }

  /** Drains and closes a connection this link created; from a given one, only unsubscribes. Sends still waiting reject with `TRANSPORT_UNAVAILABLE`. */
  async close(): Promise<void> {
    for (const waiter of this.waiters) waiter.reject(new TransportUnavailableError("the transport stopped while a send waited for the NATS connection"));
    this.sendQueued();
    try {
      if (this.owned) {
        // A drain waits for the server; with the connection down it could wait forever: it gets a deadline, then the connection is closed.
        if (!this.nc.isClosed()) await (this.connected ? withDeadline(this.nc.drain(), DRAIN_DEADLINE_MS) : Promise.resolve());
        if (!this.nc.isClosed()) await this.nc.close();
      } else {
        for (const sub of this.subs) if (!sub.isClosed()) sub.unsubscribe();
        if (!this.nc.isClosed() && this.connected) await withDeadline(this.nc.flush(), DRAIN_DEADLINE_MS);
      }
    } catch (error) {
      this.logger.warn("closing the NATS connection failed", { error });
    }
    this.subs.clear();
  }
}
