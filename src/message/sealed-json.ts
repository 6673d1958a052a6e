/**
 * Sealed JSON: objects the runtime built from checked parts and froze whole
 * (its suspension markers and their identities). Nothing can change one, so
 * a store keeps it as it is instead of copying it (InMemoryStateStore.set).
 *
 * The seal is an ECMAScript private field, as the control brand is
 * (control-authority.ts): no property, reflection or copy carries it, and
 * only {@link sealJson} adds it, before the object is frozen.
 * @internal
 */

import { Stamp } from "./stamp.js";

class Sealed extends Stamp {
  readonly #sealed = true;

  static has(value: object): boolean {
    return #sealed in value;
  }
}

/**
 * Seals and freezes `value`. Call it only on a fresh object whose
 * properties are all strings, finite numbers, booleans, `null` or sealed
 * values; the caller checks that (a frozen object holding anything else
 * would not be safe to share).
 * @internal
 */
export function sealJson<T extends object>(value: T): Readonly<T> {
  new Sealed(value);
  return Object.freeze(value);
}

/** Whether `value` was sealed by {@link sealJson}: deeply frozen plain JSON. @internal */
export function isSealedJson(value: object): boolean {
  return Sealed.has(value);
}
