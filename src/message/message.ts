import { describeValue } from "../errors/civitas-error.js";
import { InvalidArgumentError } from "../errors/errors.js";
import { newSpanId, newTraceId, uuidv7 } from "./ids.js";
import { assertJsonObject, isJsonObject, type JsonObject, type JsonPayload } from "./json.js";
import { DEFAULT_MESSAGE_TYPE, priorityOf } from "./system-types.js";

/**
 * The envelope every message travels in. Create one with {@link createMessage};
 * the runtime creates them for you in `send`, `ask`, `broadcast` and `reply`.
 *
 * `P` is the payload's type, an `interface` or a type alias:
 * `handle(message: Message<Payment>)` states what the agent expects. It is
 * a claim about what senders send, checked where messages are made
 * (`send<P>`, `ask<Req, Res>`, `reply<P>` require `P extends JsonPayload<P>`),
 * not when one arrives: validate payloads from untrusted senders.
 */
export interface Message<P extends object = JsonObject> {
  /** UUIDv7, unique per message (a retry keeps the id and bumps `attempt`). */
  readonly id: string;
  /** What the message means; `"message"` unless given. */
  readonly type: string;
  /** Name of the sending agent (or `"_runtime"` for sends from outside). */
  readonly sender: string;
  /** Name of the agent it is addressed to. */
  readonly recipient: string;
  /** Pairs a request with its reply. A message with a `correlationId` and no `replyTo` is a reply. */
  readonly correlationId?: string;
  /** Where the reply to this request goes. */
  readonly replyTo?: string;
  /** A plain JSON object. */
  readonly payload: P;
  /** Creation time, epoch milliseconds. */
  readonly timestamp: number;
  /** W3C trace id (32 hex characters). */
  readonly traceId: string;
  /** Id of the span that sent this message (16 hex characters). */
  readonly spanId: string;
  /** Id of that span's parent, when known. */
  readonly parentSpanId?: string;
  /**
   * W3C trace flags of the span that sent this message (bit 0: sampled), so
   * the receiver's handle span follows the sender's sampling decision.
   * Absent when the message was sent outside any span: its trace and span
   * ids were then minted for correlation only, and handling it starts a new trace.
   */
  readonly traceFlags?: number;
  /** 0 on first delivery; a RETRY re-enqueues the message with `attempt + 1`. */
  readonly attempt: number;
  /** 0 = business lane, >= 1 = priority (control) lane. */
  readonly priority: number;
  /** Discard at dequeue once older than this; expiry is counted and reported. */
  readonly ttlMs?: number;
}

/** What {@link createMessage} needs; everything else gets a default. `P` is the payload's type. */
export interface MessageInit<P extends object = JsonObject> {
  /** Name of the sending agent. */
  sender: string;
  /** Name of the agent it is addressed to. */
  recipient: string;
  /** A plain JSON object. */
  payload: P;
  /** @defaultValue `"message"` */
  type?: string | undefined;
  /** Pairs a request with its reply. */
  correlationId?: string | undefined;
  /** Where the reply to this request goes. */
  replyTo?: string | undefined;
  /** Epoch milliseconds. @defaultValue now */
  timestamp?: number | undefined;
  /** @defaultValue a new random trace id */
  traceId?: string | undefined;
  /** @defaultValue a new random span id */
  spanId?: string | undefined;
  /** The sending span's parent, when known. */
  parentSpanId?: string | undefined;
  /** W3C trace flags of the sending span (1 = sampled); leave out when there is no such span. */
  traceFlags?: number | undefined;
  /** @defaultValue 0 */
  attempt?: number | undefined;
  /** @defaultValue what the type implies: 1 for `_agency.*` control and `civitas.eval.halt`, else 0 */
  priority?: number | undefined;
  /** Discard at dequeue once older than this. */
  ttlMs?: number | undefined;
  /** @defaultValue a new UUIDv7 carrying `timestamp` */
  id?: string | undefined;
}

/**
 * Creates a message, checking that its payload is plain JSON and every field
 * has a type the wire form can carry: whatever it returns survives
 * `fromWire(toWire(message))` unchanged.
 *
 * @throws {@link PayloadNotSerializableError} when the payload is not a plain JSON object.
 * @throws {@link InvalidArgumentError} for a `sender` or `recipient` that is not a non-empty string;
 *   a `type`, `correlationId` or `replyTo` that is not a string (they may be empty);
 *   an `id`, `traceId`, `spanId` or `parentSpanId` given as anything but a non-empty string;
 *   a negative or non-integer `ttlMs`, `attempt` or `priority`; `traceFlags` other than an integer 0-255; or a timestamp that is not a finite, non-negative number.
 * @example
 * ```ts
 * const m = createMessage({ sender: "a", recipient: "b", payload: { n: 1 } });
 * ```
 */
export function createMessage<P extends JsonPayload<P>>(init: MessageInit<P>): Message<P> {
  if (typeof init !== "object" || init === null) {
    throw new InvalidArgumentError("init", `createMessage needs { sender, recipient, payload, ... }, got ${describeValue(init)}`);
  }
  if (!isJsonObject(init.payload)) assertJsonObject(init.payload, `payload of a message to '${init.recipient}'`);
  return buildMessage(init);
}

/**
 * Like {@link createMessage} but trusts that the payload was already checked;
 * every other field is checked.
 * @throws {@link InvalidArgumentError} as {@link createMessage} does.
 */
export function buildMessage<P extends object>(init: MessageInit<P>): Message<P> {
  const type = init.type ?? DEFAULT_MESSAGE_TYPE;
  checkStrings(init, type);
  const timestamp = init.timestamp ?? Date.now();
  if (!(Number.isFinite(timestamp) && timestamp >= 0)) {
    throw new InvalidArgumentError(
      "timestamp",
      `message timestamp must be a non-negative finite number of epoch milliseconds, got ${String(timestamp)}`,
    );
  }
  checkNonNegative("ttlMs", init.ttlMs);
  checkNonNegative("attempt", init.attempt);
  checkNonNegative("priority", init.priority);
  if (init.traceFlags !== undefined && !isTraceFlags(init.traceFlags)) {
    throw new InvalidArgumentError("traceFlags", `message traceFlags must be the W3C trace-flags byte (an integer 0-255, 1 = sampled) or left out, got ${describeValue(init.traceFlags)}`);
  }
  const message: {
    -readonly [K in keyof Message<P>]: Message<P>[K];
  } = {
    id: init.id ?? uuidv7(timestamp),
    type,
    sender: init.sender,
    recipient: init.recipient,
    payload: init.payload,
    timestamp,
    traceId: init.traceId ?? newTraceId(),
    spanId: init.spanId ?? newSpanId(),
    attempt: init.attempt ?? 0,
    priority: init.priority ?? priorityOf(type),
  };
  if (init.correlationId !== undefined) message.correlationId = init.correlationId;
  if (init.replyTo !== undefined) message.replyTo = init.replyTo;
  if (init.parentSpanId !== undefined) message.parentSpanId = init.parentSpanId;
  if (init.traceFlags !== undefined) message.traceFlags = init.traceFlags;
  if (init.ttlMs !== undefined) message.ttlMs = init.ttlMs;
  return message;
}

/**
 * Throws `INVALID_ARGUMENT` for a string field the wire form could not carry
 * (see {@link createMessage}): the same rules `fromWire` applies.
 */
function checkStrings(init: MessageInit<object>, type: unknown): void {
  if (!isNonEmptyString(init.sender)) {
    throw new InvalidArgumentError("sender", `message sender must be the sending agent's name (a non-empty string), got ${describeValue(init.sender)}`);
  }
  if (!isNonEmptyString(init.recipient)) {
    throw new InvalidArgumentError("recipient", `message recipient must be the name of the agent to send to (a non-empty string), got ${describeValue(init.recipient)}`);
  }
  if (typeof type !== "string") {
    throw new InvalidArgumentError("type", `message type must be a string, got ${describeValue(type)}; leave it out for '${DEFAULT_MESSAGE_TYPE}'`);
  }
  for (const name of ["correlationId", "replyTo"] as const) {
    const value = init[name];
    if (value !== undefined && typeof value !== "string") {
      throw new InvalidArgumentError(name, `message ${name} must be a string or left out, got ${describeValue(value)}`);
    }
  }
  for (const name of ["id", "traceId", "spanId", "parentSpanId"] as const) {
    const value = init[name];
    if (value !== undefined && !isNonEmptyString(value)) {
      throw new InvalidArgumentError(name, `message ${name} must be a non-empty string or left out (to be generated), got ${describeValue(value)}`);
    }
  }
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

function isCount(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** Whether `value` is a W3C trace-flags byte. @internal */
export function isTraceFlags(value: unknown): value is number {
  return isCount(value) && (value as number) <= 255;
}

const REQUIRED_STRINGS = ["id", "sender", "recipient", "traceId", "spanId"] as const;
const OPTIONAL_STRINGS = ["correlationId", "replyTo"] as const;

/**
 * The first field of `value` that a {@link Message} cannot have, as
 * `[field, what it must be]`, or `undefined` when every field has the type
 * SPEC 2 and the wire form require (`null` counts as absent for the optional
 * ones, as on the wire). The payload's top level only: its contents are
 * checked when a message is created. One place for every check of a
 * message built elsewhere (`toWire`, a message `handle()` returns).
 * @internal
 */
export function envelopeProblem(value: unknown): [field: string, expected: string] | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return ["message", "a Message (from createMessage or fromWire)"];
  const m = value as Record<string, unknown>;
  for (const key of REQUIRED_STRINGS) if (!isNonEmptyString(m[key])) return [key, "a non-empty string"];
  if (typeof m.type !== "string") return ["type", "a string"];
  const payload = m.payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return ["payload", "a plain JSON object"];
  const timestamp = m.timestamp;
  if (!(typeof timestamp === "number" && Number.isFinite(timestamp) && timestamp >= 0)) return ["timestamp", "a non-negative number"];
  if (!isCount(m.attempt)) return ["attempt", "a non-negative integer"];
  if (!isCount(m.priority)) return ["priority", "a non-negative integer"];
  for (const key of OPTIONAL_STRINGS) if (m[key] != null && typeof m[key] !== "string") return [key, "a string or absent"];
  if (m.parentSpanId != null && !isNonEmptyString(m.parentSpanId)) return ["parentSpanId", "a non-empty string or absent"];
  if (m.traceFlags != null && !isTraceFlags(m.traceFlags)) return ["traceFlags", "an integer 0-255 or absent"];
  if (m.ttlMs != null && !isCount(m.ttlMs)) return ["ttlMs", "a non-negative integer or absent"];
  return undefined;
}

/** @internal Throws `INVALID_ARGUMENT` unless `value` is undefined or a non-negative integer. */
export function checkNonNegative(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
    throw new InvalidArgumentError(name, `message ${name} must be a non-negative integer, got ${String(value)}`);
  }
}

/** Whether `message` is a reply to an `ask` (it has a `correlationId` and no `replyTo`). */
export function isReply(message: Message): boolean {
  // null counts as absent, as on the wire
  return message.correlationId != null && message.replyTo == null;
}

/** Whether `message` has outlived its `ttlMs` at time `nowMs`. */
export function isExpired(message: Message, nowMs: number): boolean {
  return message.ttlMs != null && nowMs - message.timestamp > message.ttlMs;
}

/** A copy of `message` for its next delivery attempt. */
export function nextAttempt<P extends object>(message: Message<P>): Message<P> {
  return { ...message, attempt: message.attempt + 1 };
}
