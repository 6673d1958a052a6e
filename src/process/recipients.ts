import { AgentNotFoundError } from "../errors/errors.js";
import type { ProcessRunner } from "./process-runner.js";

// Whom an agent's `sendCapable` and `broadcast` reach: the agents of this runtime first, then those
// other runtimes on the bus announced (through the transport, when there is one).

/**
 * The agent `sendCapable(capability)` sends to: one of this runtime that
 * declares `capability` (round-robin among them), else one another runtime
 * on the bus hosts.
 * @throws {@link AgentNotFoundError} when no agent declares it
 * @internal
 */
export function capableRecipient(r: ProcessRunner, capability: string): string {
  const services = r.requireServices();
  const target = services.registry.withCapability(capability)?.name ?? services.bus.transport?.capable(capability);
  if (target === undefined) {
    throw new AgentNotFoundError(capability, `no agent declares capability '${capability}'; add it to an agent's options.capabilities`);
  }
  return target;
}

/**
 * The names `broadcast(pattern)` sends to: every agent but the sender whose
 * name matches the glob `pattern`, also those other runtimes on the bus
 * announced (a name hosted here is not listed twice).
 * @internal
 */
export function broadcastRecipients(r: ProcessRunner, pattern: string): string[] {
  const services = r.requireServices();
  const targets = services.registry.match(pattern).filter((agent) => agent !== r.agent).map((agent) => agent.name);
  for (const name of services.bus.transport?.match(pattern) ?? []) if (services.registry.get(name) === undefined) targets.push(name);
  return targets;
}
