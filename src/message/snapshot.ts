import { copyJson, isJsonObject } from "./json.js";
import type { Message } from "./message.js";

/**
 * A frozen copy of `message` with every own field read once: a getter
 * answers once, a Proxy is asked once, and a later change to the original
 * changes nothing in the copy. Its payload is copied too when it is plain
 * JSON. What the runtime keeps of a message application code handed it
 * (`Mailbox.put`/`offer`, a message `handle()` returned), so that the lane,
 * the routing and the dispatch are all decided on values nobody can change.
 * Anything that is not an object is returned as it is, for the caller's
 * checks to refuse.
 * @throws whatever a getter of `message` throws.
 * @internal
 */
export function snapshotMessage(message: Message): Message {
  if (typeof message !== "object" || message === null) return message;
  const copy = { ...message } as { -readonly [K in keyof Message]: Message[K] };
  const payload = copy.payload;
  if (isJsonObject(payload)) copy.payload = copyJson(payload);
  return Object.freeze(copy);
}
