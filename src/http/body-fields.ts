import { InvalidArgumentError } from "../errors/errors.js";

/** Body fields that would name who decides: the identity comes from `authenticate`, never from the body. */
const IDENTITY_FIELDS: ReadonlySet<string> = new Set(["approver", "decider", "identity", "decidedBy", "user"]);

/**
 * Refuses a body with a field `route` does not take (`INVALID_ARGUMENT`),
 * naming an identity field as such.
 * @internal
 */
export function refuseUnknownFields(body: Readonly<Record<string, unknown>>, allowed: readonly string[], route: string): void {
  for (const key of Object.keys(body)) {
    if (allowed.includes(key)) continue;
    if (IDENTITY_FIELDS.has(key)) {
      throw new InvalidArgumentError(key, `${route} takes no '${key}': who decides is the identity the server authenticated, never a field of the request`);
    }
    throw new InvalidArgumentError(key, `${route} takes only ${allowed.map((name) => `'${name}'`).join(" and ")}, got an unknown field ${JSON.stringify(key)}`);
  }
}

/**
 * `body[key]` as a string of 1 to `maxLength` characters with something
 * visible in it.
 * @throws {@link InvalidArgumentError} naming the field and what it got
 * @internal
 */
export function requiredText(body: Readonly<Record<string, unknown>>, key: string, route: string, maxLength = 1024): string {
  const value = body[key];
  if (typeof value !== "string" || value.trim() === "" || value.length > maxLength) {
    const got = typeof value === "string" ? (value.length > maxLength ? `${value.length} characters` : JSON.stringify(value)) : value === undefined ? "nothing" : `a ${value === null ? "null" : typeof value}`;
    throw new InvalidArgumentError(key, `${route} needs '${key}': a non-blank string of at most ${maxLength} characters, got ${got}`);
  }
  return value;
}
