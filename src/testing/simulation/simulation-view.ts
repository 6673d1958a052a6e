import { AgentNotFoundError } from "../../errors/errors.js";
import { copyJson } from "../../message/json.js";
import type { AgentProcess } from "../../process/agent-process.js";
import type { Runtime } from "../../runtime/runtime.js";
import type { AuditLog } from "./simulated-audit-sink.js";
import type { SimulatedClock } from "./simulated-clock.js";
import type { DurableData } from "./simulated-store.js";
import type { SimulationView } from "./types.js";

/** Read access to a simulation's system: its current runtime, store, audit log and clock. */
export class EngineView implements SimulationView {
  constructor(
    private readonly runtime: () => Runtime | undefined,
    private readonly data: DurableData,
    private readonly log: AuditLog,
    private readonly clock: SimulatedClock,
    /** The view of another node, by name (the engine's lookup). */
    private readonly nodes: (name: string) => SimulationView,
  ) {}

  node(name: string): SimulationView {
    return this.nodes(name);
  }

  agent<A extends AgentProcess = AgentProcess>(name: string): A {
    const agent = this.runtime()?.getAgent(name);
    if (agent === undefined) throw new AgentNotFoundError(name, `the simulation has no agent named '${name}'; check the name (after a kill, the agents are those root() built again)`);
    return agent as A;
  }

  status(name: string): ReturnType<SimulationView["status"]> {
    return this.runtime()?.getAgent(name)?.status;
  }

  stored(name: string): ReturnType<SimulationView["stored"]> {
    const state = this.data.visible.get(name);
    return state === undefined ? undefined : copyJson(state);
  }

  get audit(): SimulationView["audit"] {
    return this.log.acknowledged;
  }

  get now(): number {
    return this.clock.now();
  }
}
