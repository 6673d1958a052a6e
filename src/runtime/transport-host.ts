import { notFound } from "../bus/message-bus.js";
import type { ControlOperation, Transport, TransportHost } from "../bus/transport.js";
import type { JsonObject } from "../message/json.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { RuntimeServices } from "./services.js";

/** The runtime's public control calls, as the transport host uses them for requests from other runtimes. */
interface RuntimeControl {
  suspend(name: string, reason: string, options: { timeoutMs?: number; expiresInMs?: number }): Promise<void>;
  resume(name: string, approver: string, options: { timeoutMs?: number; suspensionId?: string; acceptIdentityChange?: boolean }): Promise<void>;
  deny(name: string, decider: string, options: { timeoutMs?: number; suspensionId?: string; reason?: string }): Promise<void>;
  getAgent(name: string): AgentProcess | undefined;
}

/**
 * Connects a runtime's bus and registry to its transport: what is not local
 * goes to the transport, agents joining and leaving are announced, what
 * arrives from the bus is delivered like any other message, and control
 * requests from other runtimes go through the runtime's own public calls
 * (so they are checked, authorized and receipted here).
 * @internal
 */
export function attachTransport(transport: Transport, services: RuntimeServices, runtime: RuntimeControl): TransportHost {
  services.bus.transport = transport;
  services.registry.watcher = {
    added: (agent) => transport.added({ name: agent.name, capabilities: agent.capabilities }),
    removed: (name) => transport.removed(name),
  };
  return {
    deliver: (message) => services.bus.deliver(message),
    settleReply: (reply) => services.bus.settleReply(reply),
    control: (name, operation, args, timeoutMs) => localControl(runtime, name, operation, args, timeoutMs),
    agents: () => services.registry.all().map((agent) => ({ name: agent.name, capabilities: agent.capabilities })),
    logger: services.logger,
  };
}

async function localControl(runtime: RuntimeControl, name: string, operation: ControlOperation, args: JsonObject, timeoutMs: number): Promise<JsonObject> {
  const agent = runtime.getAgent(name);
  // Only an agent of this runtime: a request is never passed on to a third one.
  if (agent === undefined) throw notFound(name);
  if (operation === "status") {
    const marker = agent.suspension;
    return { status: agent.status, suspensionId: marker?.suspensionId ?? null, reason: marker?.reason ?? null, since: marker?.since ?? null };
  }
  if (operation === "suspend") {
    // Checked by runtime.suspend like a local call's arguments (INVALID_ARGUMENT goes back by its code).
    await runtime.suspend(name, args.reason as string, args.expiresInMs === undefined ? { timeoutMs } : { timeoutMs, expiresInMs: args.expiresInMs as number });
    return {};
  }
  if (args.decision === "deny") {
    const options: { timeoutMs: number; suspensionId?: string; reason?: string } = { timeoutMs };
    if (args.suspensionId !== undefined) options.suspensionId = args.suspensionId as string;
    if (args.reason !== undefined) options.reason = args.reason as string;
    await runtime.deny(name, args.approver as string, options);
    return {};
  }
  const options: { timeoutMs: number; suspensionId?: string; acceptIdentityChange?: boolean } = { timeoutMs };
  if (args.suspensionId !== undefined) options.suspensionId = args.suspensionId as string;
  if (args.acceptIdentityChange === true) options.acceptIdentityChange = true;
  await runtime.resume(name, args.approver as string, options);
  return {};
}
