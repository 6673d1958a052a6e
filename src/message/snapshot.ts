import { copyJson, isJsonObject } from "./json.js";
import type { Message } from "./message.js";

type Fields = { -readonly [K in keyof Message]: Message[K] };

/**
 * A frozen copy of `message` with every own field read once: a getter
 * answers once, a Proxy is asked once, and a later change to the original
 * changes nothing in the copy. Its payload is copied too when it is plain
 * JSON. What the runtime keeps of a message application code handed it
 * (`Mailbox.put`/`offer`, a message `handle()` returned), so that the lane,
 * the routing and the dispatch are all decided on values nobody can change.
 * Anything that is not an object is returned as it is, for the caller's
 * checks to refuse.
 *
 * The copy is built field by field in the envelope's key order, not frozen
 * as a spread: V8 gives `Object.freeze({ ...message })` no cached frozen
 * shape, which made one snapshot cost ~15 µs and left the copy in a shape
 * every later read of it missed (the request-reply path lost half its
 * throughput to it). Fields beyond SPEC 2's are kept, after the others.
 * @throws whatever a getter of `message` throws.
 * @internal
 */
export function snapshotMessage(message: Message): Message {
  if (typeof message !== "object" || message === null) return message;
  const read = { ...message } as Fields; // the one read of each own field
  const payload = read.payload;
  const copy: Fields = {
    id: read.id,
    type: read.type,
    sender: read.sender,
    recipient: read.recipient,
    payload: isJsonObject(payload) ? copyJson(payload) : payload,
    timestamp: read.timestamp,
    traceId: read.traceId,
    spanId: read.spanId,
    attempt: read.attempt,
    priority: read.priority,
  };
  let fields = 10;
  if ("correlationId" in read) {
    copy.correlationId = read.correlationId;
    fields++;
  }
  if ("replyTo" in read) {
    copy.replyTo = read.replyTo;
    fields++;
  }
  if ("parentSpanId" in read) {
    copy.parentSpanId = read.parentSpanId;
    fields++;
  }
  if ("traceFlags" in read) {
    copy.traceFlags = read.traceFlags;
    fields++;
  }
  if ("ttlMs" in read) {
    copy.ttlMs = read.ttlMs;
    fields++;
  }
  const keys = Object.keys(read);
  if (keys.length !== fields || !hasRequiredFields(read)) copyRest(read, copy, keys);
  return Object.freeze(copy);
}

function hasRequiredFields(read: Fields): boolean {
  return "id" in read && "type" in read && "sender" in read && "recipient" in read && "payload" in read && "timestamp" in read && "traceId" in read && "spanId" in read && "attempt" in read && "priority" in read;
}

/** The uncommon shapes: fields SPEC 2 does not name are added, and required fields the original lacks are absent again. */
function copyRest(read: Fields, copy: Fields, keys: readonly string[]): void {
  const target = copy as unknown as Record<string, unknown>;
  for (const key of ["id", "type", "sender", "recipient", "payload", "timestamp", "traceId", "spanId", "attempt", "priority"]) {
    if (!(key in read)) Reflect.deleteProperty(target, key);
  }
  for (const key of keys) if (!(key in target)) target[key] = (read as unknown as Record<string, unknown>)[key];
}
