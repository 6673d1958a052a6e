import type { Span } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, ReservedMessageTypeError } from "../errors/errors.js";
import { assertJsonObject, isJsonObject, type JsonObject } from "../message/json.js";
import { buildMessage, type Message } from "../message/message.js";
import { DEFAULT_MESSAGE_TYPE, isReservedType, REPLY_MESSAGE_TYPE } from "../message/system-types.js";

/** Where a message is composed: who sends it, at what time, inside which handled message and span. @internal */
export interface EnvelopeContext {
  readonly sender: string;
  readonly nowMs: number;
  readonly current?: Message | undefined;
  readonly span?: Span | undefined;
}

/** The application-facing parts of a message to compose. @internal */
export interface OutgoingInit {
  readonly recipient: string;
  readonly payload: JsonObject;
  readonly type?: string | undefined;
  readonly ttlMs?: number | undefined;
  readonly correlationId?: string | undefined;
  readonly replyTo?: string | undefined;
}

/**
 * Composes a message application code sends, refusing reserved types, bad
 * recipients and non-JSON payloads before anything is enqueued. Trace
 * context comes from the span (or message) being handled, so a send inside
 * `handle()` is a child of that handle span.
 * @internal
 */
export function composeOutgoing(ctx: EnvelopeContext, init: OutgoingInit): Message {
  const type = init.type ?? DEFAULT_MESSAGE_TYPE;
  if (isReservedType(type)) throw new ReservedMessageTypeError(type);
  if (typeof init.recipient !== "string" || init.recipient.length === 0) {
    throw new InvalidArgumentError("recipient", `'${ctx.sender}' tried to send to ${describeValue(init.recipient)}; pass the recipient agent's name`);
  }
  // the message text is built only when the check fails: this is the hot path
  if (!isJsonObject(init.payload)) assertJsonObject(init.payload, `payload from '${ctx.sender}' to '${init.recipient}'`);
  const span = ctx.span?.spanContext();
  return buildMessage({
    sender: ctx.sender,
    recipient: init.recipient,
    payload: init.payload,
    type,
    correlationId: init.correlationId,
    replyTo: init.replyTo,
    timestamp: ctx.nowMs,
    // Untraced, a message simply carries on the context of the one being handled: no ids to mint.
    traceId: span?.traceId ?? ctx.current?.traceId,
    spanId: span?.spanId ?? ctx.current?.spanId,
    parentSpanId: span === undefined ? ctx.current?.parentSpanId : ctx.current?.spanId,
    ttlMs: init.ttlMs,
  });
}

/**
 * The reply to `request`: addressed to its `replyTo` (else its sender) with
 * its `correlationId`, so the bus pairs it with the waiting ask.
 * @internal
 */
export function composeReply(ctx: EnvelopeContext, request: Message, payload: JsonObject, type = REPLY_MESSAGE_TYPE): Message {
  if (!isJsonObject(payload)) assertJsonObject(payload, `reply payload of '${ctx.sender}'`);
  const span = ctx.span?.spanContext();
  return buildMessage({
    sender: ctx.sender,
    recipient: request.replyTo ?? request.sender,
    correlationId: request.correlationId,
    type,
    payload,
    timestamp: ctx.nowMs,
    traceId: span?.traceId ?? request.traceId,
    spanId: span?.spanId,
    parentSpanId: request.spanId,
  });
}

/** Whether `value` looks like a {@link Message} (what `handle` may return). @internal */
export function isMessage(value: unknown): value is Message {
  return typeof value === "object" && value !== null && typeof (value as Message).id === "string" && typeof (value as Message).recipient === "string";
}
