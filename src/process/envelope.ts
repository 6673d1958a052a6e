import { isSpanContextValid, type Span, type SpanContext } from "@opentelemetry/api";
import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError, ReservedMessageTypeError } from "../errors/errors.js";
import { checkSignal } from "../errors/check-signal.js";
import { assertJsonObject, isJsonObject, type JsonObject } from "../message/json.js";
import { newSpanId, newTraceId, uuidv7 } from "../message/ids.js";
import { checkNonNegative, type Message } from "../message/message.js";
import type { Clock } from "../time/clock.js";
import { mintControl } from "./control-authority.js";
import { DEFAULT_MESSAGE_TYPE, isReservedType, priorityOf, REPLY_MESSAGE_TYPE } from "../message/system-types.js";

/**
 * Where a message is composed: who sends it, the clock that stamps it, and
 * the message and span being handled. Plain data fields only, read on every
 * send: a getter or method here would turn each read into a generic
 * property lookup once two kinds of context (an agent's, the runtime's) pass through.
 * @internal
 */
export interface EnvelopeContext {
  readonly sender: string;
  readonly clock: Clock;
  readonly current: Message | undefined;
  readonly span: Span | undefined;
}

/**
 * Composes a message application code sends, refusing a type that is not a
 * non-empty string (`INVALID_ARGUMENT`), reserved types, bad recipients and
 * non-JSON payloads before anything is enqueued. Trace
 * context comes from the span (or message) being handled, so a send inside
 * `handle()` is a child of that handle span. A request (`replyTo` given) is
 * its own correlation id: replies are paired with it by the message id.
 * @internal
 */
export function composeOutgoing(
  ctx: EnvelopeContext,
  recipient: string,
  payload: JsonObject,
  type: string = DEFAULT_MESSAGE_TYPE,
  ttlMs?: number,
  replyTo?: string,
): Message {
  // The slow paths live in checkOutgoing: a small function is one V8 inlines into its callers.
  if (
    typeof type !== "string" ||
    type.length === 0 ||
    isReservedType(type) ||
    typeof recipient !== "string" ||
    recipient.length === 0 ||
    !isJsonObject(payload)
  ) {
    checkOutgoing(ctx, recipient, payload, type);
  }
  if (ttlMs !== undefined) checkNonNegative("ttlMs", ttlMs);
  const span = spanContextOf(ctx.span);
  const current = ctx.current;
  // Untraced, a message simply carries on the context of the one being handled: no ids to mint.
  const message = envelope(ctx, recipient, type, payload, span?.traceId ?? current?.traceId ?? newTraceId(), span?.spanId ?? current?.spanId ?? newSpanId());
  if (replyTo !== undefined) {
    message.correlationId = message.id;
    message.replyTo = replyTo;
  }
  // A handle span is a child of the message's sending span only when that message carried trace flags (see Telemetry.startMessageSpan).
  // null counts as absent, as on the wire
  const parentSpanId = span === undefined ? current?.parentSpanId : current?.traceFlags == null ? undefined : current.spanId;
  if (parentSpanId != null) message.parentSpanId = parentSpanId;
  const traceFlags = span === undefined ? current?.traceFlags : span.traceFlags;
  if (traceFlags != null) message.traceFlags = traceFlags;
  if (ttlMs !== undefined) message.ttlMs = ttlMs;
  return message;
}

/**
 * The checks of a send made before any recipient is chosen (`sendCapable`,
 * `broadcast`): its type (when given), signal, `ttlMs` and payload, as
 * {@link composeOutgoing} makes them once the recipient is known.
 * @internal
 */
export function checkSend(ctx: EnvelopeContext, payload: JsonObject, options: { readonly type?: unknown; readonly signal?: AbortSignal | undefined; readonly ttlMs?: number | undefined } | undefined): void {
  const type = options?.type;
  checkOutgoing(ctx, NO_RECIPIENT, payload, type === undefined ? DEFAULT_MESSAGE_TYPE : type);
  checkSignal(options?.signal, `'${ctx.sender}' sending`);
  checkNonNegative("ttlMs", options?.ttlMs);
}

/** Stands for the recipient in {@link checkSend}, which checks a send before it has one. */
const NO_RECIPIENT: unique symbol = Symbol("no recipient");

/**
 * The thorough checks behind {@link composeOutgoing}'s quick ones: throws what
 * is wrong, or returns for a valid payload the quick check could not judge
 * (one nested deeper than it looks).
 */
function checkOutgoing(ctx: EnvelopeContext, recipient: string | typeof NO_RECIPIENT, payload: JsonObject, type: unknown): void {
  if (typeof type !== "string" || type.length === 0) {
    throw new InvalidArgumentError(
      "type",
      `'${ctx.sender}' tried to send a message of type ${describeValue(type)}; pass a non-empty string, or leave type out for '${DEFAULT_MESSAGE_TYPE}'`,
    );
  }
  if (isReservedType(type)) throw new ReservedMessageTypeError(type);
  if (recipient === NO_RECIPIENT) {
    if (!isJsonObject(payload)) assertJsonObject(payload, `payload from '${ctx.sender}'`);
    return;
  }
  if (typeof recipient !== "string" || recipient.length === 0) {
    throw new InvalidArgumentError("recipient", `'${ctx.sender}' tried to send to ${describeValue(recipient)}; pass the recipient agent's name`);
  }
  assertJsonObject(payload, `payload from '${ctx.sender}' to '${recipient}'`);
}

/**
 * A runtime control request (`_agency.*`, priority lane) from `ctx` to
 * `recipient`: its own correlation id, replies to the sender; minted (frozen,
 * payload included, and branded), so the agent acts on it. Only the runtime
 * composes these; application code cannot (see {@link composeOutgoing}), and
 * a message it builds with a reserved type is never acted on.
 * @internal
 */
export function composeControl(ctx: EnvelopeContext, recipient: string, type: string, payload: JsonObject): Message {
  // One literal, in envelope()'s key order with the request's fields after: added one by one, they would
  // grow the message by a property store that freezing it then has to carry along.
  const timestamp = ctx.clock.now();
  const id = uuidv7(timestamp);
  const sender = ctx.sender;
  const message: Message = {
    id,
    type,
    sender,
    recipient,
    payload,
    timestamp,
    traceId: newTraceId(),
    spanId: newSpanId(),
    attempt: 0,
    priority: priorityOf(type),
    correlationId: id,
    replyTo: sender,
  };
  return mintControl(message);
}

/**
 * The reply to `request`: addressed to its `replyTo` (else its sender) with
 * its `correlationId`, so the bus pairs it with the waiting ask.
 * @internal
 */
export function composeReply(ctx: EnvelopeContext, request: Message, payload: JsonObject, type = REPLY_MESSAGE_TYPE): Message {
  if (!isJsonObject(payload)) assertJsonObject(payload, `reply payload of '${ctx.sender}'`);
  const span = spanContextOf(ctx.span);
  const message = envelope(ctx, request.replyTo ?? request.sender, type, payload, span?.traceId ?? request.traceId, span?.spanId ?? newSpanId());
  if (request.correlationId !== undefined) message.correlationId = request.correlationId;
  message.parentSpanId = request.spanId;
  if (span !== undefined) message.traceFlags = span.traceFlags;
  return message;
}

/** The copy of a reply last handed to a handler, and the reply it stands for (see {@link handOutReply}). */
let handedOut: Message | undefined;
let handedOutFor: Message | undefined;

/**
 * What `this.reply()` gives the handler for `reply`: a copy of it. Returning
 * that copy from `handle` routes `reply` itself ({@link takeComposedReply}),
 * an object no application code ever held: editing the copy, or turning a
 * field of it into a getter, changes nothing routed, and the reply needs
 * neither a snapshot nor a second check. The payload is shared, as on `send`.
 * @internal
 */
export function handOutReply(reply: Message): Message {
  const copy: Mutable<Message> = {
    id: reply.id,
    type: reply.type,
    sender: reply.sender,
    recipient: reply.recipient,
    payload: reply.payload,
    timestamp: reply.timestamp,
    traceId: reply.traceId,
    spanId: reply.spanId,
    attempt: reply.attempt,
    priority: reply.priority,
  };
  if (reply.correlationId !== undefined) copy.correlationId = reply.correlationId;
  if (reply.parentSpanId !== undefined) copy.parentSpanId = reply.parentSpanId;
  if (reply.traceFlags !== undefined) copy.traceFlags = reply.traceFlags;
  handedOut = copy;
  handedOutFor = reply;
  return copy;
}

/**
 * The reply {@link handOutReply} stands `message` for, when `message` is the
 * copy it handed out last (what `return this.reply(...)` gives back);
 * otherwise `undefined`. Either way it forgets that copy, so it is not kept alive.
 * @internal
 */
export function takeComposedReply(message: unknown): Message | undefined {
  const composed = message === handedOut ? handedOutFor : undefined;
  handedOut = undefined;
  handedOutFor = undefined;
  return composed;
}

/**
 * The context of the span being handled, or `undefined` when there is none,
 * it is not a valid context (the all-zero one), or reading it throws (a broken tracer): telemetry never throws into user code,
 * and the composers then carry on the ids of the message being handled.
 */
function spanContextOf(span: Span | undefined): SpanContext | undefined {
  if (span === undefined) return undefined;
  try {
    const context = span.spanContext();
    return isSpanContextValid(context) ? context : undefined;
  } catch {
    return undefined;
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The fields every message has, stamped now by `ctx`, in `buildMessage`'s key
 * order (so all messages share their first hidden classes); the composers add
 * the optional ones.
 */
function envelope(ctx: EnvelopeContext, recipient: string, type: string, payload: JsonObject, traceId: string, spanId: string): Mutable<Message> {
  const timestamp = ctx.clock.now();
  return { id: uuidv7(timestamp), type, sender: ctx.sender, recipient, payload, timestamp, traceId, spanId, attempt: 0, priority: priorityOf(type) };
}

/** Whether `value` looks like a {@link Message} (what `handle` may return). @internal */
export function isMessage(value: unknown): value is Message {
  return typeof value === "object" && value !== null && typeof (value as Message).id === "string" && typeof (value as Message).recipient === "string";
}
