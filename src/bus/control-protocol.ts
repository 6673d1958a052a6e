import { describeValue } from "../errors/civitas-error.js";
import { AgentUnreachableError, ControlTimeoutError, RemoteControlError, TransportUnavailableError } from "../errors/errors.js";
import { newSpanId, newTraceId, uuidv7 } from "../message/ids.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { sleep, systemClock, type Clock } from "../time/clock.js";
import type { ControlOperation, TransportHost } from "./transport.js";

/**
 * The transport-neutral protocol of control across processes: the owner's
 * {@link ControlServer} and the requester's {@link requestControl}, over any
 * {@link ControlChannel} (NATS in `civitas-ts/nats`, the simulated bus of
 * `civitas-ts/testing`). It imports no network module.
 */

/** Subject of the control requests for the agent `name`: only its owner subscribes. @internal */
export function controlSubject(name: string): string {
  return `civitas.ctl.${name}`;
}

const OPERATIONS: Record<string, ControlOperation> = { "_agency.suspend": "suspend", "_agency.resume": "resume", "civitas.ctl.status": "status", "civitas.ctl.approval": "approval" };
const TYPES: Record<ControlOperation, string> = { suspend: "_agency.suspend", resume: "_agency.resume", status: "civitas.ctl.status", approval: "civitas.ctl.approval" };
const RESULT_TYPE = "civitas.ctl.result";
/** How many outcomes an owner remembers by request id, for retried requests. */
const REMEMBERED = 10_000;
/** How long a requester waits between attempts while nobody answers the agent's control subject. @internal */
export const RETRY_MS = 100;
/**
 * How long one attempt waits for its answer before the same request (same
 * `requestId`) is sent again: an answer lost in transit costs at most this.
 * @internal
 */
export const ATTEMPT_MS = 1_000;

/**
 * Why one attempt of a control request got no answer: nobody subscribes to
 * the subject (`"no-responders"`), or the request was sent and no answer
 * came in time (`"timeout"`). A {@link ControlChannel} rejects with it.
 * @internal
 */
export class ControlAttemptError extends Error {
  constructor(
    readonly kind: "no-responders" | "timeout",
    options?: ErrorOptions,
  ) {
    super(kind === "no-responders" ? "no responders on the control subject" : "no answer to the control request in time", options);
    this.name = "ControlAttemptError";
  }
}

/**
 * One request/answer exchange on a bus: sends `request` to `subject` and
 * resolves with the first answer. Rejects with a {@link ControlAttemptError}
 * (`"no-responders"` or `"timeout"` after `timeoutMs`); any other rejection
 * means the request could not be sent.
 * @internal
 */
export interface ControlChannel {
  request(subject: string, request: Message, timeoutMs: number): Promise<Message>;
}

function envelope(clock: Clock, type: string, recipient: string, payload: JsonObject): Message {
  const timestamp = clock.now();
  return { id: uuidv7(timestamp), type, sender: "_runtime", recipient, payload, timestamp, traceId: newTraceId(), spanId: newSpanId(), attempt: 0, priority: 1 };
}

/**
 * The owner's side of cross-process control: decides each request through
 * the runtime's own calls, and answers a retried request (same `requestId`)
 * with the outcome recorded for it, never a second effect.
 * @internal
 */
export class ControlServer {
  private readonly outcomes = new Map<string, Promise<JsonObject>>();

  constructor(
    private readonly host: TransportHost,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Answers one request (already known to be for the agent `name`). */
  async answer(request: Message, name: string): Promise<Message> {
    let result: JsonObject;
    const operation = OPERATIONS[request.type];
    const requestId = request.payload.requestId;
    const timeoutMs = request.payload.timeoutMs;
    if (operation === undefined || typeof requestId !== "string" || requestId.length === 0 || typeof timeoutMs !== "number") {
      result = { ok: false, code: "INVALID_WIRE_MESSAGE", message: `a control request for '${name}' must be a suspend, resume, status or approval request with a requestId and timeoutMs, got type ${describeValue(request.type)}` };
    } else {
      let outcome = this.outcomes.get(requestId);
      if (outcome === undefined) {
        const args = typeof request.payload.args === "object" && request.payload.args !== null && !Array.isArray(request.payload.args) ? request.payload.args : {};
        // A retry this server never saw: its first attempt may have taken effect in a previous incarnation (the host checks the audit log).
        outcome = this.decide(name, operation, request.payload.retry === true ? { ...args, retry: true } : args, timeoutMs);
        // A read (a status query, an approval read without a vote) changes nothing: asked again, it is answered afresh.
        this.remember(requestId, operation === "status" || (operation === "approval" && args.vote === undefined) ? undefined : outcome);
      }
      result = await outcome;
    }
    return this.result(result);
  }

  /** The answer envelope carrying `result`; also what a transport sends back for a request it could not read. */
  result(result: JsonObject): Message {
    return envelope(this.clock, RESULT_TYPE, "", result);
  }

  private decide(name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number): Promise<JsonObject> {
    try {
      return this.host.control(name, operation, args, timeoutMs).then(
        (answer) => ({ ok: true, answer }),
        (error: unknown) => controlFailure(error),
      );
    } catch (error) {
      return Promise.resolve(controlFailure(error));
    }
  }

  /** Keeps the outcome of a state-changing request (not of a status query) for retries; the oldest are forgotten first. */
  private remember(requestId: string, outcome: Promise<JsonObject> | undefined): void {
    if (outcome === undefined) return;
    this.outcomes.set(requestId, outcome);
    if (this.outcomes.size > REMEMBERED) this.outcomes.delete(this.outcomes.keys().next().value as string);
  }
}

/** A refusal as an answer carries it: its code and message. @internal */
export function controlFailure(error: unknown): JsonObject {
  const code = typeof (error as { code?: unknown } | null)?.code === "string" ? (error as { code: string }).code : "HANDLER_FAILED";
  return { ok: false, code, message: error instanceof Error ? error.message : String(error) };
}

/** Where {@link requestControl} sends, how it tells time, and what it may be told to stop by. @internal */
export interface ControlRequestContext {
  readonly channel: ControlChannel;
  readonly clock: Clock;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Sends a control request to the owner of `name` and resolves with its
 * answer. While nobody answers the agent's control subject it tries again
 * until the deadline (`AGENT_UNREACHABLE`). An attempt that was taken and
 * got no answer within {@link ATTEMPT_MS} (the answer may have been lost in
 * transit, or the owner is still deciding) is sent again, with the same
 * `requestId`, so the owner answers with the outcome it recorded for it and
 * acts once; once some attempt was taken and no answer came by the
 * deadline, `CONTROL_TIMEOUT`. A refusal rejects with its own code.
 * @internal
 */
export async function requestControl(context: ControlRequestContext, name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number): Promise<JsonObject> {
  const { channel, clock, signal } = context;
  const deadline = clock.now() + timeoutMs;
  const payload: JsonObject = { requestId: uuidv7(), args, timeoutMs };
  let request = envelope(clock, TYPES[operation], name, payload);
  let taken = false;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    const left = deadline - clock.now();
    if (left <= 0) throw taken ? new ControlTimeoutError(name, timeoutMs) : new AgentUnreachableError(name, timeoutMs);
    let reply: Message;
    try {
      reply = await channel.request(controlSubject(name), request, Math.max(1, Math.min(left, ATTEMPT_MS)));
    } catch (error) {
      if (!(error instanceof ControlAttemptError)) throw new TransportUnavailableError(`the control request for '${name}' could not be sent: ${(error as Error).message}`, { cause: error });
      if (error.kind === "timeout") {
        // A subscriber took it (else the bus would have said "no responders"): ask again for the recorded outcome,
        // flagged as a retry, for an owner that restarted meanwhile and forgot the requestId.
        if (!taken) request = { ...request, payload: { ...payload, retry: true } };
        taken = true;
        continue;
      }
      await sleep(clock, Math.min(RETRY_MS, Math.max(0, deadline - clock.now())), signal);
      continue;
    }
    const result = reply.payload;
    if (result.ok === true) return typeof result.answer === "object" && result.answer !== null && !Array.isArray(result.answer) ? result.answer : {};
    throw new RemoteControlError(name, typeof result.code === "string" ? result.code : "HANDLER_FAILED", typeof result.message === "string" ? result.message : "refused");
  }
}
