/**
 * Message types reserved for the runtime. Application code cannot send the
 * `_agency.*` ones (`RESERVED_MESSAGE_TYPE`), so no agent can forge control.
 */
export const SYSTEM_MESSAGE_TYPES = Object.freeze([
  "_agency.shutdown",
  "_agency.heartbeat",
  "_agency.heartbeat_ack",
  "_agency.restart",
  "_agency.register",
  "_agency.deregister",
  "_agency.suspend",
  "_agency.resume",
  "civitas.eval.halt",
  "civitas.eval.correction",
] as const);

/** One of {@link SYSTEM_MESSAGE_TYPES}. */
export type SystemMessageType = (typeof SYSTEM_MESSAGE_TYPES)[number];

/** The default message type. */
export const DEFAULT_MESSAGE_TYPE = "message";

/** The type of replies built with `reply()`. */
export const REPLY_MESSAGE_TYPE = "reply";

const RESERVED_PREFIX = "_agency.";

/** Whether application code is forbidden to send `type`. */
export function isReservedType(type: string): boolean {
  return type.startsWith(RESERVED_PREFIX);
}

/** Types handled on the priority lane (>= 1); everything else is business (0). */
const PRIORITY_TYPES: ReadonlySet<string> = new Set([
  "_agency.shutdown",
  "_agency.heartbeat",
  "_agency.heartbeat_ack",
  "_agency.restart",
  "_agency.suspend",
  "_agency.resume",
  "civitas.eval.halt",
]);

/** The lane priority a message of `type` travels on: 1 for control, 0 for business. */
export function priorityOf(type: string): number {
  return PRIORITY_TYPES.has(type) ? 1 : 0;
}
