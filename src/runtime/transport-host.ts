import { notFound } from "../bus/message-bus.js";
import type { ControlOperation, Transport, TransportHost } from "../bus/transport.js";
import { CivitasError } from "../errors/civitas-error.js";
import type { JsonObject } from "../message/json.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { Pause } from "../process/pause.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import { answerApproval, type ApprovalCalls } from "./remote-approvals.js";

/** The runtime's public control calls, as the transport host uses them for requests from other runtimes. */
interface RuntimeControl {
  suspend(name: string, reason: string, options: { timeoutMs?: number; expiresInMs?: number }): Promise<Pause>;
  resume(name: string, approver: string, options: { timeoutMs?: number; suspensionId?: string; acceptIdentityChange?: boolean }): Promise<void>;
  deny(name: string, decider: string, options: { timeoutMs?: number; suspensionId?: string; reason?: string }): Promise<void>;
  getAgent(name: string): AgentProcess | undefined;
  readonly approvals: ApprovalCalls;
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
    control: (name, operation, args, timeoutMs) =>
      operation === "approval" ? answerApproval(services, runtime.approvals, name, args, timeoutMs) : localControl(runtime, name, operation, args, timeoutMs).catch((error: unknown) => recordedOutcome(services, name, args, error)),
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
    // The requester's runtime.suspend resolves with the pause (see remoteAnswer in runtime-control.ts).
    const pause = await runtime.suspend(name, args.reason as string, args.expiresInMs === undefined ? { timeoutMs } : { timeoutMs, expiresInMs: args.expiresInMs as number });
    return { ...pause };
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

/**
 * A retried resume or deny from another runtime (flagged `retry` by its
 * requester after an attempt got no answer) whose first attempt took
 * effect, and whose answer was lost with the owner's memory of it (the
 * owner's process ended, and its control server forgot the request ids it
 * answered): its pause is settled, so the retry is refused with
 * `STALE_APPROVAL`. When the audit log holds that very decision for the
 * pause it names — the same kind, by the same approver or decider — the
 * recorded outcome is the answer, not a spurious `STALE_APPROVAL`. Anything
 * else is refused as it was. (Found under simulation of the bus: a kill
 * after the resume and before its answer reached the requester.)
 */
async function recordedOutcome(services: RuntimeServices, name: string, args: JsonObject, error: unknown): Promise<JsonObject> {
  const suspensionId = args.suspensionId;
  if (args.retry !== true || !(error instanceof CivitasError) || error.code !== "STALE_APPROVAL" || typeof suspensionId !== "string") throw error;
  const recorded = await services.telemetry.recordedSettlement(name, suspensionId);
  const deny = args.decision === "deny";
  const same = deny ? recorded?.event === "agent.deny" && recorded.details.decider === args.approver : recorded?.event === "agent.resume" && recorded.details.approver === args.approver;
  if (!same) throw error;
  return {};
}
