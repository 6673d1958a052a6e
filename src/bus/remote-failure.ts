import { HandlerFailedError } from "../errors/handler-failed-error.js";
import { CivitasError } from "../errors/civitas-error.js";
import { buildMessage, type Message } from "../message/message.js";

/**
 * The type of the reply a runtime sends over the bus when it refuses a
 * request from another runtime (its handler failed for good, its agent
 * stopped or dropped it): the payload is `{ code, message }`. Reserved, so
 * no agent can send one; a runtime only turns it into a rejection of the
 * ask waiting for it.
 * @internal
 */
export const FAILURE_REPLY_TYPE = "_agency.error";

/**
 * The refusal of a request that came from another runtime, as the reply the
 * bus carries back to its asker. `error`'s code (or `HANDLER_FAILED`) and
 * message travel; a {@link HandlerFailedError} sends its cause's code and
 * message, the error the handler threw.
 * @internal
 */
export function failureReply(request: Message, error: Error): Message {
  const origin = error instanceof HandlerFailedError && error.cause instanceof Error ? error.cause : error;
  const own = (origin as { code?: unknown }).code;
  const code = typeof own === "string" ? own : origin === error ? "HANDLER_FAILED" : origin.name;
  return buildMessage({
    type: FAILURE_REPLY_TYPE,
    sender: request.recipient,
    recipient: request.replyTo as string,
    correlationId: request.correlationId,
    payload: {
      code,
      message: origin.message,
      agent: request.recipient,
      requestId: request.id,
      ...(error instanceof HandlerFailedError ? { action: error.action, attempt: error.attempt } : {}),
    },
    traceId: request.traceId,
    parentSpanId: request.spanId,
    priority: 0,
  });
}

/**
 * What the error a handler threw in another runtime becomes on the asker's
 * side: the `cause` of the `HANDLER_FAILED` the ask rejects with, with the
 * remote error's code and message.
 */
export class RemoteFailureError extends CivitasError {
  /** The agent that refused the request, in another runtime. */
  readonly agent: string;
  constructor(agent: string, code: string, message: string) {
    super(code, `${message} (in the runtime hosting '${agent}')`);
    this.agent = agent;
  }
}

/**
 * The rejection of the ask a {@link failureReply} answers: `HANDLER_FAILED`,
 * the remote error (its code and message) as cause.
 * @internal
 */
export function remoteFailure(reply: Message): HandlerFailedError {
  const payload = reply.payload;
  const text = (value: unknown, fallback: string): string => (typeof value === "string" && value.length > 0 ? value : fallback);
  const agent = text(payload.agent, reply.sender);
  const requestId = text(payload.requestId, reply.correlationId ?? "");
  const cause = new RemoteFailureError(agent, text(payload.code, "HANDLER_FAILED"), text(payload.message, "refused"));
  if (typeof payload.action === "string") {
    return new HandlerFailedError(agent, requestId, payload.action, typeof payload.attempt === "number" ? payload.attempt : 0, cause);
  }
  return new HandlerFailedError(agent, requestId, "REFUSED", 0, cause, `the runtime hosting '${agent}' refused the request ${requestId} with ${cause.code}, so no reply will come (${cause.message}); the refusal is this error's cause`);
}
