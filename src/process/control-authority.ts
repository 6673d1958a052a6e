import type { JsonObject, JsonValue } from "../message/json.js";
import type { Message } from "../message/message.js";
import { Stamp } from "../message/stamp.js";

/**
 * Control authority (SPEC §5: "control authority is minted by the runtime").
 *
 * A runtime control message (`_agency.*`) acts only when the runtime made it:
 * where the runtime composes one (`runtime.suspend`/`resume`, a supervisor's
 * notice), it passes it through {@link mintControl}, which freezes it, payload
 * included, and stamps it with a private class field. The agent's loop asks
 * {@link isMintedControl}; a message that merely carries a reserved type —
 * put into a mailbox, returned from `handle()`, retried, whatever its fields
 * say or however they change — is dropped and reported, never acted on.
 *
 * The stamp is an ECMAScript private field: no property, symbol or
 * reflection reaches it, copying a message (`{ ...message }`) does not carry
 * it, and patching `WeakSet.prototype` or `Object` cannot fake it. Only this
 * module can add it.
 * @internal
 */

/** The brand: `#minted` exists only on objects passed through {@link mintControl}. */
class Minted extends Stamp {
  readonly #minted = true;

  /** Whether `value` carries the brand. */
  static has(value: object): boolean {
    return #minted in value;
  }
}

/**
 * Makes `message` a runtime control message: deeply frozen (its envelope and
 * payload can no longer change) and branded. Call it only where the runtime
 * itself creates a control message; nothing application code can reach may
 * pass through here.
 * @internal
 */
export function mintControl<M extends Message>(message: M): M {
  new Minted(message);
  // Frozen without asking whether it is already (freezing twice changes nothing): the payload is usually fresh.
  const payload = Object.freeze(message.payload);
  for (const key in payload) freezeJson(payload[key] as JsonValue);
  return Object.freeze(message);
}

/**
 * Whether `message` was made by {@link mintControl}: the only messages the
 * loop acts on as `_agency.*` control.
 * @internal
 */
export function isMintedControl(message: Message): boolean {
  return typeof message === "object" && message !== null && Minted.has(message);
}

function freezeJson(value: JsonValue | JsonObject): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  if (Array.isArray(value)) for (const item of value) freezeJson(item);
  else for (const key in value) freezeJson(value[key] as JsonValue);
}
