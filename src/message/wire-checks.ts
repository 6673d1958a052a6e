import { describeValue } from "../errors/civitas-error.js";

/*
 * The field checks that reading and writing the wire form share: each answers
 * false (never throws) for a value it cannot read.
 */

/** Whether `value` is a string of at least one character. @internal */
export function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

/** Whether `value` is a non-negative integer (a count, an attempt, a priority, a TTL). @internal */
export function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** Whether `value` is a finite, non-negative number (a timestamp). @internal */
export function isTimestamp(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/** Whether `value` is an object that is not an array (its contents are judged elsewhere); false, not a throw, for a revoked proxy. @internal */
export function isPlainObjectShallow(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  try {
    return !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Whether `value` is a `Uint8Array`; false, not a throw, for a revoked proxy. @internal */
export function isBytes(value: unknown): value is Uint8Array {
  try {
    return value instanceof Uint8Array;
  } catch {
    return false;
  }
}

/** {@link describeValue} that never throws (a revoked proxy throws on every look). @internal */
export function safeDescribe(value: unknown): string {
  try {
    return describeValue(value);
  } catch {
    return "an unreadable object";
  }
}

/** An error as `Name: message` for a message of its own (anything else as {@link safeDescribe} describes it). @internal */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : safeDescribe(error);
}
