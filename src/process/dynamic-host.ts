import type { JsonObject } from "../message/json.js";
import type { AgentProcessOptions } from "./agent-options.js";
import type { AgentProcess } from "./agent-process.js";
import type { StopOptions } from "../contracts/child.js";

/**
 * Any agent, whatever its state type: what a factory (`spawn`) may build.
 * (`AgentProcess` alone means `AgentProcess<JsonObject>`, which an agent with
 * an `interface` state is not: its state has no index signature.)
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the state type is the subclass's own; `any` admits every JsonPayload
export type AnyAgentProcess = AgentProcess<any>;

/** Why a dynamically spawned agent is gone for good, as told to its spawner. */
export type ChildTerminationReason = "despawned" | "restarts_exhausted" | "clean_exit";

/** Options handed to a spawned agent's constructor (or factory). */
export type SpawnOptions = JsonObject & AgentProcessOptions;

/**
 * How to make a spawned agent: an `AgentProcess` subclass (called as
 * `new Class(name, options)`) or a factory function `(name, options) => agent`.
 */
export type AgentFactory<A extends AnyAgentProcess = AgentProcess> =
  | (new (name: string, options?: SpawnOptions) => A)
  | ((name: string, options?: SpawnOptions) => A);

/**
 * What an agent's parent offers when it is a `DynamicSupervisor`.
 * @internal
 */
export interface DynamicHost {
  spawn<A extends AnyAgentProcess>(factory: AgentFactory<A>, name: string, options?: SpawnOptions, spawner?: string): Promise<A>;
  despawn(name: string): Promise<void>;
  stop(name: string, options?: StopOptions): Promise<void>;
}

/** Whether `parent` can spawn for its children. @internal */
export function isDynamicHost(parent: object): parent is DynamicHost {
  return typeof (parent as Partial<DynamicHost>).spawn === "function" && typeof (parent as Partial<DynamicHost>).despawn === "function";
}
