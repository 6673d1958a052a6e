import { AgentSuspendedError } from "../errors/errors.js";
import type { JsonObject } from "../message/json.js";
import type { Message } from "../message/message.js";
import { ProcessStatus } from "../contracts/process-status.js";
import { durationMs } from "./agent-options.js";
import { checkSend, composeOutgoing } from "./envelope.js";
import type { ProcessRunner } from "./process-runner.js";
import { broadcastRecipients, capableRecipient } from "./recipients.js";
import type { AskOptions, SendOptions } from "./send-options.js";

// What an agent's `ask`, `sendCapable` and `broadcast` do once called: check and compose the message,
// then hand it to the bus. `AgentProcess` keeps the signatures and their docs (and `send`'s body: the hot path).

/**
 * `this.ask(recipient, payload, options)`: with `failIfSuspended`, a local
 * recipient's status is read here, a remote one's asked of its owner first
 * (the query counts toward the timeout).
 * @internal
 */
export function askFrom(r: ProcessRunner, recipient: string, payload: JsonObject, options: AskOptions | undefined): Promise<Message> {
  try {
    const timeoutMs = durationMs("timeoutMs", options?.timeoutMs === undefined ? 30_000 : options.timeoutMs); // null is refused, not defaulted
    const services = r.requireServices();
    if (options?.failIfSuspended === true && services.registry.get(recipient)?.status === ProcessStatus.SUSPENDED) {
      throw new AgentSuspendedError(recipient);
    }
    const request = composeOutgoing(r, recipient, payload, options?.type, options?.ttlMs, r.agent.name);
    const transport = services.bus.transport;
    if (options?.failIfSuspended === true && services.registry.get(recipient) === undefined && transport?.hosts(recipient) === true) {
      // An agent in another process: its owner says whether it is suspended (the query counts toward the timeout).
      return transport.control(recipient, "status", {}, timeoutMs, options.signal).then((answer) => {
        if (answer.status === ProcessStatus.SUSPENDED) throw new AgentSuspendedError(recipient);
        return services.bus.request(request, timeoutMs, options.signal);
      });
    }
    return services.bus.request(request, timeoutMs, options?.signal);
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rethrows what checking and composing threw, a CivitasError
    return Promise.reject(error);
  }
}

/**
 * `this.sendCapable(capability, payload, options)`: one agent declaring
 * `capability` (`recipients.ts`), through the agent's own `send` (an
 * override of `send` sees it).
 * @internal
 */
export async function sendCapableFrom(r: ProcessRunner, capability: string, payload: JsonObject, options: SendOptions | undefined): Promise<void> {
  checkSend(r, payload, options);
  await r.agent.send(capableRecipient(r, capability), payload, options);
}

/**
 * `this.broadcast(pattern, payload, options)`: every other agent matching
 * `pattern`, each through the agent's own `send`; resolves with how many.
 * @internal
 */
export async function broadcastFrom(r: ProcessRunner, pattern: string, payload: JsonObject, options: SendOptions | undefined): Promise<number> {
  checkSend(r, payload, options);
  const targets = broadcastRecipients(r, pattern);
  await Promise.all(targets.map((name) => r.agent.send(name, payload, options)));
  return targets.length;
}
