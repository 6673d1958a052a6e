import type { Message } from "../../message/message.js";
import type { Gate } from "./gate.js";
import type { SimulationChoice } from "./types.js";

/**
 * The gate at which an ask's `reply` waits until the simulation chooses it;
 * opening it calls `settle`. `ordinals` counts the replies per sender and
 * recipient, so each gets a key that is stable across runs.
 * @internal
 */
export function replyGate(ordinals: Map<string, number>, reply: Message, settle: () => void): Gate {
  const pair = `${reply.sender}>${reply.recipient}`;
  const ordinal = (ordinals.get(pair) ?? 0) + 1;
  ordinals.set(pair, ordinal);
  const choice: SimulationChoice = { kind: "reply", key: `${reply.recipient}<=${reply.sender}:${reply.type}#${ordinal}`, thread: reply.recipient, agent: reply.recipient, from: reply.sender, type: reply.type };
  return {
    faults: [],
    offer: () => choice,
    open: () => {
      settle();
      return { kind: "reply", from: reply.sender, type: reply.type, messageId: reply.id };
    },
  };
}
