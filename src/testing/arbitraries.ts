import type { Arbitrary } from "fast-check";
import { fc } from "./fast-check.js";
import type { JsonObject, JsonValue } from "../message/json.js";
import type { Message } from "../message/message.js";

/** Options of {@link payloadArbitrary}. */
export interface PayloadArbitraryOptions {
  /** How deep objects and arrays nest inside the payload. @defaultValue 2 */
  maxDepth?: number;
  /** The most keys of one object, and items of one array. @defaultValue 5 */
  maxKeys?: number;
}

/**
 * Plain JSON values that survive `JSON.parse(JSON.stringify(v))` unchanged:
 * strings (any Unicode), safe integers, finite doubles (never `-0`), booleans,
 * `null`, arrays and plain objects. Keys are never `"__proto__"`.
 */
export function jsonValueArbitrary(options: PayloadArbitraryOptions = {}): Arbitrary<JsonValue> {
  const maxDepth = options.maxDepth ?? 2;
  const maxKeys = options.maxKeys ?? 5;
  const leaf: Arbitrary<JsonValue> = fc.oneof(
    fc.string({ unit: "grapheme", maxLength: 12 }),
    fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n)),
    fc.boolean(),
    fc.constant(null),
  );
  const { value } = fc.letrec<{ value: JsonValue; array: JsonValue[]; object: JsonObject }>((tie) => ({
    value: fc.oneof({ depthSize: "small", maxDepth, withCrossShrink: true }, leaf, tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: maxKeys }),
    object: objectOf(tie("value"), maxKeys),
  }));
  return value;
}

/**
 * Message payloads: plain JSON objects (see {@link jsonValueArbitrary} for
 * the values), which `createMessage`, `send` and every state store accept and
 * which cross the wire unchanged.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(payloadArbitrary(), (payload) => {
 *   expect(fromWire(toWire(createMessage({ sender: "a", recipient: "b", payload }))).payload).toEqual(payload);
 * }));
 * ```
 */
export function payloadArbitrary(options: PayloadArbitraryOptions = {}): Arbitrary<JsonObject> {
  const maxDepth = options.maxDepth ?? 2;
  const inner = maxDepth <= 0 ? leafOnly() : jsonValueArbitrary({ ...options, maxDepth: maxDepth - 1 });
  return objectOf(inner, options.maxKeys ?? 5);
}

/** Agent names the runtime accepts: 1–16 characters of `[a-z0-9_.-]`, starting with a letter. */
export function agentNameArbitrary(): Arbitrary<string> {
  return fc.stringMatching(/^[a-z][a-z0-9_.-]{0,15}$/);
}

/** Business message types: `"message"` most often, else a dotted name; never a reserved `_agency.*` type. */
export function messageTypeArbitrary(): Arbitrary<string> {
  return fc.oneof({ weight: 3, arbitrary: fc.constant("message") }, { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9]{0,7}(\.[a-z][a-z0-9]{0,7}){0,2}$/) });
}

/** Options of {@link messageArbitrary}. */
export interface MessageArbitraryOptions {
  /** The sender: a fixed name or an arbitrary. @defaultValue {@link agentNameArbitrary} */
  sender?: string | Arbitrary<string>;
  /** The recipient: a fixed name or an arbitrary. @defaultValue {@link agentNameArbitrary} */
  recipient?: string | Arbitrary<string>;
  /** The type. @defaultValue {@link messageTypeArbitrary} */
  type?: string | Arbitrary<string>;
  /** The payload. @defaultValue {@link payloadArbitrary} */
  payload?: Arbitrary<JsonObject>;
  /**
   * Which lanes: `"business"` (priority 0), `"control"` (1–9) or `"mixed"`
   * (mostly business). @defaultValue "mixed"
   */
  priority?: "business" | "control" | "mixed";
  /** Whether messages carry a `ttlMs`. @defaultValue "sometimes" */
  ttl?: "never" | "sometimes" | "always";
  /** Whether some messages are requests (`correlationId` + `replyTo`) or replies (`correlationId` only). @defaultValue true */
  requests?: boolean;
  /** Earliest `timestamp`. @defaultValue 1_600_000_000_000 (September 2020) */
  minTimestampMs?: number;
  /** Latest `timestamp`. @defaultValue 2_000_000_000_000 (May 2033) */
  maxTimestampMs?: number;
}

/**
 * Valid {@link Message} objects: a UUIDv7 `id` whose time field is the
 * message's `timestamp`, W3C trace and span ids, a non-reserved type, a
 * plain JSON payload, a priority, `attempt` 0–3 and, as asked, a `ttlMs`
 * and request/reply correlation. `createMessage` accepts every one of them
 * unchanged, and `fromWire(toWire(m))` gives `m` back. The ids come from
 * fast-check's random source, so a failing run replays from its seed.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(fc.array(messageArbitrary({ recipient: "inbox", priority: "business" })), (messages) => {
 *   const box = new Mailbox();
 *   for (const m of messages) box.offer(m);
 *   expect(box.drain()).toEqual(messages);
 * }));
 * ```
 */
export function messageArbitrary(options: MessageArbitraryOptions = {}): Arbitrary<Message> {
  const minTs = options.minTimestampMs ?? 1_600_000_000_000;
  const maxTs = options.maxTimestampMs ?? 2_000_000_000_000;
  const priority =
    options.priority === "business"
      ? fc.constant(0)
      : options.priority === "control"
        ? fc.integer({ min: 1, max: 9 })
        : fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 9 }) });
  const ttl = options.ttl ?? "sometimes";
  const ttlMs: Arbitrary<number | undefined> =
    ttl === "never" ? fc.constant(undefined) : ttl === "always" ? fc.integer({ min: 0, max: 3_600_000 }) : fc.option(fc.integer({ min: 0, max: 3_600_000 }), { nil: undefined });
  const role: Arbitrary<"send" | "request" | "reply"> = options.requests === false ? fc.constant("send") : fc.constantFrom("send", "send", "request", "reply");
  return fc
    .record({
      timestamp: fc.integer({ min: minTs, max: maxTs }),
      idBits: hex(19),
      type: given(options.type, messageTypeArbitrary()),
      sender: given(options.sender, agentNameArbitrary()),
      recipient: given(options.recipient, agentNameArbitrary()),
      payload: options.payload ?? payloadArbitrary(),
      traceId: hex(32).filter((h) => /[^0]/.test(h)),
      spanId: hex(16).filter((h) => /[^0]/.test(h)),
      parentSpanId: fc.option(hex(16).filter((h) => /[^0]/.test(h)), { nil: undefined }),
      traceFlags: fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
      attempt: fc.nat(3),
      priority,
      ttlMs,
      role,
      correlationBits: hex(19),
    })
    .map((r) => {
      const message: { -readonly [K in keyof Message]: Message[K] } = {
        id: uuidv7From(r.timestamp, r.idBits),
        type: r.type,
        sender: r.sender,
        recipient: r.recipient,
        payload: r.payload,
        timestamp: r.timestamp,
        traceId: r.traceId,
        spanId: r.spanId,
        attempt: r.attempt,
        priority: r.priority,
      };
      if (r.role !== "send") message.correlationId = uuidv7From(r.timestamp, r.correlationBits);
      if (r.role === "request") message.replyTo = r.sender;
      if (r.parentSpanId !== undefined) message.parentSpanId = r.parentSpanId;
      if (r.traceFlags !== undefined) message.traceFlags = r.traceFlags;
      if (r.ttlMs !== undefined) message.ttlMs = r.ttlMs;
      return message;
    });
}

function given(value: string | Arbitrary<string> | undefined, fallback: Arbitrary<string>): Arbitrary<string> {
  if (value === undefined) return fallback;
  return typeof value === "string" ? fc.constant(value) : value;
}

function hex(length: number): Arbitrary<string> {
  return fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length });
}

/** A UUIDv7 (RFC 9562) built from a timestamp and 19 random hex digits. */
function uuidv7From(timestampMs: number, bits: string): string {
  const time = timestampMs.toString(16).padStart(12, "0");
  const variant = "89ab"[Number.parseInt(bits.charAt(3), 16) % 4] as string;
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${bits.slice(0, 3)}-${variant}${bits.slice(4, 7)}-${bits.slice(7, 19)}`;
}

function leafOnly(): Arbitrary<JsonValue> {
  return jsonValueArbitrary({ maxDepth: 0 });
}

/** Plain objects with distinct keys (never `"__proto__"`, which JSON and object literals treat differently). */
function objectOf(value: Arbitrary<JsonValue>, maxKeys: number): Arbitrary<JsonObject> {
  return fc
    .uniqueArray(fc.tuple(fc.string({ maxLength: 8 }).filter((k) => k !== "__proto__"), value), { maxLength: maxKeys, selector: ([key]) => key })
    .map((entries) => Object.fromEntries<JsonValue>(entries));
}
