import { buildMessage } from "../message/message.js";
import { forceMessage } from "../mailbox/mailbox-internals.js";
import { mintControl } from "../process/control-authority.js";
import type { LocalAgent, RuntimeServices } from "../contracts/runtime-services.js";
import type { AgentProcess } from "../process/agent-process.js";
import type { ChildTerminationReason } from "../process/dynamic-host.js";
import type { RestartIntensity } from "./restart-intensity.js";

/**
 * One child of a `DynamicSupervisor`: the agent, who spawned it, and its own
 * restart intensity.
 * @internal
 */
export interface DynamicChild {
  readonly agent: AgentProcess;
  /** The agent that spawned it (the instance: a later agent reusing its name is someone else). */
  readonly spawner: LocalAgent | undefined;
  readonly intensity: RestartIntensity;
  /**
   * The removal in flight, set before its first await: from then on no
   * restart may bring the agent back, and a second despawn joins this one.
   */
  removal?: Promise<void>;
  /** Cancels the restart backoff it is waiting out, if any: a removal wins over a pending restart. */
  backoff?: AbortController;
}

/**
 * Keeps `promise` in `set` until it settles (fulfilled or rejected).
 * @internal
 */
export function track(set: Set<Promise<void>>, promise: Promise<void>): void {
  set.add(promise);
  const forget = (): void => {
    set.delete(promise);
  };
  promise.then(forget, forget);
}

/**
 * Tells the agent that spawned `child` (an `_agency.deregister` from
 * `supervisor`, on its priority lane) that the child is gone for good, and why.
 * @internal
 */
export function notifySpawner(child: DynamicChild, reason: ChildTerminationReason, supervisor: string, services: RuntimeServices): void {
  const spawner = child.spawner;
  if (spawner === undefined) return;
  // Only to that spawner, while it is still registered: never to a new agent that took its name.
  if (services.registry.get(spawner.name) !== spawner || spawner.mailbox.closed) return;
  forceMessage(
    spawner.mailbox,
    mintControl(buildMessage({
      sender: supervisor,
      recipient: spawner.name,
      type: "_agency.deregister",
      priority: 0,
      payload: { name: child.agent.name, reason },
      timestamp: services.clock.now(),
    })),
  );
}
