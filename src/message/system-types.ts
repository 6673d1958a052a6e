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

/**
 * Whether application code is forbidden to send `type` (an `_agency.*` type).
 * Never throws: a value that is not a string is not a reserved type (whoever
 * composes the message refuses it with `INVALID_ARGUMENT`).
 */
export function isReservedType(type: unknown): boolean {
  return typeof type === "string" && type.startsWith(RESERVED_PREFIX);
}

/**
 * The lane priority a message of `type` travels on: 1 for control (every
 * reserved `_agency.*` type, and `civitas.eval.halt`), 0 for business
 * (everything else, `civitas.eval.correction` included, and anything that
 * is not a string).
 */
export function priorityOf(type: string): number {
  return isReservedType(type) || type === "civitas.eval.halt" ? 1 : 0;
}
