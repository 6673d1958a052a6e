import type { EventEmitter } from "eventemitter3";
import { ApprovalBoard } from "../approvals/approval-board.js";
import { MessageBus } from "../bus/message-bus.js";
import { Registry } from "../bus/registry.js";
import { stderrLogger } from "../logging/logger.js";
import { Telemetry } from "../observability/telemetry.js";
import { InMemoryStateStore } from "../state/in-memory-state-store.js";
import type { StateStore } from "../state/state-store.js";
import { systemClock } from "../time/clock.js";
import type { RuntimeEvents } from "../contracts/runtime-events.js";
import type { RuntimeOptions } from "./runtime-options.js";
import { Scheduler } from "../contracts/scheduler.js";
import type { SupervisedChild } from "../contracts/child.js";
import type { RuntimeServices } from "../contracts/runtime-services.js";
import type { AgentProcess } from "../process/agent-process.js";
import { joiningSimulation } from "./simulation-hooks.js";

/** The fence `store` writes with (a fenced view), stamped on the runtime's receipts; `undefined` when it has none. */
function storeFence(store: StateStore): number | undefined {
  const fence = store.fence;
  return typeof fence === "number" && Number.isSafeInteger(fence) && fence > 0 ? fence : undefined;
}

/**
 * The services of a new runtime, from its (checked) options: the defaults
 * filled in (system clock, stderr logger, an in-memory store, with a warning
 * that it is not durable unless the runtime hosts no agents: an approver-only
 * process has no checkpoints to lose), and the simulation's scheduler and reply gate when
 * the runtime is built inside one. `events` is the runtime; `stopping` is
 * aborted when it begins to stop.
 * @internal
 */
export function createServices(options: RuntimeOptions, events: EventEmitter<RuntimeEvents>, stopping: AbortSignal): RuntimeServices<AgentProcess> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? stderrLogger;
  const registry = new Registry<AgentProcess, SupervisedChild>();
  const store = options.store ?? new InMemoryStateStore();
  const hostsAgents = !Array.isArray(options.root) || options.root.length > 0;
  if (!store.durable && hostsAgents) {
    logger.warn("state store is not durable: checkpoints are lost when this process ends; use SqliteStateStore from civitas-ts/sqlite to keep them");
  }
  const simulation = joiningSimulation();
  const services: RuntimeServices<AgentProcess> = {
    registry,
    bus: new MessageBus(registry, clock, events),
    store,
    clock,
    logger,
    telemetry: new Telemetry(options.tracerProvider, options.auditSink, options.signerId ?? "civitas-runtime", clock, logger, storeFence(store)),
    scheduler: simulation?.scheduler ?? new Scheduler(),
    events,
    authorizeResume: options.authorizeResume,
    approvalPolicy: options.approvalPolicy,
    authorizeApproval: options.authorizeApproval,
    durableBacklog: options.durableBacklog,
    approvals: new ApprovalBoard((view) => {
      try {
        events.emit("approval.changed", view);
      } catch (error) {
        logger.error(`an 'approval.changed' listener threw for approval ${view.approvalId}`, { error });
      }
    }),
    expired: (message) => {
      // Reported from inside an agent loop's dequeue: a listener's bug must not crash the agent.
      try {
        logger.warn(`message ${message.id} to '${message.recipient}' expired after ${message.ttlMs} ms in the mailbox and was discarded`);
        events.emit("message.expired", message);
      } catch (error) {
        logger.error(`a 'message.expired' listener threw for message ${message.id} to '${message.recipient}'`, { error });
      }
    },
    stopping,
    controlSent: { count: 0 },
    putWait: simulation?.putWait,
  };
  if (simulation !== undefined) services.bus.replyGate = simulation.settleReply;
  return services;
}
