import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { TransportUnavailableError } from "../errors/errors.js";
import type { Logger } from "../logging/logger.js";

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
   * Publishes `data` to `subject`. While the connection is down it waits for
   * it to come back, at most `sendTimeoutMs` (or until `signal` aborts), then
   * rejects with `TRANSPORT_UNAVAILABLE`; nothing is dropped unseen.
   */
  async publish(subject: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    if (!this.connected) await this.reconnected(subject, signal);
    try {
      this.nc.publish(subject, data);
    } catch (error) {
      throw new TransportUnavailableError(`could not publish to '${subject}': ${(error as Error).message}`, { cause: error });
    }
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
