/**
 * Base class of every error civitas-ts throws or rejects with.
 *
 * `code` is stable across releases and safe to branch on; `message` says what
 * went wrong and what to do about it; `cause` carries the underlying error.
 *
 * @example
 * ```ts
 * try { await runtime.send("nobody", {}); }
 * catch (err) { if (err instanceof CivitasError && err.code === "AGENT_NOT_FOUND") { ... } }
 * ```
 */
export class CivitasError extends Error {
  /** Stable, machine-readable identifier of the condition. */
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Describes a value for an error message: `"" (string)`, `-1 (number)`, `undefined`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "string") return `${JSON.stringify(value)} (string)`;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return `${String(value)} (${typeof value})`;
  }
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  const ctor = (value as { constructor?: { name?: string } }).constructor?.name;
  return ctor && ctor !== "Object" ? `an instance of ${ctor}` : "an object";
}
