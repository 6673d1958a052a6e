import { newSpanId, newTraceId } from "../message/ids.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { isReservedType } from "../message/system-types.js";
import { mintControl } from "../process/control-authority.js";
import type { RemoteAgent } from "./remote-directory.js";

/** The only reserved type the bus may bring to an agent: anyone may ask whether it is alive. */
const HEARTBEAT = "_agency.heartbeat";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * What a message from the bus becomes before it reaches the agent `name`,
 * or why it is dropped. Control types (`_agency.suspend`, `_agency.resume`,
 * `_agency.shutdown` …) are never taken from the bus: only the owner's
 * runtime acts on them. The message is made what the runtime expects of
 * one: addressed to the agent whose subject it came on, a request with a
 * `reply_to` and no `correlation_id` pairs its reply by its id (so does a
 * heartbeat without `reply_to`, answered to its sender), and a message sent
 * outside any trace (Python's empty ids) gets ids of its own. `message`
 * must be one just decoded, held by nobody else: it is completed in place.
 * Returns the message to deliver, or (a string) why it was dropped: no
 * wrapper object per message.
 * @internal
 */
export function admitInbound(message: Message, name: string): Message | string {
  if (isReservedType(message.type) && message.type !== HEARTBEAT) {
    return `a '${message.type}' control message from '${message.sender}' arrived on the bus for '${name}'; control is taken only from the agent's own runtime, so it was dropped`;
  }
  // The message was just decoded from the bus and nobody else holds it: it is completed in place, not copied.
  const m = message as Mutable<Message>;
  if (m.recipient !== name) m.recipient = name;
  if (m.type === HEARTBEAT && m.replyTo === undefined && m.sender.length > 0) m.replyTo = m.sender;
  if (m.replyTo !== undefined && m.correlationId === undefined) m.correlationId = m.id;
  if (m.traceId.length === 0 || m.spanId.length === 0) {
    m.traceId = newTraceId();
    m.spanId = newSpanId();
    delete m.traceFlags;
  }
  // A heartbeat carries no authority (it only asks for an ack), and this runtime admitted it: minted here, it is
  // the one reserved type from the bus the agent's loop acts on (see control-authority.ts).
  return m.type === HEARTBEAT ? mintControl(m) : m;
}

/** Reads an announcement's payload (`{ name, capabilities, capability_metadata }`), or `undefined` when it names no agent. @internal */
export function readAnnouncement(payload: JsonObject): RemoteAgent | undefined {
  const name = payload.name;
  if (typeof name !== "string" || name.length === 0) return undefined;
  const listed = payload.capabilities;
  const capabilities = Array.isArray(listed) ? listed.filter((c): c is string => typeof c === "string" && c.length > 0) : [];
  const metadata = payload.capability_metadata;
  const capabilityMetadata = typeof metadata === "object" && metadata !== null && !Array.isArray(metadata) ? metadata : {};
  return { name, capabilities, capabilityMetadata };
}
