import { AgentNotFoundError, AskTimeoutError, RuntimeStateError } from "../errors/errors.js";
import { checkSignal } from "../errors/check-signal.js";
import { enqueueTrusted, RESOLVED } from "../mailbox/mailbox-internals.js";
import { pendingPromise, settlers } from "../mailbox/settlers.js";
import { isReply, type Message } from "../message/message.js";
import type { Clock } from "../time/clock.js";
import { TimeoutLists, type Expiring } from "../time/timeout-lists.js";
import { PendingRequests } from "./pending-requests.js";
import { FAILURE_REPLY_TYPE, failureReply, remoteFailure } from "./remote-failure.js";
import type { Registry } from "./registry.js";
import type { Transport } from "./transport.js";

/** An ask waiting for its reply; also the node of its timeout list. */
interface PendingAsk extends Expiring<PendingAsk> {
  readonly recipient: string;
  readonly correlationId: string;
  readonly timeoutMs: number;
  resolve: (reply: unknown) => void;
  reject: (error: unknown) => void;
  release: (() => void) | undefined;
  /** The promise handed to the requester's caller (what {@link MessageBus.acknowledge} gives the agent). */
  handedOut: Promise<unknown> | undefined;
}

/**
 * Settles the ask `entry` as timed out. The promise its caller awaits is
 * resolved with one that rejects with an {@link AskTimeoutError} made in a
 * promise reaction that runs once the caller's promise follows it, so V8's
 * async stack traces put every async function awaiting the ask into the
 * error's stack. Only a timed-out ask pays for it: a `.then` on every ask
 * would do the same for about a tenth of an ask's cost.
 */
function timeOut(entry: PendingAsk): void {
  let start!: () => void;
  const started = new Promise<void>((resolve) => {
    start = resolve;
  });
  const rejection = started.then(() => {
    throw new AskTimeoutError(entry.recipient, entry.timeoutMs);
  });
  entry.resolve(rejection); // first: the reaction must find the caller's promise following `rejection`
  start();
}

/** What {@link MessageBus.acknowledge} returns when no request waits under the id. @internal */
export const NOT_PENDING: unique symbol = Symbol("not pending");

/** Where the bus reports a reply that arrived for no waiting ask: the runtime's events. @internal */
export interface LateReplies {
  emit(event: "reply.late", reply: Message): boolean;
}

/**
 * Routes messages by name to mailboxes and pairs asks with their replies by
 * correlation id. A reply that arrives after its ask timed out is dropped and
 * counted, never handed to another caller.
 * @internal
 */
export class MessageBus {
  private readonly pending = new PendingRequests<PendingAsk>();
  /**
   * Runtime control requests waiting for the agent to act, apart from the
   * asks: only {@link MessageBus.acknowledge} (the runtime's own path)
   * settles them, never a reply message, so no handler can answer
   * `runtime.suspend`/`resume` in the agent's stead by returning a reply
   * that names a control request's correlation id.
   */
  private readonly controls = new PendingRequests<PendingAsk>();
  private readonly timeouts: TimeoutLists<PendingAsk>;
  private late = 0;
  private closedReason: Error | undefined;
  /** Carries what is addressed to agents of other runtimes; set by a runtime given a transport. */
  transport: Transport | undefined;
  /** In a simulation: settles an ask with its reply when the simulation chooses (see simulation-hooks.ts). */
  replyGate: ((reply: Message, settle: () => void) => void) | undefined;

  constructor(
    private readonly registry: Registry,
    clock: Clock,
    private readonly events: LateReplies,
  ) {
    this.timeouts = new TimeoutLists<PendingAsk>(clock, (entry) => {
      const waiting = this.detach(entry.correlationId, this.pending) ?? this.detach(entry.correlationId, this.controls);
      if (waiting !== undefined) timeOut(waiting);
    });
  }

  /** Replies dropped because no ask was waiting for them. */
  get lateReplies(): number {
    return this.late;
  }

  /** Asks waiting for their reply. */
  get pendingAsks(): number {
    return this.pending.size + this.controls.size;
  }

  /**
   * Delivers `message`: a reply settles its ask; anything else goes to the
   * recipient's mailbox, waiting while that mailbox is full.
   */
  deliver(message: Message, signal?: AbortSignal): Promise<void> {
    if (isReply(message)) {
      // inside the executor, a throwing "reply.late" listener rejects instead of throwing synchronously
      return new Promise<void>((resolve) => {
        this.settleReply(message);
        resolve();
      });
    }
    const agent = this.registry.get(message.recipient);
    if (agent === undefined) {
      if (this.transport?.hosts(message.recipient) === true) return this.transport.send(message, signal);
      return Promise.reject(notFound(message.recipient));
    }
    // Only messages the runtime composed come here (never an object application code still holds): no copy needed.
    // An _agency.* type among them acts as control only if the runtime minted it (see control-authority.ts).
    return enqueueTrusted(agent.mailbox, message, signal === undefined ? undefined : { signal });
  }

  /**
   * Delivers a request and resolves with its reply. `message` must carry a
   * `correlationId` and a `replyTo`; its timeout counts from its `timestamp`
   * (without `timeoutMs` it waits until answered, failed or the bus closes).
   * A timeout rejects with an {@link AskTimeoutError} whose stack shows the
   * async functions awaiting the request.
   */
  request(message: Message, timeoutMs: number | undefined, signal?: AbortSignal): Promise<Message> {
    return this.await<Message>(message, timeoutMs, signal, this.pending);
  }

  /**
   * Delivers a runtime control request and resolves once the agent
   * acknowledges it ({@link MessageBus.acknowledge}), with the value it
   * acknowledged with (a suspend's pause; nothing for the others); the agent
   * gets back the very promise returned here, so it can wait until its
   * caller has been told. Fails like {@link MessageBus.request}.
   */
  control(message: Message, timeoutMs: number | undefined, signal?: AbortSignal): Promise<unknown> {
    return this.await<unknown>(message, timeoutMs, signal, this.controls);
  }

  /**
   * Resolves the control request `correlationId` with `value`, without a
   * reply message, and returns the promise its requester handed out;
   * {@link NOT_PENDING} when no request waits under that id any more (it
   * timed out, was aborted, or the bus closed).
   */
  acknowledge(correlationId: string, value?: unknown): Promise<unknown> | typeof NOT_PENDING {
    const entry = this.detach(correlationId, this.controls);
    if (entry === undefined) return NOT_PENDING;
    entry.resolve(value);
    return entry.handedOut ?? RESOLVED;
  }

  private await<T>(message: Message, timeoutMs: number | undefined, signal: AbortSignal | undefined, pending: PendingRequests<PendingAsk>): Promise<T> {
    try {
      if (signal !== undefined) checkSignal(signal, `ask('${message.recipient}')`); // the call's name is built only with a signal to check
    } catch (err) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checkSignal threw, a CivitasError
      return Promise.reject(err);
    }
    if (this.closedReason !== undefined) return Promise.reject(this.closedReason);
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const correlationId = message.correlationId as string;
    const waiting = pendingPromise<T>();
    const entry: PendingAsk = {
      recipient: message.recipient,
      correlationId,
      timeoutMs: timeoutMs ?? 0,
      resolve: settlers.resolve,
      reject: settlers.reject,
      release: undefined,
      handedOut: waiting,
      deadlineMs: 0,
      list: undefined,
      prev: undefined,
      next: undefined,
    };
    if (timeoutMs !== undefined) this.timeouts.add(entry, timeoutMs, message.timestamp);
    if (signal !== undefined) {
      const onAbort = (): void => this.fail(correlationId, signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      entry.release = () => signal.removeEventListener("abort", onAbort);
    }
    pending.add(entry);
    const delivery = this.deliver(message, signal);
    if (delivery !== RESOLVED) delivery.catch((error: unknown) => this.fail(correlationId, error));
    return waiting;
  }

  /**
   * Rejects every waiting ask with `reason` and refuses new ones; cancels the
   * timeout timers, so no timer keeps the stopped runtime reachable.
   */
  close(reason: Error = new RuntimeStateError("RUNTIME_STOPPED", "the runtime stopped before a reply arrived")): void {
    this.closedReason = reason;
    for (const id of [...this.pending.ids(), ...this.controls.ids()]) this.fail(id, reason);
    this.timeouts.clear();
  }

  /**
   * Refuses `request` with `error`: the ask waiting for it here rejects with
   * `error` (keeping its class and cause); a request from another runtime gets the refusal back over the
   * bus ({@link failureReply}), so its asker learns now, not at its timeout.
   */
  refuse(request: Message, error: Error): void {
    const correlationId = request.correlationId;
    if (correlationId === undefined) return;
    const entry = this.detach(correlationId, this.pending) ?? this.detach(correlationId, this.controls);
    if (entry !== undefined) entry.reject(error);
    else if (request.replyTo !== undefined) this.transport?.forwardReply(failureReply(request, error));
  }

  /** Settles the ask `reply` answers; a reply no ask waits for is dropped and counted (a throwing "reply.late" listener throws here). */
  settleReply(reply: Message): void {
    const entry = this.detach(reply.correlationId as string, this.pending);
    if (entry !== undefined && reply.type === FAILURE_REPLY_TYPE) {
      entry.reject(remoteFailure(reply));
      return;
    }
    if (entry === undefined) {
      // The answer to a request from another runtime goes back over the bus.
      if (this.transport?.forwardReply(reply) === true) return;
      this.late++;
      this.events.emit("reply.late", reply);
      return;
    }
    if (this.replyGate === undefined) entry.resolve(reply);
    else this.replyGate(reply, () => entry.resolve(reply));
  }

  private fail(correlationId: string, error: unknown): void {
    (this.detach(correlationId, this.pending) ?? this.detach(correlationId, this.controls))?.reject(error);
  }

  /** Stops waiting under `correlationId`: no longer pending, no timeout, no abort listener. Returns the request, to be settled. */
  private detach(correlationId: string, pending: PendingRequests<PendingAsk>): PendingAsk | undefined {
    const entry = pending.take(correlationId);
    if (entry === undefined) return undefined;
    this.timeouts.remove(entry);
    entry.release?.();
    return entry;
  }
}

/** The error for a message to a name nobody holds. */
export function notFound(name: string): AgentNotFoundError {
  return new AgentNotFoundError(
    name,
    `no agent named '${name}' is registered in this runtime; check the name, or spawn the agent before sending to it`,
  );
}
