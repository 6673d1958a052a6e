import type { Message } from "../message/message.js";
import type { AgentProcess } from "../process/agent-process.js";
import { ErrorAction } from "../process/error-action.js";
import type { ProcessStatus } from "../contracts/process-status.js";

/**
 * The payload key under which {@link LifecycleDriver} puts a message's id.
 * Your agent's `handle` sees it next to the payload you asked for.
 */
export const LIFECYCLE_ID_KEY = "civitas.testing.id";

/** The type of the driver's `crash` messages: the instrumented agent throws, and escalates. */
export const CRASH_MESSAGE_TYPE = "civitas.testing.crash";

/** The type of the driver's `selfSuspend` messages: the instrumented agent calls `this.suspend(reason)`. */
export const SELF_SUSPEND_MESSAGE_TYPE = "civitas.testing.suspend";

/** Thrown by an instrumented agent for a {@link CRASH_MESSAGE_TYPE} message. */
export class InjectedCrash extends Error {
  constructor(readonly id: number) {
    super(`injected crash (message #${id})`);
    this.name = "InjectedCrash";
  }
}

/** What an instrumented agent reports. */
export interface InstrumentHooks {
  /** `handle` was entered for the driver's message `id`. */
  entered(id: number, status: ProcessStatus, incarnation: number): void;
  /** `handle` returned normally for message `id`. */
  completed(id: number): void;
  /** `handle` was entered (any message) or left. */
  busy(delta: 1 | -1): void;
}

/**
 * Wraps `agent.handle` and `agent.onError` (on the instance) so the driver's
 * messages are recorded and its crash and self-suspend messages act, while
 * every business message still reaches the agent's own `handle`. An `ask`
 * the agent does not answer is answered with `{ [LIFECYCLE_ID_KEY]: id }`.
 */
export function instrument(agent: AgentProcess, hooks: InstrumentHooks): void {
  const handle = agent.handle.bind(agent);
  const onError = agent.onError.bind(agent);
  agent.handle = async (message: Message): Promise<Message | void> => {
    hooks.busy(1);
    try {
      const id = message.payload[LIFECYCLE_ID_KEY];
      if (typeof id !== "number") return await handle(message);
      hooks.entered(id, agent.status, agent.incarnation);
      if (message.type === CRASH_MESSAGE_TYPE) throw new InjectedCrash(id);
      if (message.type === SELF_SUSPEND_MESSAGE_TYPE) {
        agent.suspend(typeof message.payload.reason === "string" ? message.payload.reason : "");
        hooks.completed(id);
        return;
      }
      const result = await handle(message);
      hooks.completed(id);
      if (result === undefined && message.replyTo !== undefined) return agent.reply({ [LIFECYCLE_ID_KEY]: id });
      return result;
    } finally {
      hooks.busy(-1);
    }
  };
  agent.onError = async (error: unknown, message: Message): Promise<ErrorAction> => (error instanceof InjectedCrash ? ErrorAction.ESCALATE : onError(error, message));
}
