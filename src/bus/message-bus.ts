import type { EventEmitter } from "eventemitter3";
import { AgentNotFoundError, AskTimeoutError, RuntimeStateError } from "../errors/errors.js";
import { isReply, type Message } from "../message/message.js";
import type { RuntimeEvents } from "../runtime/runtime-events.js";
import type { Clock, TimerHandle } from "../time/clock.js";
import type { Registry } from "./registry.js";

interface PendingAsk {
  readonly recipient: string;
  resolve: (reply: Message) => void;
  reject: (error: unknown) => void;
  timer: TimerHandle | undefined;
  release: (() => void) | undefined;
}

/** Options of {@link MessageBus.request}. */
export interface RequestOptions {
  /** How long to wait for the reply; without it the request waits until answered, failed or the bus closes. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Routes messages by name to mailboxes and pairs asks with their replies by
 * correlation id. A reply that arrives after its ask timed out is dropped and
 * counted, never handed to another caller.
 * @internal
 */
export class MessageBus {
  private readonly pending = new Map<string, PendingAsk>();
  private late = 0;
  private closedReason: Error | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly events: EventEmitter<RuntimeEvents>,
  ) {}

  /** Replies dropped because no ask was waiting for them. */
  get lateReplies(): number {
    return this.late;
  }

  /** Asks waiting for their reply. */
  get pendingAsks(): number {
    return this.pending.size;
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
    if (agent === undefined) return Promise.reject(notFound(message.recipient));
    return agent.mailbox.put(message, signal === undefined ? undefined : { signal });
  }

  /**
   * Delivers a request and resolves with its reply. `message` must carry a
   * `correlationId` and a `replyTo`. The timeout error is created here, before
   * its timer is armed, so its stack points at the caller.
   */
  request(message: Message, options: RequestOptions): Promise<Message> {
    if (this.closedReason !== undefined) return Promise.reject(this.closedReason);
    const timeoutMs = options.timeoutMs;
    const timeoutError = timeoutMs === undefined ? undefined : new AskTimeoutError(message.recipient, timeoutMs);
    const correlationId = message.correlationId as string;
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<Message>((resolve, reject) => {
      const entry: PendingAsk = {
        recipient: message.recipient,
        resolve,
        reject,
        timer: timeoutMs === undefined ? undefined : this.clock.setTimeout(() => this.fail(correlationId, timeoutError), timeoutMs),
        release: undefined,
      };
      if (signal !== undefined) {
        const onAbort = (): void => this.fail(correlationId, signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        entry.release = () => signal.removeEventListener("abort", onAbort);
      }
      this.pending.set(correlationId, entry);
      this.deliver(message, signal).catch((error: unknown) => this.fail(correlationId, error));
    });
  }

  /** Rejects every waiting ask with `reason` and refuses new ones. */
  close(reason: Error = new RuntimeStateError("RUNTIME_STOPPED", "the runtime stopped before a reply arrived")): void {
    this.closedReason = reason;
    for (const id of [...this.pending.keys()]) this.fail(id, reason);
  }

  /** Rejects the waiting request `correlationId` with `error` (an in-process refusal keeps its class and cause). */
  reject(correlationId: string, error: Error): void {
    this.fail(correlationId, error);
  }

  private settleReply(reply: Message): void {
    const entry = this.pending.get(reply.correlationId as string);
    if (entry === undefined) {
      this.late++;
      this.events.emit("reply.late", reply);
      return;
    }
    this.pending.delete(reply.correlationId as string);
    entry.timer?.cancel();
    entry.release?.();
    entry.resolve(reply);
  }

  private fail(correlationId: string, error: unknown): void {
    const entry = this.pending.get(correlationId);
    if (entry === undefined) return;
    this.pending.delete(correlationId);
    entry.timer?.cancel();
    entry.release?.();
    entry.reject(error);
  }
}

/** The error for a message to a name nobody holds. */
export function notFound(name: string): AgentNotFoundError {
  return new AgentNotFoundError(
    name,
    `no agent named '${name}' is registered in this runtime; check the name, or spawn the agent before sending to it`,
  );
}
