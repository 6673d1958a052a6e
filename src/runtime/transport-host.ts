import type { Transport, TransportHost } from "../bus/transport.js";
import type { RuntimeServices } from "./services.js";

/**
 * Connects a runtime's bus and registry to its transport: what is not local
 * goes to the transport, agents joining and leaving are announced, and what
 * arrives from the bus is delivered like any other message.
 * @internal
 */
export function attachTransport(transport: Transport, services: RuntimeServices): TransportHost {
  services.bus.transport = transport;
  services.registry.watcher = {
    added: (agent) => transport.added({ name: agent.name, capabilities: agent.capabilities }),
    removed: (name) => transport.removed(name),
  };
  return {
    deliver: (message) => services.bus.deliver(message),
    settleReply: (reply) => services.bus.settleReply(reply),
    agents: () => services.registry.all().map((agent) => ({ name: agent.name, capabilities: agent.capabilities })),
    logger: services.logger,
  };
}
